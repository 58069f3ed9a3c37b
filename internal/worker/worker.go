package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/trainyard/trainyard/internal/controller"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/worker/endpoints"
	"github.com/trainyard/trainyard/internal/worker/ownership"
)

// Worker runs the jobs it owns on Kubernetes. Build it with New, then Run.
type Worker struct {
	cfg     Config
	log     *slog.Logger
	store   Store
	kube    kubernetes.Interface
	metrics *metrics

	loop      *controller.Loop[store.JobKey]
	queue     workqueue.TypedRateLimitingInterface[store.JobKey] // the loop's
	factory   informers.SharedInformerFactory
	pods      cache.SharedIndexInformer
	services  cache.SharedIndexInformer
	endpoints cache.SharedIndexInformer // the jobs' EndpointSlices (the slice controller's)
	// podFactory holds the pod informer (Config.Pods or the worker's own).
	podFactory informers.SharedInformerFactory
	podLister  listerscorev1.PodLister
	svcLister  listerscorev1.ServiceLister

	own    *ownership.Set
	expect *expectations
	// batches holds the jobs whose pod events wait for their pass
	// (podEventBatch, podEventLazy).
	batches *batches
	// slices writes the jobs' EndpointSlices while this process leads
	// (package endpoints, LeadEndpoints).
	slices  *endpoints.Controller
	tenants *tenantCache
	// keeper claims jobs into own and renews their lease (leases.go).
	keeper *ownership.Keeper

	synced atomic.Bool // informer caches synced: reconciles may run

	metricsSince sync.Map // job uid → time.Time its trial log was last read from
	// notified counts what may have made a row a claim returned stale
	// before its first pass: notifications of a job (any job: the worker
	// may not own it yet) and reconnects of the listener (stashGuard).
	notified atomic.Int64
}

// indexJobUID indexes pods and services by "<namespace>/<job uid label>"
// (jobIndexKey): a job's objects are those with its uid in its tenant's
// namespace.
const indexJobUID = "trainyard-job-uid"

func jobIndexKey(ns, uid string) string { return ns + "/" + uid }

// New builds a Worker: its queue, metrics and informers (not started).
func New(cfg Config) (*Worker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := &Worker{
		cfg:     cfg,
		log:     cfg.Logger.With("worker", cfg.ID),
		store:   cfg.Store,
		kube:    cfg.Kube,
		own:     ownership.NewSet(),
		expect:  newExpectations(30 * time.Second),
		tenants: newTenantCache(cfg.Store, 30*time.Second),
	}
	w.metrics = newMetrics(cfg.Registry, w)
	w.keeper = w.newKeeper()
	w.loop = controller.New(controller.Config[store.JobKey]{
		Name: "jobs",
		// Per job: 50ms doubling to a minute. No overall bucket: one
		// tenant's failing jobs must not slow every other job's retries.
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[store.JobKey](50*time.Millisecond, time.Minute),
		Sync:        w.sync,
		Metrics:     w.metrics.queue,
		Duration:    w.metrics.reconcileSeconds,
		OnError:     w.syncFailed,
		Urgent:      w.own.Unstarted,
	})
	w.queue = w.loop.Queue()
	w.batches = newBatches(func(k store.JobKey) { w.queue.Add(k) })

	// Only Trainyard's Services and EndpointSlices, in every namespace; no
	// periodic resync (the timers and the ownership resync cover what
	// events do not). Pods come from the process's pod informer, which
	// holds every pod of the cluster (kube.PodInformers): the handlers and
	// the sweep skip those that are not Trainyard's.
	watch := cfg.Watch
	if watch == nil {
		watch = cfg.Kube
	}
	w.factory = informers.NewSharedInformerFactoryWithOptions(watch, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = kube.ManagedSelector().String()
		}),
		informers.WithTransform(slimCached),
	)
	w.podFactory = cfg.Pods
	if w.podFactory == nil {
		w.podFactory = kube.PodInformers(watch)
	}
	podInf := w.podFactory.Core().V1().Pods()
	svcInf := w.factory.Core().V1().Services()
	w.pods, w.services = podInf.Informer(), svcInf.Informer()
	w.podLister, w.svcLister = podInf.Lister(), svcInf.Lister()
	w.endpoints = w.factory.Discovery().V1().EndpointSlices().Informer()
	for _, inf := range []cache.SharedIndexInformer{w.pods, w.services, w.endpoints} {
		if err := inf.AddIndexers(cache.Indexers{indexJobUID: byJobUID}); err != nil {
			return nil, fmt.Errorf("worker: informer index: %w", err)
		}
	}
	var err error
	if w.slices, err = endpoints.New(endpoints.Config{
		Kube: cfg.Kube, Pods: w.pods, Services: w.services, Slices: w.endpoints, Index: indexJobUID,
		Mine: w.tenantNamespace, Count: w.count, Metrics: w.metrics.queue, Logger: w.log,
	}); err != nil {
		return nil, err
	}
	for kind, inf := range map[string]cache.SharedIndexInformer{"pod": w.pods, "service": w.services} {
		delay := serviceEventDelay
		if kind == "pod" {
			delay = podEventDelay
		}
		if _, err := inf.AddEventHandler(cache.FilteringResourceEventHandler{FilterFunc: kube.Managed, Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				w.observed(kind, obj, false)
				if after, ok := delay(nil, obj); ok {
					w.enqueueOwner(obj, after)
				}
			},
			UpdateFunc: func(old, cur any) {
				w.observed(kind, cur, false)
				if after, ok := delay(old, cur); ok {
					w.enqueueOwner(cur, after)
				}
			},
			DeleteFunc: func(obj any) {
				w.observed(kind, obj, true)
				if after, ok := delay(nil, nil); ok {
					w.enqueueOwner(obj, after)
				}
			},
		}}); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// LeadEndpoints makes this worker's slice controller the one writing
