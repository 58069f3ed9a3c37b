//go:build integration

package worker

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/pgtest"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/worker/workertest"
)

// The package gets its own database (pgtest.Run), and each test its own
// schema in it (pgtest.Schema: a fresh copy of the tables), so that claims
// only ever see the test's own jobs.
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, "worker", nil)) }

// bundle is what a worker test works with: a Store on the test's schema, a
// fake clientset, and a Worker on both with synced informers (not Run: tests
// call claim and reconcile themselves).
type bundle struct {
	ctx   context.Context
	store *store.Store
	pool  *pgxpool.Pool
	url   string // the pool's: the test's schema (search_path)
	kube  *fake.Clientset
	w     *Worker
	clock *clock
}

func setup(t *testing.T, opts ...func(*Config)) *bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	pool, url := pgtest.Schema(t)
	clk := &clock{t: time.Now().UTC().Truncate(time.Second)}
	b := &bundle{ctx: ctx, pool: pool, url: url, store: store.New(pool, store.WithClock(clk.Now)), kube: workertest.Kube(),
		clock: clk}
	b.w = b.newWorker(t, "w1", opts...)
	return b
}

// newWorker builds another worker on the bundle's store and clientset, its
// informers started and synced.
func (b *bundle) newWorker(t *testing.T, id string, opts ...func(*Config)) *Worker {
	t.Helper()
	w := b.buildWorker(t, id, opts...)
	stop := make(chan struct{})
	w.factory.Start(stop)
	w.podFactory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		w.factory.Shutdown()
		w.podFactory.Shutdown()
		w.loop.ShutDown()
	})
	require.True(t, cache.WaitForCacheSync(b.ctx.Done(), w.pods.HasSynced, w.services.HasSynced, w.endpoints.HasSynced))
	w.synced.Store(true)
	return w
}

