package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
)

// logTailTimeout bounds one log read: a node that does not answer must not
// hold the job's pass (the kept tail is then empty or the termination
// message).
const logTailTimeout = 5 * time.Second

// Bounds on log tails, so that a job whose 2,000 replicas fail at once
// costs neither 2,000 log reads in one pass nor megabytes of status:
const (
	// MaxLogTailsPerPass: a pass reads at most this many tails (in the
	// plan's order: chief, workers, PS, evaluator, by index). The
	// terminations it records beyond them keep exit code, reason and
	// termination message, without a tail.
	MaxLogTailsPerPass = 16
	// MaxLogTailBytesPerJob bounds the tails kept in one job's status
	// together (each is at most Config.LogTailBytes). Once it is used up,
	// further terminations are recorded without a tail; a tail replaced by a
	// newer termination of its replica gives its share back.
	MaxLogTailBytesPerJob = 128 << 10
)

// captureLogTails reads the log tail of the replicas the plan asks for and
// writes it into the plan's status before the status is saved, so that it
// outlives the pod. Reads run CreateParallelism at a time, for at most
// MaxLogTailsPerPass replicas and MaxLogTailBytesPerJob bytes. A read that
// fails leaves the termination message in its place: the pods run with
// FallbackToLogsOnError, so for a failed container without a termination
// message file the kubelet already put the log's end there. The pass
// carries on either way.
func (w *Worker) captureLogTails(ctx context.Context, p *pass, plan *job.PlanResult) {
	type capture struct {
		t     *job.Termination
		ns    string
		pod   string
		limit int
	}
	var todo []capture
	targets := map[*job.Termination]bool{}
	for _, a := range plan.Actions {
		if a.Kind != job.ActCaptureLogTail {
			continue
		}
		t := terminationOf(&plan.Status, a)
		if t == nil || targets[t] {
			continue
		}
		targets[t] = true
		ns := p.ns
		if pod := p.objs.pods[a.Pod]; pod != nil {
			ns = pod.Namespace
		}
		todo = append(todo, capture{t: t, ns: ns, pod: a.Pod})
	}
	if len(todo) == 0 {
		return
	}
	budget := MaxLogTailBytesPerJob
	for _, r := range plan.Status.Replicas {
		if t := r.LastTermination; t != nil && !targets[t] {
			budget -= len(t.LogTail)
		}
	}
	var reads []capture
	for i, c := range todo {
		if i >= MaxLogTailsPerPass || budget <= 0 {
			continue
		}
		c.limit = int(min(w.cfg.LogTailBytes, int64(budget)))
		budget -= c.limit
		reads = append(reads, c)
	}
	if skipped := len(todo) - len(reads); skipped > 0 {
		w.log.Info("log tails not kept: too many replicas ended at once, or the job's tails are at their size limit",
			"job", p.key, "skipped", skipped, "read", len(reads))
	}
	sem := make(chan struct{}, w.cfg.CreateParallelism)
	var wg sync.WaitGroup
	for _, c := range reads {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			tail, err := w.logTail(ctx, c.ns, c.pod)
			if err != nil {
				w.log.Debug("log tail unavailable; keeping the termination message instead", "job", p.key, "pod", c.pod, "error", err)
				tail = c.t.Message
			}
			c.t.LogTail = lastBytes(tail, c.limit)
		})
	}
	wg.Wait()
}

// lastBytes keeps the end of s, at most n bytes, cut at a rune boundary.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for i := 0; i < len(s) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(s[i]) {
			return s[i:]
		}
	}
	return strings.ToValidUTF8(s, "")
}

// terminationOf finds the termination a CaptureLogTail action is for.
func terminationOf(st *job.Status, a job.Action) *job.Termination {
	for i := range st.Replicas {
		r := &st.Replicas[i]
		if r.Pod == a.Pod && r.LastTermination != nil && r.LastTermination.Attempt == a.Attempt {
			return r.LastTermination
		}
	}
	return nil
}

