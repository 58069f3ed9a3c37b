//go:build integration

package scheduler

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/pgtest"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// bundle is a fresh database and a fake cluster of two 8-GPU nodes.
type bundle struct {
	ctx   context.Context
	url   string
	store *store.Store
	kube  *fake.Clientset
}

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, "scheduler", nil)) }

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	pool, url := pgtest.Schema(t)
	kc := fake.NewClientset(gpuNode("n1", 8), gpuNode("n2", 8))
	return &bundle{ctx: ctx, url: url, store: store.New(pool), kube: kc}
}

func gpuNode(name string, gpus int64) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
				"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI), corev1.ResourcePods: resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// start runs a scheduler until the test ends (or stop is called).
func (b *bundle) start(t *testing.T, id string) (s *Scheduler, reg *prometheus.Registry, stop func()) {
	t.Helper()
	return b.startWith(t, Config{ID: id, Period: 200 * time.Millisecond})
}

// startWith is start with cfg's ID, Listener and Period.
func (b *bundle) startWith(t *testing.T, cfg Config) (s *Scheduler, reg *prometheus.Registry, stop func()) {
	t.Helper()
	reg = prometheus.NewRegistry()
	s, err := New(Config{ID: cfg.ID, Store: b.store, Kube: b.kube, Listener: cfg.Listener, LeaseTTL: 2 * time.Second, Period: cfg.Period,
		UsageRefresh: cfg.UsageRefresh, OnLead: cfg.OnLead,
		PublishInterval: 10 * time.Millisecond, Registry: reg,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stop = func() {
		cancel()
		require.NoError(t, <-done)
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			stop()
		}
	})
	return s, reg, stop
}

func (b *bundle) submit(t *testing.T, tenantID, name string, workers int32, gpus int32, priority int32) store.JobKey {
	t.Helper()
	spec := job.Spec{Priority: priority, Replicas: []job.ReplicaSpec{{Type: job.Worker, Count: workers, Image: "tf",
		Resources: job.Resources{GPU: gpus}}}}
	spec.Default()
	j, _, err := b.store.JobCreate(b.ctx, store.JobCreateParams{Job: job.Job{Tenant: tenantID, Name: name, Spec: spec}})
	require.NoError(t, err)
	return store.JobKey{Tenant: tenantID, UID: j.UID}
}

func (b *bundle) admitted(t *testing.T, k store.JobKey) bool {
	t.Helper()
	w, err := b.store.JobLoad(b.ctx, k.Tenant, k.UID)
	require.NoError(t, err)
	return w.Admitted
}

// Two 12-GPU jobs of 3×4 GPUs on 16 GPUs: the scheduler admits one; the
// other waits for capacity, first in line, with a Waiting event and its
// place in the published queue.
func TestSchedulerAdmitsWhatFits(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a"})
	require.NoError(t, err)
	first := b.submit(t, "a", "first", 3, 4, 0)
	second := b.submit(t, "a", "second", 3, 4, 0)
	_, reg, _ := b.start(t, "s1")

	require.Eventually(t, func() bool { return b.admitted(t, first) }, 10*time.Second, 20*time.Millisecond)
	var q map[string]job.QueueInfo
	require.Eventually(t, func() bool {
		q, _, err = b.store.QueueGet(b.ctx, "a")
		require.NoError(t, err)
		return len(q) == 1
	}, 10*time.Second, 20*time.Millisecond)
	require.False(t, b.admitted(t, second))
	w := q[second.UID]
	require.Equal(t, job.WaitCapacity, w.Reason)
	require.Equal(t, 1, w.TenantPosition)
	require.Equal(t, 1, w.ClusterPosition)
	require.Equal(t, []string{"nvidia.com/gpu"}, w.WaitingFor)
	events, err := b.store.EventList(b.ctx, "a", "second", 0, 10)
	require.NoError(t, err)
	require.Equal(t, job.ReasonWaiting, events[len(events)-1].Reason)
	require.Eventually(t, func() bool { return metric(t, reg, "trainyard_scheduler_leader") == 1 }, 5*time.Second, 10*time.Millisecond)

	// The first job ends: the second is admitted.
	_, err = b.store.JobCancel(b.ctx, "a", "first")
	require.NoError(t, err)
	// (A cancelled admitted job still holds its room until its worker ends
	// it; end it as the worker would.)
	endJob(t, b, first)
	require.Eventually(t, func() bool { return b.admitted(t, second) }, 10*time.Second, 20*time.Millisecond)
}