// every job's EndpointSlice until ctx ends (package endpoints). The
// process that holds the scheduler lease calls it (scheduler.Config.OnLead):
// one writer at a time, chosen by a lease that exists anyway.
func (w *Worker) LeadEndpoints(ctx context.Context) { w.slices.Lead(ctx) }

// tenantNamespace reports whether ns is tenant tenantID's namespace in
// this installation (endpoints.Config.Mine).
func (w *Worker) tenantNamespace(ctx context.Context, ns, tenantID string) (bool, error) {
	t, found, err := w.tenants.lookup(ctx, tenantID)
	if err != nil || !found {
		return false, err
	}
	want, err := namespaceOf(t)
	return err == nil && want == ns, nil
}

// Ready reports whether the worker is doing its work: its caches are
// synced and it reached Postgres within three lease periods.
func (w *Worker) Ready() error {
	if !w.synced.Load() {
		return errors.New("informer caches not synced yet")
	}
	last := w.keeper.LastContact()
	if since := time.Since(last); since > 3*w.cfg.LeaseTTL {
		return fmt.Errorf("no successful lease renewal for %s", since.Round(time.Second))
	}
	return nil
}

// Run works until ctx ends, then stops: it lets the reconciles in flight
// finish (for a few seconds at most) and releases every job it owns, so
// that other workers take them over at once. The caller runs cfg.Listener.
func (w *Worker) Run(ctx context.Context) error {
	w.log.Info("worker starting", "concurrency", w.cfg.Concurrency, "lease_ttl", w.cfg.LeaseTTL,
		"max_owned_jobs", w.cfg.MaxOwnedJobs)
	if l := w.cfg.Listener; l != nil {
		w.listen(ctx, l)
	}
	w.factory.Start(ctx.Done())
	defer w.factory.Shutdown()
	w.podFactory.Start(ctx.Done())
	if w.cfg.Pods == nil {
		defer w.podFactory.Shutdown()
	}

	var loops sync.WaitGroup
	loops.Go(func() { w.keeper.Run(ctx) })

	// An empty cache would look like vanished pods, which Plan counts as
	// failures: no reconcile before the caches are synced.
	if !cache.WaitForCacheSync(ctx.Done(), w.pods.HasSynced, w.services.HasSynced, w.endpoints.HasSynced) {
		w.stop(&loops, nil)
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("worker: informer caches did not sync")
	}
	w.synced.Store(true)
	w.log.Info("informer caches synced; reconciling")

	// Reconciles run on a context that outlives ctx for a short drain.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var workers sync.WaitGroup
	loops.Go(func() { w.runSweep(ctx) })
	if w.cfg.Metrics != nil {
		loops.Go(func() { w.runTrialMetrics(ctx) })
	}
	workers.Go(func() { w.loop.Run(workCtx, w.cfg.Concurrency) })
	workers.Go(func() { w.slices.Run(ctx, 2) })
	<-ctx.Done()
	drain := time.AfterFunc(5*time.Second, cancelWork)
	defer drain.Stop()
	w.stop(&loops, &workers)
	return nil
}