func (w *Worker) logTail(ctx context.Context, ns, pod string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, logTailTimeout)
	defer cancel()
	lines, limit := w.cfg.LogTailLines, w.cfg.LogTailBytes
	start := time.Now()
	rc, err := w.kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{
		Container: kube.ContainerName, TailLines: &lines, LimitBytes: &limit,
	}).Stream(ctx)
	w.count("get", "pods/log", start, err)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit))
	if err != nil {
		return "", err
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// act runs the plan's Kubernetes actions in three groups, each at once
// (bounded): the pod creates, then the other creates (TensorBoard), then
// the deletes. Plan never asks, in one pass, to create a pod under a name
// whose old pod it deletes, so the groups are independent; they run in
// that order because the pods are what the user and the kube-scheduler
// wait for. (The job's EndpointSlice is the slice controller's: package
// endpoints.) AlreadyExists on create is adoption (names are deterministic),
// NotFound on delete is success. The error is the first terminal one if
// any (the job fails), else all retryable ones joined.
//
// Kubernetes calls are not fenced, so act stops once the job's lease is no
// longer certainly live: ctx ends then (leaseContext), and no call starts
// without the lease having a margin left. Creates are throttled by the
// client's QPS: a job of 2,048 pods takes seconds to create, as long as a
// lease, and a worker that stalled must not go on creating pods for a job
// another worker owns by now.
func (w *Worker) act(ctx context.Context, p *pass, actions []job.Action) error {
	var pods, creates, deletes []func(context.Context) error
	for _, a := range actions {
		switch a.Kind {
		case job.ActCreatePod:
			pods = append(pods, func(ctx context.Context) error { return w.createPod(ctx, p, a) })
		case job.ActCreateTensorBoard:
			creates = append(creates, func(ctx context.Context) error { return w.createTensorBoard(ctx, p) })
		case job.ActDeletePod:
			deletes = append(deletes, func(ctx context.Context) error { return w.deletePod(ctx, p, a.Pod) })
		case job.ActDeleteTensorBoard:
			deletes = append(deletes, func(ctx context.Context) error { return w.deleteTensorBoard(ctx, p) })
		}
	}
	if len(pods)+len(creates)+len(deletes) == 0 {
		return nil
	}
	ctx, stop := w.leaseContext(ctx, p.key)
	defer stop()
	leased := func() error {
		if !w.own.Leased(p.key, time.Now(), w.cfg.LeaseTTL/10) {
			return errLeaseEnding
		}
		return nil
	}
	var err error
	for _, group := range [][]func(context.Context) error{pods, creates, deletes} {
		if err = w.parallel(ctx, group, leased); err != nil {
			break
		}
	}
	if err != nil && !isTerminal(err) && (errors.Is(err, errLeaseEnding) || errors.Is(context.Cause(ctx), errLeaseEnding)) {
		return errorf(errReasonLease, fmt.Errorf("job %s: %w", p.key, errLeaseEnding))
	}
	return err
}

// errLeaseEnding stops a pass's Kubernetes calls.
var errLeaseEnding = errors.New("the lease is not certainly live any more; stopped acting")

// leaseContext returns a context that ends when the job's lease, by the
// local estimate (which renewals push back), runs out.
func (w *Worker) leaseContext(ctx context.Context, k store.JobKey) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	var (
		mu      sync.Mutex
		timer   *time.Timer
		stopped bool
	)
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		until, ok := w.own.Until(k)
		if left := time.Until(until); ok && left > 0 {
			timer.Reset(left)
			return
		}
		cancel(errLeaseEnding)
	}
	mu.Lock()
	until, _ := w.own.Until(k)
	timer = time.AfterFunc(max(time.Until(until), 0), check)
	mu.Unlock()
	return ctx, func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
		cancel(nil)
	}
}

