package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
)

// logTailTimeout bounds one log read: a node that does not answer must not
// hold the job's pass (the kept tail is then empty or the termination
// message).
const logTailTimeout = 5 * time.Second

// captureLogTails reads the log tail of every replica the plan asks for and
// writes it into the plan's status before the status is saved, so that it
// outlives the pod. A read that fails leaves the termination message in
// its place: the pods run with FallbackToLogsOnError, so for a failed
// container without a termination message file the kubelet already put
// the log's end there. The pass carries on either way.
func (w *Worker) captureLogTails(ctx context.Context, p *pass, plan *job.PlanResult) {
	var wg sync.WaitGroup
	for _, a := range plan.Actions {
		if a.Kind != job.ActCaptureLogTail {
			continue
		}
		t := terminationOf(&plan.Status, a)
		if t == nil {
			continue
		}
		ns := p.ns
		if pod := p.objs.pods[a.Pod]; pod != nil {
			ns = pod.Namespace
		}
		wg.Go(func() {
			tail, err := w.logTail(ctx, ns, a.Pod)
			if err != nil {
				w.log.Debug("log tail unavailable; keeping the termination message instead", "job", p.key, "pod", a.Pod, "error", err)
				tail = t.Message
			}
			t.LogTail = tail
		})
	}
	wg.Wait()
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
	rc, err := w.kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{
		Container: kube.ContainerName, TailLines: &lines, LimitBytes: &limit,
	}).Stream(ctx)
	w.count("get", "pods/log", err)
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

// act runs the plan's Kubernetes actions: every create of the pass at
// once (bounded), then every delete at once. Plan never asks, in one pass,
// to create a pod under a name whose old pod it deletes, so the two groups
// are independent; creates go first because they are what the user waits
// for. AlreadyExists on create is adoption (names are deterministic),
// NotFound on delete is success. The error is the first terminal one if
// any (the job fails), else all retryable ones joined.
func (w *Worker) act(ctx context.Context, p *pass, actions []job.Action) error {
	var creates, deletes []func(context.Context) error
	for _, a := range actions {
		switch a.Kind {
		case job.ActCreateService:
			creates = append(creates, func(ctx context.Context) error { return w.createService(ctx, p) })
		case job.ActCreatePod:
			creates = append(creates, func(ctx context.Context) error { return w.createPod(ctx, p, a) })
		case job.ActCreateTensorBoard:
			creates = append(creates, func(ctx context.Context) error { return w.createTensorBoard(ctx, p) })
		case job.ActDeletePod:
			deletes = append(deletes, func(ctx context.Context) error { return w.deletePod(ctx, p, a.Pod) })
		case job.ActDeleteService:
			deletes = append(deletes, func(ctx context.Context) error {
				return w.deleteService(ctx, p, p.objs.svc, job.ServiceName(p.wj.Job.Name))
			})
		case job.ActDeleteTensorBoard:
			deletes = append(deletes, func(ctx context.Context) error { return w.deleteTensorBoard(ctx, p) })
		}
	}
	if err := w.parallel(ctx, creates); err != nil {
		return err
	}
	return w.parallel(ctx, deletes)
}

// parallel runs fns with at most CreateParallelism at a time.
func (w *Worker) parallel(ctx context.Context, fns []func(context.Context) error) error {
	if len(fns) == 1 {
		return fns[0](ctx)
	}
	errs := make([]error, len(fns))
	sem := make(chan struct{}, w.cfg.CreateParallelism)
	var wg sync.WaitGroup
	for i, fn := range fns {
		sem <- struct{}{}
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

func (w *Worker) createService(ctx context.Context, p *pass) error {
	return w.createServiceObject(ctx, p, kube.RenderService(p.wj.Job, p.ns))
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
	return w.create(p, "pod", pod.Namespace, pod.Name, w.cachedPodUID, func() error {
		_, err := w.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}

func (w *Worker) createServiceObject(ctx context.Context, p *pass, svc *corev1.Service) error {
	return w.create(p, "service", svc.Namespace, svc.Name, w.cachedServiceUID, func() error {
		_, err := w.kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
		return err
	})
}

// create runs the create call of a pod or Service, unless a create of it
// is still awaited from an earlier pass (expectations.go). AlreadyExists is
// adoption (see adopt).
func (w *Worker) create(p *pass, kind, ns, name string, jobUIDOf func(ns, name string) (string, bool), call func() error) error {
	key := createKey(kind, ns, name)
	if w.expect.pending(key) {
		return nil
	}
	w.expect.expect(key)
	err := call()
	w.count("create", kind+"s", err)
	if apierrors.IsAlreadyExists(err) {
		err = w.adopt(p, kind, ns, name, jobUIDOf)
	}
	if err != nil {
		w.expect.observed(key)
	}
	return err
}

// adopt accepts an object that already exists under the name Trainyard
// wanted: it is this job's, created by an earlier pass or a worker that
// crashed. Unless the cache shows it belongs to another job — a job of the
// same name deleted moments ago whose objects are still going away — then
// the create is retried with backoff until the name is free.
func (w *Worker) adopt(p *pass, kind, ns, name string, jobUIDOf func(ns, name string) (string, bool)) error {
	if uid, ok := jobUIDOf(ns, name); ok && uid != p.key.UID {
		return fmt.Errorf("%s %s/%s belongs to another job (uid %s) that is still being cleaned up; waiting for the name to be free", kind, ns, name, uid)
	}
	return nil
}

func (w *Worker) cachedPodUID(ns, name string) (string, bool) {
	pod, err := w.podLister.Pods(ns).Get(name)
	if err != nil {
		return "", false
	}
	return pod.Labels[kube.LabelJobUID], true
}

func (w *Worker) cachedServiceUID(ns, name string) (string, bool) {
	svc, err := w.svcLister.Services(ns).Get(name)
	if err != nil {
		return "", false
	}
	return svc.Labels[kube.LabelJobUID], true
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

func (w *Worker) deleteService(ctx context.Context, p *pass, svc *corev1.Service, name string) error {
	if svc == nil {
		return nil
	}
	return w.deleteObject(ctx, "services", svc.Namespace, name, svc.UID)
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

// deleteObject deletes a pod or Service with a UID precondition, in the
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
	w.expect.expect(key)
	var err error
	switch resource {
	case "pods":
		err = w.kube.CoreV1().Pods(ns).Delete(ctx, name, opts)
	case "services":
		err = w.kube.CoreV1().Services(ns).Delete(ctx, name, opts)
	}
	w.count("delete", resource, err)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		w.expect.observed(key)
	}
	return err
}

// count records an API call and, when it failed for real, its error.
func (w *Worker) count(verb, resource string, err error) {
	w.metrics.kubeRequests.WithLabelValues(verb, resource).Inc()
	if err == nil || (verb == "create" && apierrors.IsAlreadyExists(err)) || (verb == "delete" && apierrors.IsNotFound(err)) {
		return
	}
	w.metrics.kubeErrors.WithLabelValues(verb, resource, kube.Reason(err)).Inc()
}

// isTerminal is kube.IsTerminal with one more transient Forbidden: the
// ServiceAccount admission plugin refuses pods while the tenant's job
// ServiceAccount does not exist yet, which is a namespace still being
// provisioned, not a job that can never run.
func isTerminal(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsForbidden(err) && strings.Contains(kube.Message(err), "error looking up service account") {
		return false
	}
	return kube.IsTerminal(err)
}
