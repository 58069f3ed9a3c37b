package endpoints

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/trainyard/trainyard/internal/controller"
	"github.com/trainyard/trainyard/internal/kube"
)

// Config configures a Controller.
type Config struct {
	// Kube writes the slices.
	Kube kubernetes.Interface
	// Pods, Services and Slices are the process's informers of Trainyard's
	// pods, Services and EndpointSlices, each with the indexer Index
	// ("<namespace>/<job uid>" of the object's job). The caller starts
	// them and adds no slice handler of its own: the controller's is the
	// one that keeps the write memo.
	Pods, Services, Slices cache.SharedIndexInformer
	Index                  string
	// Mine reports whether a job's namespace is its tenant's namespace in
	// this installation: another installation sharing the cluster (another
	// database, another namespace prefix) writes its own slices.
	Mine func(ctx context.Context, ns, tenantID string) (bool, error)
	// Batch is how long a pod event waits before its job's slice is
	// synced, so that the events of a job's pods changing together (they
	// get their addresses and end within milliseconds of each other) make
	// one write. Defaults to DefaultBatch.
	Batch time.Duration
	// Count is told of every API call (metrics).
	Count func(verb, resource string, start time.Time, err error)
	// Metrics and Duration are the queue's metrics (controller.Config).
	Metrics  workqueue.MetricsProvider
	Duration prometheus.Observer
	Logger   *slog.Logger
}

// DefaultBatch is Config.Batch's default: the worker's own pod event batch
// (its passes and the slice then see the same moments of the pods).
const DefaultBatch = 250 * time.Millisecond

// Controller keeps every job's EndpointSlice listing its replica pods; see
// the package doc.
type Controller struct {
	cfg     Config
	writer  *Writer
	loop    *controller.Loop[string]
	leading atomic.Bool
	log     *slog.Logger
}

// New returns a Controller fed by cfg's informers (handlers added now;
// nothing runs until Run).
func New(cfg Config) (*Controller, error) {
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	c := &Controller{cfg: cfg, log: cfg.Logger.With("controller", "endpointslices")}
	c.writer = NewWriter(cfg.Kube, cfg.Slices, cfg.Index, cfg.Count)
	c.loop = controller.New(controller.Config[string]{
		Name: "endpointslices",
		// Per job: 50ms doubling to 30s.
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 30*time.Second),
		Sync:        c.sync,
		Metrics:     cfg.Metrics,
		Duration:    cfg.Duration,
		OnError: func(key string, err error, retries int) {
			c.log.Warn("writing a job's EndpointSlice failed; trying again", "job", key, "error", err, "retries", retries)
		},
	})
	if _, err := cfg.Pods.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: isReplicaPod,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { c.enqueueAfter(obj, c.cfg.Batch) },
			UpdateFunc: func(old, cur any) {
				if addressChanged(old, cur) {
					c.enqueueAfter(cur, c.cfg.Batch)
				}
			},
			DeleteFunc: func(obj any) { c.enqueueAfter(obj, c.cfg.Batch) },
		},
	}); err != nil {
		return nil, err
	}
	// Each legacy Service (a job's own, from before the namespace's
	// Service of replicas) is named by its job's slice.
	if _, err := cfg.Services.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool { return kube.Managed(obj) && !isTensorBoard(obj) },
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.enqueueAfter(obj, 0) },
			DeleteFunc: func(obj any) { c.enqueueAfter(obj, 0) },
		},
	}); err != nil {
		return nil, err
	}
	if _, err := cfg.Slices.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.writer.Seen(obj, false) },
		UpdateFunc: func(_, cur any) { c.writer.Seen(cur, false) },
		// A slice deleted by someone else is written again if its job
		// still has addresses.
		DeleteFunc: func(obj any) { c.writer.Seen(obj, true); c.enqueueAfter(obj, 0) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs keys until ctx ends, with n workers; the caller has synced the
// informers. Keys are synced only while the controller leads (Lead).
func (c *Controller) Run(ctx context.Context, n int) {
	context.AfterFunc(ctx, c.loop.ShutDown)
	c.loop.Run(ctx, n)
}

// Lead makes this controller the writer until ctx ends: every job with a
// pod or a slice in the caches is synced at once, then as events come.
// One process leads at a time (the caller's lease: every worker runs a
// Controller, the one holding the scheduler lease leads), so replicas do
// not race on the same slices; a writer that led before and still writes
// meanwhile only costs a conflict (updates carry the resourceVersion).
func (c *Controller) Lead(ctx context.Context) {
	c.leading.Store(true)
	c.log.Info("writing jobs' EndpointSlices")
	for _, inf := range []cache.SharedIndexInformer{c.cfg.Pods, c.cfg.Slices} {
		for _, k := range inf.GetIndexer().ListIndexFuncValues(c.cfg.Index) {
			c.loop.Queue().Add(k)
		}
	}
	<-ctx.Done()
	c.leading.Store(false)
	c.log.Info("no longer writing jobs' EndpointSlices")
}

// enqueueAfter queues the job of obj to be synced after delay (the
// queue keeps the earliest time of a key already waiting: events within
// the delay join one sync).
func (c *Controller) enqueueAfter(obj any, delay time.Duration) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if !c.leading.Load() {
		return // Lead queues every job when it begins
	}
	keys, _ := c.cfg.Pods.GetIndexer().GetIndexers()[c.cfg.Index](obj)
	for _, k := range keys {
		c.loop.Queue().AddAfter(k, delay)
	}
}