// parallel runs fns with at most CreateParallelism at a time. No call
// starts once ctx ended or guard fails.
func (w *Worker) parallel(ctx context.Context, fns []func(context.Context) error, guard func() error) error {
	if guard == nil {
		guard = func() error { return nil }
	}
	errs := make([]error, len(fns))
	sem := make(chan struct{}, w.cfg.CreateParallelism)
	var wg sync.WaitGroup
	for i, fn := range fns {
		sem <- struct{}{}
		if err := cmp.Or(context.Cause(ctx), guard()); err != nil {
			<-sem
			errs[i] = err
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(ctx)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if isTerminal(err) {
			return err
		}
	}
	return errors.Join(errs...)
}

func (w *Worker) createPod(ctx context.Context, p *pass, a job.Action) error {
	pod, err := kube.RenderPod(p.wj.Job, p.ns, a.Type, a.Index, a.Attempt, w.cfg.PodOptions)
	if err != nil {
		return err
	}
	return w.createPodObject(ctx, p, pod)
}

func (w *Worker) createTensorBoard(ctx context.Context, p *pass) error {
	pod, svc := kube.RenderTensorBoard(p.wj.Job, p.ns, w.cfg.PodOptions)
	if pod == nil {
		return nil
	}
	if p.objs.tbPod == nil {
		if err := w.createPodObject(ctx, p, pod); err != nil {
			return err
		}
	}
	if p.objs.tbSvc == nil {
		return w.createServiceObject(ctx, p, svc)
	}
	return nil
}

func (w *Worker) createPodObject(ctx context.Context, p *pass, pod *corev1.Pod) error {
	return w.create(ctx, p, "pod", pod.Namespace, pod.Name, func() error {
		_, err := w.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}

func (w *Worker) createServiceObject(ctx context.Context, p *pass, svc *corev1.Service) error {
	return w.create(ctx, p, "service", svc.Namespace, svc.Name, func() error {
		_, err := w.kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
		return err
	})
}

// create runs the create call of a pod or Service, unless a create of it
// is still awaited from an earlier pass (expectations.go). AlreadyExists is
// adoption (see adopt).
func (w *Worker) create(ctx context.Context, p *pass, kind, ns, name string, call func() error) error {
	key := createKey(kind, ns, name)
	if w.expect.pending(key) {
		return nil
	}
	// The informer may have delivered the object since the pass read the
	// cache (its event cleared the expectation of an earlier pass's
	// create): adopt it from the cache instead of asking for an
	// AlreadyExists.
	if w.cached(kind, ns, name) != nil {
		_, err := w.adopt(ctx, p, kind, ns, name)
		return err
	}
	w.expect.expect(key, p.key.UID)
	start := time.Now()
	err := call()
	w.count("create", kind+"s", start, err)
	if apierrors.IsAlreadyExists(err) {
		var cached bool
		cached, err = w.adopt(ctx, p, kind, ns, name)
		if cached {
			// No informer event is coming for what the cache already shows.
			w.expect.observed(key)
		}
	}
	if err != nil {
		w.expect.observed(key)
	}
	return err
}

// ReasonNameConflict fails a job whose object name is taken by an object
// Trainyard did not create.
const ReasonNameConflict = "NameConflict"

// nameConflictError: the name Trainyard wanted is held by an object that
// is not Trainyard's. Terminal: waiting will not free it.
type nameConflictError struct{ kind, ns, name string }

func (e *nameConflictError) Error() string {
	return fmt.Sprintf("%s %q already exists in namespace %s and was not created by Trainyard; "+
		"delete it or submit the job under another id", e.kind, e.name, e.ns)
}

// adopt accepts an object that already exists under the name Trainyard
// wanted when it is this job's: created by an earlier pass or a worker
// that crashed. Whose it is comes from the cache when the cache has it,
// else from the API server (the cache may not show it yet, or never: it
// holds only Trainyard's objects). An object of another Trainyard job — a
// job of the same name deleted moments ago whose objects are still going
// away — makes the create retry with backoff until the name is free (the
// orphan sweep removes what no job owns any more). An object that is not
// Trainyard's at all fails the job: NameConflict.
func (w *Worker) adopt(ctx context.Context, p *pass, kind, ns, name string) (cached bool, err error) {
	obj := w.cached(kind, ns, name)
	cached = obj != nil
	if obj == nil {
		obj, err = w.getLive(ctx, kind, ns, name)
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("%s %s/%s already existed, and is gone now; creating it again", kind, ns, name)
		}
		if err != nil {
			return false, err
		}
	}
	l := obj.GetLabels()
	switch {
	case l[kube.LabelManagedBy] != kube.ManagedByValue || l[kube.LabelJobUID] == "":
		return cached, &nameConflictError{kind: kind, ns: ns, name: name}
	case l[kube.LabelJobUID] != p.key.UID:
		return cached, fmt.Errorf("%s %s/%s belongs to another job (uid %s) that is still being cleaned up; waiting for the name to be free",
			kind, ns, name, l[kube.LabelJobUID])
	}
	return cached, nil
}

// getLive reads a pod or Service from the API server, by name.
func (w *Worker) getLive(ctx context.Context, kind, ns, name string) (metav1.Object, error) {
	var (
		obj metav1.Object
		err error
	)
	start := time.Now()
	switch kind {
	case "pod":
		obj, err = w.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	case "service":
		obj, err = w.kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	default:
		return nil, fmt.Errorf("worker: no live read of %q", kind)
	}
	w.count("get", kind+"s", start, err)
	return obj, err
}

// cached is the pod or Service of that name the informer cache holds, or
// nil.
func (w *Worker) cached(kind, ns, name string) metav1.Object {
	switch kind {
	case "pod":
		if pod, err := w.podLister.Pods(ns).Get(name); err == nil {
			return pod
		}
	case "service":
		if svc, err := w.svcLister.Services(ns).Get(name); err == nil {
			return svc
		}
	}
	return nil
}

// deletePod deletes a replica pod on the condition that it is the pod the
// cache showed (its UID): a pod recreated under the same name since — a
// newer attempt — is never deleted by a decision about the old one.
func (w *Worker) deletePod(ctx context.Context, p *pass, name string) error {
	pod := p.objs.pods[name]
	if pod == nil {
		return nil
	}
	return w.deleteObject(ctx, "pods", pod.Namespace, name, pod.UID)
}

func (w *Worker) deleteTensorBoard(ctx context.Context, p *pass) error {
	name := job.TensorBoardName(p.wj.Job.Name)
	var errs []error
	if pod := p.objs.tbPod; pod != nil && pod.DeletionTimestamp == nil {
		errs = append(errs, w.deleteObject(ctx, "pods", pod.Namespace, name, pod.UID))
	}
	if svc := p.objs.tbSvc; svc != nil {
		errs = append(errs, w.deleteObject(ctx, "services", svc.Namespace, name, svc.UID))
	}
	return errors.Join(errs...)
}

// deleteObject deletes a pod, Service or EndpointSlice with a UID precondition, in the
// background (dependents, if any, go on their own). NotFound and a failed
// precondition (the name now holds a newer object) are success.
func (w *Worker) deleteObject(ctx context.Context, resource, ns, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}
	key := deleteKey(ns + "/" + name)
	if uid != "" {
		key = deleteKey(string(uid))
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	if w.expect.pending(key) {
		return nil
	}
	w.expect.expect(key, "")
	var err error
	start := time.Now()
	switch resource {
	case "pods":
		err = w.kube.CoreV1().Pods(ns).Delete(ctx, name, opts)
	case "services":
		err = w.kube.CoreV1().Services(ns).Delete(ctx, name, opts)
	case "endpointslices":
		err = w.kube.DiscoveryV1().EndpointSlices(ns).Delete(ctx, name, opts)
	default:
		err = fmt.Errorf("worker: no delete of %q", resource)
	}
	w.count("delete", resource, start, err)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		w.expect.observed(key)
	}
	return err
}

// count records an API call and, when it failed for real, its error.
func (w *Worker) count(verb, resource string, start time.Time, err error) {
	w.metrics.kubeRequests.WithLabelValues(verb, resource).Inc()
	w.metrics.kubeSeconds.WithLabelValues(verb, resource).Observe(time.Since(start).Seconds())
	if err == nil || (verb == "create" && apierrors.IsAlreadyExists(err)) || (verb == "delete" && apierrors.IsNotFound(err)) {
		return
	}
	w.metrics.kubeErrors.WithLabelValues(verb, resource, kube.Reason(err)).Inc()
}

// isTerminal is kube.IsTerminal, and a name held by an object that is not
// Trainyard's (NameConflict): retrying cannot free it.
func isTerminal(err error) bool {
	if _, ok := errors.AsType[*nameConflictError](err); ok {
		return true
	}
	return kube.IsTerminal(err)
}