// leadSlices runs the worker's EndpointSlice controller, leading, for the
// rest of the test (in a process, the holder of the scheduler lease leads).
func (b *bundle) leadSlices(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	wg.Go(func() { b.w.slices.Run(ctx, 1) })
	wg.Go(func() { b.w.LeadEndpoints(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// buildWorker builds a worker on the bundle's store and clientset without
// starting anything (for tests that Run it).
func (b *bundle) buildWorker(t *testing.T, id string, opts ...func(*Config)) *Worker {
	t.Helper()
	cfg := Config{
		ID: id, Store: b.store, Kube: b.kube,
		LeaseTTL: time.Minute,
		Logger:   slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:      b.clock.Now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	w, err := New(cfg)
	require.NoError(t, err)
	return w
}

// tenant creates a tenant with namespace ty-<id>.
func (b *bundle) tenant(t *testing.T, id string, quota tenant.Quota) tenant.Tenant {
	t.Helper()
	tn, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: id, Namespace: "ty-" + id, Quota: quota})
	require.NoError(t, err)
	return tn
}

// submit creates a job as the API does (defaults applied) and admits it
// as the scheduler would.
func (b *bundle) submit(t *testing.T, tenantID, name string, spec job.Spec) store.JobKey {
	t.Helper()
	key := b.submitPending(t, tenantID, name, spec)
	b.admit(t, key)
	return key
}

// submitPending creates a job that waits for the scheduler.
func (b *bundle) submitPending(t *testing.T, tenantID, name string, spec job.Spec) store.JobKey {
	t.Helper()
	spec.Default()
	require.Empty(t, job.Validate(&job.Job{Tenant: tenantID, Name: name, Spec: spec}))
	j, _, err := b.store.JobCreate(b.ctx, store.JobCreateParams{
		Job: job.Job{Tenant: tenantID, Name: name, Spec: spec, Creator: "alice"},
	})
	require.NoError(t, err)
	return store.JobKey{Tenant: tenantID, UID: j.UID}
}

// schedulerLease takes the scheduler lease as the tests' scheduler.
func (b *bundle) schedulerLease(t *testing.T) store.SchedulerLease {
	t.Helper()
	lease, ok, err := b.store.SchedulerLeaseAcquire(b.ctx, "test-scheduler", time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	return lease
}

// admit admits jobs the way the scheduler commits its decisions.
func (b *bundle) admit(t *testing.T, keys ...store.JobKey) {
	t.Helper()
	res, err := b.store.SchedulerCommit(b.ctx, store.SchedulerCommitParams{Lease: b.schedulerLease(t), Admit: keys})
	require.NoError(t, err)
	require.Len(t, res.Admitted, len(keys))
}

// own claims every waiting job for b.w and requires key among them.
func (b *bundle) own(t *testing.T, key store.JobKey) {
	t.Helper()
	b.w.claim(b.ctx)
	require.True(t, b.w.own.Owns(key), "job %s not claimed", key)
}

func (b *bundle) reconcile(t *testing.T, key store.JobKey) result {
	t.Helper()
	res, err := b.w.reconcile(b.ctx, key)
	require.NoError(t, err)
	return res
}

func (b *bundle) load(t *testing.T, key store.JobKey) store.WorkerJob {
	t.Helper()
	wj, err := b.store.JobLoad(b.ctx, key.Tenant, key.UID)
	require.NoError(t, err)
	return wj
}

func (b *bundle) events(t *testing.T, key store.JobKey) []job.Event {
	t.Helper()
	wj := b.load(t, key)
	evs, err := b.store.EventList(b.ctx, key.Tenant, wj.Job.Name, 0, 100)
	require.NoError(t, err)
	return evs
}

// waitCache waits until the worker's informers show n pods of the job.
func (b *bundle) waitCache(t *testing.T, key store.JobKey, pods int) {
	t.Helper()
	require.Eventually(t, func() bool {
		objs, _ := b.w.pods.GetIndexer().ByIndex(indexJobUID, jobIndexKey("ty-acme", key.UID))
		return len(objs) == pods
	}, 10*time.Second, 5*time.Millisecond, "informer never showed %d pods of %s", pods, key)
}

// waitPod waits until the informer shows pod ns/name satisfying ok.
func (b *bundle) waitPod(t *testing.T, ns, name string, ok func(*corev1.Pod) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		pod, err := b.w.podLister.Pods(ns).Get(name)
		return err == nil && ok(pod)
	}, 10*time.Second, 5*time.Millisecond, "informer never showed the wanted state of pod %s/%s", ns, name)
}

// setPhase writes a pod's status as the kubelet would, and waits for the
// informer to show it.
func (b *bundle) setPhase(t *testing.T, ns, name string, phase corev1.PodPhase, exitCode int32, msg string) {
	t.Helper()
	pod, err := b.kube.CoreV1().Pods(ns).Get(b.ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	pod.Status.Phase = phase
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		reason := "Completed"
		if exitCode != 0 {
			reason = "Error"
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.ContainerName, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: reason, Message: msg,
				FinishedAt: metav1.NewTime(b.clock.Now())},
		}}}
	}
	_, err = b.kube.CoreV1().Pods(ns).UpdateStatus(b.ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	b.waitPod(t, ns, name, func(p *corev1.Pod) bool { return p.Status.Phase == phase })
}

// actions returns the fake clientset's recorded actions with this verb on
// this resource (subresource after a slash: "pods/log").
func (b *bundle) actions(verb, resource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range b.kube.Actions() {
		r := a.GetResource().Resource
		if a.GetSubresource() != "" {
			r += "/" + a.GetSubresource()
		}
		if a.GetVerb() == verb && r == resource {
			out = append(out, a)
		}
	}
	return out
}

// actionIndex is the position of the first recorded action matching.
func (b *bundle) actionIndex(verb, resource string) int {
	for i, a := range b.kube.Actions() {
		r := a.GetResource().Resource
		if a.GetSubresource() != "" {
			r += "/" + a.GetSubresource()
		}
		if a.GetVerb() == verb && r == resource {
			return i
		}
	}
	return -1
}

// react makes verb on resource fail with err while *on is true.
func (b *bundle) react(verb, resource string, on *atomic.Bool, err error) {
	b.kube.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		if on.Load() {
			return true, nil, err
		}
		return false, nil, nil
	})
}

// writes are the fake clientset's recorded creates, updates and deletes.
func (b *bundle) writes() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range b.kube.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			out = append(out, a)
		}
	}
	return out
}