// stop shuts the queue down, waits for the loops and reconciles, and
// releases the worker's jobs.
func (w *Worker) stop(loops, workers *sync.WaitGroup) {
	w.loop.ShutDown()
	loops.Wait()
	if workers != nil {
		workers.Wait()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.store.JobReleaseAll(ctx, w.cfg.ID); err != nil {
		w.log.Warn("releasing jobs at shutdown failed; they are taken over when their leases expire", "error", err)
		return
	}
	w.log.Info("worker stopped; jobs released", "jobs", w.own.Count())
}

// listen wakes the worker on notifications: a job that needs attention
// (queued if owned, else claimed; the scheduler notifies each tenant whose
// jobs it admits), a tenant that changed (its cached record is dropped), and a
// reconnect (notifications were lost: claim and requeue everything).
func (w *Worker) listen(ctx context.Context, l *store.Listener) {
	jobs, stopJobs := l.Subscribe(store.ChannelJobs)
	tenants, stopTenants := l.Subscribe(store.ChannelTenants)
	context.AfterFunc(ctx, func() { stopJobs(); stopTenants() })
	l.OnReconnect(func() {
		if ctx.Err() != nil {
			return
		}
		w.keeper.Wake()
		w.notified.Add(1)
		w.own.DropClaimed()
		for _, k := range w.own.Keys() {
			w.queue.Add(k)
		}
	})
	go func() {
		for payload := range jobs {
			w.jobNotified(payload)
		}
	}()
	go func() {
		for id := range tenants {
			w.tenants.invalidate(id)
		}
	}()
}

// jobNotified acts on a ChannelJobs payload (jobNotice): a job's queues
// the job if the worker owns it (dropping the row its claim returned, which
// the write that notified made stale: ownership.Set.Stash), else wakes the
// claimer; admissions to the worker's cluster wake the claimer.
func (w *Worker) jobNotified(payload string) {
	k, what := jobNotice(payload, w.cfg.Cluster)
	switch what {
	case noticeAdmitted:
		w.keeper.Wake()
	case noticeJob:
		w.notified.Add(1)
		if w.own.Owns(k) {
			w.own.DropClaimed(k)
			w.queue.Add(k)
			return
		}
		w.keeper.Wake()
	}
}

// notice is what a ChannelJobs payload asks of a worker.
type notice int

const (
	noticeNone     notice = iota // admissions to another cluster; a payload not understood
	noticeAdmitted               // jobs became claimable in the worker's cluster
	noticeJob                    // a job needs its owner, or a claimer
)

// jobNotice reads a ChannelJobs payload for a worker of cluster:
// "<tenant>/<uid>" is about one job, "<tenant>/@<cluster>" about jobs
// admitted to that cluster (store.AdmittedPayload), and "<tenant>/", from
// a scheduler that named no cluster, about admissions anywhere. Only the
// cluster's own workers can claim its jobs: the others' claims would
// find nothing.
func jobNotice(payload, cluster string) (store.JobKey, notice) {
	tenantID, rest, ok := strings.Cut(payload, "/")
	switch {
	case !ok || tenantID == "":
		return store.JobKey{}, noticeNone
	case rest == "":
		return store.JobKey{}, noticeAdmitted
	case rest[0] == '@':
		if rest[1:] != cluster {
			return store.JobKey{}, noticeNone
		}
		return store.JobKey{}, noticeAdmitted
	}
	return store.JobKey{Tenant: tenantID, UID: rest}, noticeJob
}

// stashGuard is what a claim compares before and after it to tell whether
// the rows it returned may be kept for their first passes (ownership.Set.Stash):
// a job's notification, a dropped payload or a reconnect in between may
// be about one of them (a cancel or preemption committed just after the
// claim, whose notification came before the job was owned), and the
// claim's rows are then loaded again instead. Without a listener nothing
// tells the worker about such writes, and claimed rows are never kept.
func (w *Worker) stashGuard() (int64, bool) {
	l := w.cfg.Listener
	if l == nil {
		return 0, false
	}
	return w.notified.Load() + int64(l.Dropped(store.ChannelJobs)), true
}

// sync is the loop's sync (internal/controller): one reconcile pass of one
// job, whose timers become the loop's requeues.
func (w *Worker) sync(ctx context.Context, key store.JobKey) (controller.Result, error) {
	res, err := w.reconcile(ctx, key)
	return controller.Result{Requeue: res.requeue, RequeueAfter: res.after}, err
}

// syncFailed counts a failed pass by reason and logs it; the loop retries
// the job with backoff.
func (w *Worker) syncFailed(key store.JobKey, err error, retries int) {
	var re *reconcileError
	reason := errReasonStore
	if errors.As(err, &re) {
		reason = re.reason
	}
	w.metrics.reconcileErrors.WithLabelValues(reason).Inc()
	w.log.Warn("reconcile failed; retrying with backoff", "job", key, "error", err, "retries", retries)
}

// reconcileError labels an error for the metrics.
type reconcileError struct {
	reason string
	err    error
}

func (e *reconcileError) Error() string { return e.err.Error() }
func (e *reconcileError) Unwrap() error { return e.err }

func errorf(reason string, err error) error {
	if err == nil {
		return nil
	}
	return &reconcileError{reason: reason, err: err}
}

// podEventBatch is how long a pod event waits before its job's pass: the
// pods of a job change together (created, scheduled, started, ended at
// once), and the events that arrive meanwhile join the same pass.
// Dispatch does not wait for it: a job's first pass comes from its claim.
// What waits is the status users see (a replica running, the job
// finished, a failed replica's restart), by at most this long; Kubernetes'
// Job controller waits a second. In the dispatch bench (1 chief + 4
// workers, pods starting and ending within a few tens of ms of each other)
// a job took about 20 passes without batching, 13.5 with 25 ms and 6.3
// with 250 ms, and with 250 ms its EndpointSlice 2.2 writes instead of
// 5.9 (the pods' addresses arrive together) and the replicas still
// running when the chief ended seldom need deleting (they end in the same
// window): the API server then did 10 % more work in Trainyard's blocks
// than in raw client-go's, not 35 %.
const podEventBatch = 250 * time.Millisecond

// podEventLazy is how long a pod event waits for its job's pass when it
// changes nothing Plan acts on and nothing a user waits for: a pod the
// worker created appearing in the cache (Pending, on no node yet), or the
// node chosen for it (or why none can be). Such a pass would only record
// the node. Every later event that matters (the pod running, ending,
// going, stuck) brings the pass forward to its own podEventBatch and the
// lazy change goes with it; so in the usual run of create, bind, run, end
// the first two cost no pass of their own.
const podEventLazy = 2 * time.Second

// podEventDelay says how long a pod event (old nil: an add; both nil: a
// delete) waits for its job's pass, and false when it changes nothing
// Plan reads: of a replica pod what kube.ObservePod derives, of another
// (TensorBoard) its labels and deletion.
func podEventDelay(old, cur any) (time.Duration, bool) {
	c, ok := cur.(*corev1.Pod)
	if !ok {
		return podEventBatch, true
	}
	cb, okC := kube.ObservePod(c)
	if old == nil {
		if okC && cb.Phase == job.PodPending && cb.Node == "" && cb.IP == "" && !cb.Deleting && cb.Waiting == "" &&
			cb.Unschedulable == "" && cb.Terminated == nil {
			return podEventLazy, true
		}
		return podEventBatch, true
	}
	o, ok := old.(*corev1.Pod)
	if !ok {
		return podEventBatch, true
	}
	ob, okO := kube.ObservePod(o)
	switch {
	case okO != okC:
		return podEventBatch, true
	case !okO:
		return podEventBatch, metaChanged(old, cur)
	case equalObserved(ob, cb):
		return 0, false
	}
	ob.Node, ob.Unschedulable = cb.Node, cb.Unschedulable
	if equalObserved(ob, cb) {
		return podEventLazy, true
	}
	return podEventBatch, true
}

// serviceEventDelay: a Service's pass runs at once, on its deletion or a
// change of its labels or deletion timestamp.
func serviceEventDelay(old, cur any) (time.Duration, bool) {
	if old == nil {
		return 0, true
	}
	return 0, metaChanged(old, cur)
}

// enqueueOwner queues the job an object belongs to, if this worker owns
// it, after the given delay (0: now).
func (w *Worker) enqueueOwner(obj any, after time.Duration) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	tenantID, uid, ok := kube.JobKeyOf(m)
	if !ok {
		return
	}
	k := store.JobKey{Tenant: tenantID, UID: uid}
	switch {
	case !w.own.Owns(k):
	case after <= 0:
		w.queue.Add(k)
	default:
		w.batches.add(k, after)
	}
}