// endJob finishes a job as its worker would.
func endJob(t *testing.T, b *bundle, k store.JobKey) {
	t.Helper()
	claimed, err := b.store.JobClaim(b.ctx, "test-worker", 100, time.Hour)
	require.NoError(t, err)
	require.Contains(t, store.KeysOf(claimed), k)
	w, err := b.store.JobLoad(b.ctx, k.Tenant, k.UID)
	require.NoError(t, err)
	st := w.Job.Status
	st.State = job.Cancelled
	_, err = b.store.JobSave(b.ctx, store.JobSaveParams{WorkerID: "test-worker", Tenant: k.Tenant, UID: k.UID,
		Version: w.Version, Status: st, Done: true})
	require.NoError(t, err)
}

// One of two schedulers leads; when it stops, the other takes over within
// the lease TTL, and no job is admitted twice (admission is a flag set
// under the lease's fence; a second admission of a job is a no-op).
func TestSchedulerLeaderFailover(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a",
		Scheduling: tenant.Scheduling{Queueing: tenant.BestEffortFIFO}})
	require.NoError(t, err)
	_, reg1, stop1 := b.start(t, "s1")
	require.Eventually(t, func() bool {
		return metric(t, reg1, "trainyard_scheduler_leader") == 1
	}, 10*time.Second, 20*time.Millisecond)
	_, reg2, _ := b.start(t, "s2")
	k1 := b.submit(t, "a", "one", 1, 1, 0)
	require.Eventually(t, func() bool { return b.admitted(t, k1) }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 0.0, metric(t, reg2, "trainyard_scheduler_leader"))

	stop1()
	k2 := b.submit(t, "a", "two", 1, 1, 0)
	require.Eventually(t, func() bool { return b.admitted(t, k2) }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 1.0, metric(t, reg2, "trainyard_scheduler_leader"))
	events, err := b.store.EventListTenant(b.ctx, "a", 0, 100)
	require.NoError(t, err)
	admissions := map[string]int{}
	for _, e := range events {
		if e.Reason == job.ReasonAdmitted {
			admissions[e.JobUID]++
			require.Equal(t, job.Starting, e.State, "an admission starts the job")
		}
	}
	require.Equal(t, map[string]int{k1.UID: 1, k2.UID: 1}, admissions, "each job admitted once, with one event")
}

// OnLead runs while its process holds the lease and only then: the
// second process's starts once the first stepped down, and the first's
// context has ended before that (one EndpointSlice writer at a time).
func TestSchedulerOnLeadFollowsTheLease(t *testing.T) {
	b := setup(t)
	var leading atomic.Int32
	leads := make(chan string, 4)
	onLead := func(id string) func(context.Context) {
		return func(ctx context.Context) {
			if n := leading.Add(1); n != 1 {
				t.Errorf("%d processes lead at once", n)
			}
			leads <- id
			<-ctx.Done()
			leading.Add(-1)
		}
	}
	_, _, stop1 := b.startWith(t, Config{ID: "s1", Period: 200 * time.Millisecond, OnLead: onLead("s1")})
	require.Equal(t, "s1", <-leads)
	b.startWith(t, Config{ID: "s2", Period: 200 * time.Millisecond, OnLead: onLead("s2")})
	select {
	case id := <-leads:
		t.Fatalf("%s leads beside s1", id)
	case <-time.After(time.Second):
	}
	stop1()
	require.Zero(t, leading.Load(), "s1's OnLead returned before its Run did")
	select {
	case id := <-leads:
		require.Equal(t, "s2", id)
	case <-time.After(10 * time.Second):
		t.Fatal("s2 never led")
	}
}

