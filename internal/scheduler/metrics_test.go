package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// queueFixture: tenant a has two jobs waiting (one since 90 s, asking
// for 2×4 GPUs; one since 30 s, 1 GPU), tenant b one admitted job and
// nothing waiting, tenant c one job waiting that has no queue time yet.
func queueFixture(now time.Time) (view, admission.Decision) {
	gpus := func(n int64) job.Vector {
		var v job.Vector
		v[job.GPU] = n
		return v
	}
	a1 := admission.Key{Tenant: "a", UID: "a1"}
	a2 := admission.Key{Tenant: "a", UID: "a2"}
	b1 := admission.Key{Tenant: "b", UID: "b1"}
	c1 := admission.Key{Tenant: "c", UID: "c1"}
	v := view{jobs: map[admission.Key]store.SchedJob{
		a1: {QueuedAt: now.Add(-90 * time.Second)},
		a2: {QueuedAt: now.Add(-30 * time.Second)},
		b1: {Admitted: true},
		c1: {},
	}}
	v.snap.Jobs = []admission.Job{
		{Key: a1, Groups: []admission.Group{{Count: 2, Request: gpus(4)}}},
		{Key: a2, Groups: []admission.Group{{Count: 1, Request: gpus(1)}}},
		{Key: b1, Admitted: true, Groups: []admission.Group{{Count: 1, Request: gpus(8)}}},
		{Key: c1, Groups: []admission.Group{{Count: 1, Request: gpus(0)}}},
	}
	d := admission.Decision{Waiting: []admission.Waiting{
		{Key: a1, QueueInfo: job.QueueInfo{Reason: job.WaitQuota}},
		{Key: a2, QueueInfo: job.QueueInfo{Reason: job.WaitCapacity}},
		{Key: c1, QueueInfo: job.QueueInfo{Reason: job.WaitCapacity}},
	}}
	return v, d
}

// The per-tenant queue series: the queue's length whatever the reason,
// and the oldest wait; a tenant with nothing waiting has neither, and a
// cycle that finds the queue empty clears them.
func TestTenantQueueMetrics(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	v, d := queueFixture(now)
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	m.observeDecision(v, d, store.SchedulerCommitResult{}, now)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP trainyard_tenant_queue_length Jobs of a tenant waiting for admission, whatever the reason, as of the last cycle (trainyard_scheduler_pending_jobs has them by reason). Leader only.
# TYPE trainyard_tenant_queue_length gauge
trainyard_tenant_queue_length{tenant="a"} 2
trainyard_tenant_queue_length{tenant="c"} 1
# HELP trainyard_tenant_oldest_wait_seconds How long a tenant's longest-waiting job has waited for admission (since it entered the queue), as of the last cycle. Leader only.
# TYPE trainyard_tenant_oldest_wait_seconds gauge
trainyard_tenant_oldest_wait_seconds{tenant="a"} 90
`), "trainyard_tenant_queue_length", "trainyard_tenant_oldest_wait_seconds"))

	m.observeDecision(v, admission.Decision{}, store.SchedulerCommitResult{}, now)
	require.Equal(t, 0, testutil.CollectAndCount(m.queueLength))
	require.Equal(t, 0, testutil.CollectAndCount(m.oldestWait))
}

// The ledger's series: GPUs allocated per tenant, and the GPU-hours
// counter from the ledger's month, replaced whole at each read (a tenant
// gone from the ledger is gone from the series).
func TestTenantLedgerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	m.observeHeld(map[string]store.TenantHeld{"a": {GPUs: 8, GPUSeconds: 7200}, "b": {GPUs: 0, GPUSeconds: 1800}})
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP trainyard_tenant_gpu_hours_total GPU-hours a tenant's jobs held (allocated) since the start of the UTC month, from the usage ledger: a counter that resets at each month's start. Leader only, every scheduler UsageRefresh.
# TYPE trainyard_tenant_gpu_hours_total counter
trainyard_tenant_gpu_hours_total{tenant="a"} 2
trainyard_tenant_gpu_hours_total{tenant="b"} 0.5
# HELP trainyard_tenant_gpus_allocated GPUs a tenant's admitted jobs hold, from the usage ledger (allocated, not measured). Leader only, every scheduler UsageRefresh.
# TYPE trainyard_tenant_gpus_allocated gauge
trainyard_tenant_gpus_allocated{tenant="a"} 8
trainyard_tenant_gpus_allocated{tenant="b"} 0
`), "trainyard_tenant_gpu_hours_total", "trainyard_tenant_gpus_allocated"))

	m.observeHeld(map[string]store.TenantHeld{"b": {GPUSeconds: 3600}})
	require.Equal(t, 1, testutil.CollectAndCount(m.gpusAllocated))
	require.Equal(t, 1, testutil.CollectAndCount(m.gpuHours))
	m.resetHeld()
	require.Equal(t, 0, testutil.CollectAndCount(m.gpuHours))
}

// queueOf is what a queue sample records: per tenant with anything
// waiting, the jobs, their GPUs and the oldest wait.
func TestQueueOf(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	v, d := queueFixture(now)
	require.Equal(t, []store.QueueSample{
		{Tenant: "a", PendingJobs: 2, PendingGPUs: 9, OldestWait: 90 * time.Second},
		{Tenant: "c", PendingJobs: 1},
	}, queueOf(v, d, now))
	require.Empty(t, queueOf(v, admission.Decision{}, now))
}

// The capacity a sample records: the GPUs of the nodes that take pods.
func TestCapacityGPUs(t *testing.T) {
	var eight, four job.Vector
	eight[job.GPU], four[job.GPU] = 8, 4
	here := []admission.Node{{Name: "n1", Allocatable: eight}, {Name: "n2", Allocatable: eight, Unschedulable: true}}
	there := []admission.Node{{Name: "m1", Cluster: "west", Allocatable: four}}
	require.Equal(t, int64(12), capacityGPUs(here, there))
	require.Equal(t, int64(0), capacityGPUs())
}

// The quota series: tenants with a GPU quota only; and the capacity,
// gone when the leader steps down.
func TestTenantQuotaAndCapacityMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	var q job.Vector
	q[job.GPU] = 16
	var v view
	v.snap.Tenants = []admission.Tenant{{ID: "a", Quota: q}, {ID: "b"}}
	m.observeSharing(v)
	require.Equal(t, 1, testutil.CollectAndCount(m.gpuQuota))
	require.Equal(t, 16.0, testutil.ToFloat64(m.gpuQuota.WithLabelValues("a")))
	m.gpuCapacity.WithLabelValues().Set(48)
	require.Equal(t, 48.0, testutil.ToFloat64(m.gpuCapacity.WithLabelValues()))
	m.resetSharing()
	m.resetHeld()
	require.Equal(t, 0, testutil.CollectAndCount(m.gpuQuota))
	require.Equal(t, 0, testutil.CollectAndCount(m.gpuCapacity))
}