// sync brings the slice of the job keyed "<namespace>/<job uid>" to list
// its replica pods that have an address and run: none while no pod has an
// address, and deleted once none has (the job ended, its cleanup deleted
// the pods, or it waits to restart).
func (c *Controller) sync(ctx context.Context, k string) (controller.Result, error) {
	if !c.leading.Load() {
		return controller.Result{}, nil
	}
	ns, uid, ok := strings.Cut(k, "/")
	if !ok {
		return controller.Result{}, nil
	}
	objs, _ := c.cfg.Pods.GetIndexer().ByIndex(c.cfg.Index, k)
	var pods []*corev1.Pod
	for _, o := range objs {
		// A job of one pod has no peers to find: no slice.
		if pod, ok := o.(*corev1.Pod); ok && isReplicaPod(pod) && kube.HasPeers(pod) {
			pods = append(pods, pod)
		}
	}
	have := c.writer.Observe(ns, uid)
	want := kube.RenderEndpointSlice(ns, pods)
	empty := want == nil || len(want.Endpoints) == 0
	if empty && have == nil {
		return controller.Result{}, nil
	}
	var tenantID string
	if want != nil {
		tenantID = want.Labels[kube.LabelTenant]
	} else {
		tenantID = have.Labels[kube.LabelTenant]
	}
	if mine, err := c.cfg.Mine(ctx, ns, tenantID); err != nil || !mine {
		return controller.Result{}, err
	}
	if empty {
		// No replica has an address (none yet, or none any more): no
		// slice, which DNS answers as it would an empty one.
		recheck, err := c.writer.Delete(ctx, have)
		return controller.Result{RequeueAfter: recheck}, err
	}
	svcs, _ := c.cfg.Services.GetIndexer().ByIndex(c.cfg.Index, k)
	for _, o := range svcs {
		if svc, ok := o.(*corev1.Service); ok && !isTensorBoard(svc) {
			// A job dispatched before the Service of replicas was the
			// namespace's: its replicas' names are under its own.
			want.Labels[discoveryv1.LabelServiceName] = svc.Name
		}
	}
	recheck, err := c.writer.Sync(ctx, want, have)
	return controller.Result{RequeueAfter: recheck}, err
}

// isReplicaPod reports whether obj is a Trainyard job's replica pod (not
// its TensorBoard).
func isReplicaPod(obj any) bool {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	return ok && kube.Managed(pod) && pod.Labels[kube.LabelJobUID] != "" && !isTensorBoard(pod)
}

func isTensorBoard(obj any) bool {
	m, ok := obj.(interface{ GetLabels() map[string]string })
	return ok && m.GetLabels()[kube.LabelComponent] == kube.ComponentTensorBoard
}

// addressChanged reports whether a pod update changes what its job's slice
// says of it: its address, node, hostname, phase or deletion.
func addressChanged(old, cur any) bool {
	o, ok1 := old.(*corev1.Pod)
	n, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return o.Status.PodIP != n.Status.PodIP || o.Status.Phase != n.Status.Phase ||
		o.Spec.NodeName != n.Spec.NodeName || o.Spec.Hostname != n.Spec.Hostname ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}