// A pending job of priority 900 preempts the tenant's priority-0 job that
// holds the GPUs it needs.
func TestSchedulerPreempts(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a",
		Scheduling: tenant.Scheduling{Preemption: tenant.PreemptLowerPriority}})
	require.NoError(t, err)
	low := b.submit(t, "a", "low", 2, 8, 0)
	_, reg, _ := b.start(t, "s1")
	require.Eventually(t, func() bool { return b.admitted(t, low) }, 10*time.Second, 20*time.Millisecond)
	urgent := b.submit(t, "a", "urgent", 1, 8, 900)
	require.Eventually(t, func() bool {
		w, err := b.store.JobLoad(b.ctx, low.Tenant, low.UID)
		require.NoError(t, err)
		return w.PreemptFor == urgent.UID
	}, 10*time.Second, 20*time.Millisecond)
	w, err := b.store.JobLoad(b.ctx, low.Tenant, low.UID)
	require.NoError(t, err)
	require.Contains(t, w.PreemptMessage, `"urgent" (priority 900)`)
	require.False(t, b.admitted(t, urgent), "it waits until the victim has stopped")
	require.Eventually(t, func() bool { return metric(t, reg, "trainyard_scheduler_preemptions_total") == 1 },
		5*time.Second, 10*time.Millisecond, "counted once the commit is done")
}

// With nothing waiting, what frees capacity — a job finishing
// (ChannelFreed), a pod ending — runs no cycle; a submission
// (ChannelSchedule) runs one at once; and while a job waits, a job
// finishing lets it in. The period is an hour: only the notifications and
// the informers wake the loop here.
func TestSchedulerIdleUntilAJobWaits(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a"})
	require.NoError(t, err)
	l, err := store.NewListener(b.url, store.ListenerConfig{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	go func() { _ = l.Run(ctx) }()
	s, reg, _ := b.startWith(t, Config{ID: "s1", Listener: l, Period: time.Hour})
	require.Eventually(t, func() bool {
		return l.Listening(store.ChannelSchedule) && l.Listening(store.ChannelFreed) && metric(t, reg, "trainyard_scheduler_leader") == 1
	}, 10*time.Second, 10*time.Millisecond)

	first := b.submit(t, "a", "first", 3, 4, 0)
	require.Eventually(t, func() bool { return b.admitted(t, first) }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, s.idle.Load, 10*time.Second, 10*time.Millisecond)
	before := cycles(t, reg)
	endJob(t, b, first)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ty-a", Name: "p"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	pod, err = b.kube.CoreV1().Pods("ty-a").Create(b.ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	pod.Status.Phase = corev1.PodSucceeded
	_, err = b.kube.CoreV1().Pods("ty-a").UpdateStatus(b.ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Never(t, func() bool { return cycles(t, reg) != before }, time.Second, 20*time.Millisecond,
		"a job finishing and a pod ending with nothing waiting run no cycle")

	second := b.submit(t, "a", "second", 3, 4, 0)
	third := b.submit(t, "a", "third", 3, 4, 0)
	require.Eventually(t, func() bool { return b.admitted(t, second) }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return !s.idle.Load() }, 10*time.Second, 10*time.Millisecond, "third waits")
	require.False(t, b.admitted(t, third))
	endJob(t, b, second)
	require.Eventually(t, func() bool { return b.admitted(t, third) }, 10*time.Second, 10*time.Millisecond,
		"second finishing lets third in")
}

// While idle, the period's cycles only probe for a waiting job
// (store.SchedulerWaiting): no snapshot, no cycle counted; a job submitted
// meanwhile is found by the probe (no listener here) and admitted. A
// submission's notification skips the probe: its cycle reads at once.
func TestSchedulerIdlePeriodOnlyProbes(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a"})
	require.NoError(t, err)
	s, reg, _ := b.startWith(t, Config{ID: "s1", Period: 20 * time.Millisecond})
	first := b.submit(t, "a", "first", 1, 1, 0)
	require.Eventually(t, func() bool { return b.admitted(t, first) }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, s.idle.Load, 10*time.Second, 10*time.Millisecond)
	before := cycles(t, reg)
	require.Never(t, func() bool { return cycles(t, reg) != before }, 500*time.Millisecond, 20*time.Millisecond,
		"idle periods read no snapshot")
	s.wakeSubmitted() // as ChannelSchedule does; nothing waits, so only a read without the probe counts a cycle
	require.Eventually(t, func() bool { return cycles(t, reg) > before }, 10*time.Second, 10*time.Millisecond,
		"a submission's cycle reads without probing")
	second := b.submit(t, "a", "second", 1, 1, 0)
	require.Eventually(t, func() bool { return b.admitted(t, second) }, 10*time.Second, 10*time.Millisecond)
}

// cycles counts the scheduling cycles run.
func cycles(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "trainyard_scheduler_cycle_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "phase" && lp.GetValue() == "total" {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// metric sums the series of a registered gauge or counter (0 when absent).
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	v := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				v += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return v
}