// batches holds the jobs whose pod events wait for their pass, with one
// timer each: an event that comes meanwhile joins the pass, and brings it
// forward if it must not wait as long. Not the queue's AddAfter: its
// metrics count every delayed add as a retry.
type batches struct {
	queue func(store.JobKey)
	mu    sync.Mutex
	m     map[store.JobKey]*batch
}

type batch struct {
	due   time.Time
	timer *time.Timer
}

func newBatches(queue func(store.JobKey)) *batches {
	return &batches{queue: queue, m: map[store.JobKey]*batch{}}
}

// add queues k after d, or sooner if k is already due sooner.
func (b *batches) add(k store.JobKey, d time.Duration) {
	due := time.Now().Add(d)
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur, ok := b.m[k]; ok {
		// A timer that already fired is about to queue k.
		if due.Before(cur.due) && cur.timer.Stop() {
			cur.due = due
			cur.timer.Reset(d)
		}
		return
	}
	b.m[k] = &batch{due: due, timer: time.AfterFunc(d, func() {
		b.mu.Lock()
		delete(b.m, k)
		b.mu.Unlock()
		b.queue(k)
	})}
}

// observed clears the expectations an informer event fulfils: the object
// exists (or existed) under its name, and it is gone or going.
func (w *Worker) observed(kind string, obj any, gone bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	w.expect.observed(createKey(kind, m.GetNamespace(), m.GetName()))
	if gone || m.GetDeletionTimestamp() != nil {
		w.expect.observed(deleteKey(string(m.GetUID())), deleteKey(m.GetNamespace()+"/"+m.GetName()))
	}
}

// metaChanged reports a change of labels or of the deletion timestamp.
func metaChanged(old, cur any) bool {
	o, ok1 := old.(metav1.Object)
	c, ok2 := cur.(metav1.Object)
	if !ok1 || !ok2 {
		return true
	}
	if (o.GetDeletionTimestamp() == nil) != (c.GetDeletionTimestamp() == nil) {
		return true
	}
	ol, cl := o.GetLabels(), c.GetLabels()
	if len(ol) != len(cl) {
		return true
	}
	for k, v := range ol {
		if cl[k] != v {
			return true
		}
	}
	return false
}

func byJobUID(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if uid := m.GetLabels()[kube.LabelJobUID]; uid != "" {
		return []string{jobIndexKey(m.GetNamespace(), uid)}, nil
	}
	return nil, nil
}

// slimCached is the transform of the worker's Service and EndpointSlice
// informers: everything but managed fields. (Pods: kube.SlimPod.)
func slimCached(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
