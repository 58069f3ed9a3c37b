//go:build integration

package scheduler

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

func (b *bundle) tenantIn(t *testing.T, id, cohort string, gpus int32, budget *tenant.Budget) {
	t.Helper()
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: id, Namespace: "ty-" + id, Quota: tenant.Quota{GPU: gpus},
		Sharing: tenant.Sharing{Cohort: cohort, Budget: budget}})
	require.NoError(t, err)
}

func (b *bundle) load(t *testing.T, k store.JobKey) store.WorkerJob {
	t.Helper()
	w, err := b.store.JobLoad(b.ctx, k.Tenant, k.UID)
	require.NoError(t, err)
	return w
}

// Tenants a and b share cohort c, 8 GPUs nominal each on 16 GPUs. a
// borrows b's 8; when b submits an 8-GPU job, a's most recently submitted
// borrower (the two started in one cycle) is preempted for it, with
// admission's explanation naming b's job, and nothing else is.
func TestSchedulerReclaimAcrossTenants(t *testing.T) {
	b := setup(t)
	b.tenantIn(t, "a", "c", 8, nil)
	b.tenantIn(t, "b", "c", 8, nil)
	a1 := b.submit(t, "a", "a1", 1, 8, 0)
	a2 := b.submit(t, "a", "a2", 1, 8, 0)
	_, reg, _ := b.start(t, "s1")
	require.Eventually(t, func() bool { return b.admitted(t, a1) && b.admitted(t, a2) }, 10*time.Second, 20*time.Millisecond,
		"a borrows b's idle nominal quota")

	bj := b.submit(t, "b", "b-train", 1, 8, 0)
	require.Eventually(t, func() bool { return b.load(t, a2).PreemptFor == bj.UID }, 10*time.Second, 20*time.Millisecond)
	w := b.load(t, a2)
	require.Contains(t, w.PreemptMessage, `reclaim in cohort c: job "b-train" of tenant b`)
	require.Contains(t, w.PreemptMessage, "16 GPUs in use, 8 nominal")
	require.Empty(t, b.load(t, a1).PreemptFor, "a1 is within a's nominal quota")
	require.False(t, b.admitted(t, bj), "b's job waits until the victim has stopped")

	// The next cycles see the preemption in flight (its preemptor is of
	// another tenant) and choose no other victim.
	c := cycles(t, reg)
	require.Eventually(t, func() bool { return cycles(t, reg) >= c+2 }, 5*time.Second, 20*time.Millisecond)
	require.Empty(t, b.load(t, a1).PreemptFor)
	require.NotEmpty(t, b.load(t, bj).WaitReason, "b's job's wait is recorded")
	read, err := b.store.SchedulerRead(b.ctx, 0)
	require.NoError(t, err)
	for _, j := range read.Jobs {
		if j.Key == a2 {
			require.Equal(t, "b", j.PreemptorTenant)
		}
	}
}

// A tenant's GPU-hour budget runs out while its job runs: its next GPU
// job waits with reason BUDGET, though the nodes have room, and the
// ledger in Postgres holds what was used (for the next leader).
func TestSchedulerBudgetHolds(t *testing.T) {
	b := setup(t)
	// 0.002 GPU-hours: 7.2 GPU-seconds, under a second of 8 GPUs.
	b.tenantIn(t, "a", "", 0, &tenant.Budget{GPUHours: 0.002})
	first := b.submit(t, "a", "first", 1, 8, 0)
	_, reg, stop := b.startWith(t, Config{ID: "s1", Period: 100 * time.Millisecond, UsageRefresh: 100 * time.Millisecond})
	require.Eventually(t, func() bool { return b.admitted(t, first) }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return budgetGauge(t, reg, "remaining") == 0 }, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, 0.002, budgetGauge(t, reg, "budget"))
	require.GreaterOrEqual(t, budgetGauge(t, reg, "used"), 0.002)

	next := b.submit(t, "a", "next", 1, 1, 0)
	require.Eventually(t, func() bool { return b.load(t, next).WaitReason == job.WaitBudget }, 10*time.Second, 20*time.Millisecond)
	require.False(t, b.admitted(t, next))
	var q map[string]job.QueueInfo
	require.Eventually(t, func() bool {
		var err error
		q, _, err = b.store.QueueGet(b.ctx, "a")
		require.NoError(t, err)
		return q[next.UID].Reason == job.WaitBudget
	}, 10*time.Second, 20*time.Millisecond)
	require.Contains(t, q[next.UID].Message, "GPU-hour budget is used up")
	require.Contains(t, q[next.UID].Message, "the period resets at")
	require.NotNil(t, q[next.UID].EstimatedStart)
	// The tenant's ledger metrics: GPUs held now, GPU-hours this month,
	// the oldest wait.
	require.Eventually(t, func() bool {
		return tenantMetric(t, reg, "trainyard_tenant_gpu_hours_total") >= 0.002 &&
			tenantMetric(t, reg, "trainyard_tenant_gpus_allocated") == 8 &&
			tenantMetric(t, reg, "trainyard_tenant_oldest_wait_seconds") >= 0 &&
			tenantMetric(t, reg, "trainyard_tenant_queue_length") == 1
	}, 10*time.Second, 50*time.Millisecond)
	// The queue samples (every UsageRefresh): the waiting job, and the
	// fake cluster's GPUs.
	require.Eventually(t, func() bool {
		rows, capacity, err := b.store.QueueHistoryQuery(b.ctx, store.QueueHistoryParams{Tenant: "a", Start: time.Now().Add(-time.Hour), End: time.Now().Add(time.Hour), Step: time.Hour})
		require.NoError(t, err)
		return len(rows) > 0 && rows[0].PendingJobsMax == 1 && rows[0].PendingGPUsMax == 1 && len(capacity) > 0 && capacity[0].GPUs > 0
	}, 10*time.Second, 50*time.Millisecond)

	stop()
	now := time.Now()
	led, err := b.store.UsageSharing(b.ctx, now, []store.SharingAsk{{Tenant: "a", BudgetFrom: (&tenant.Budget{}).PeriodStart(now)}})
	require.NoError(t, err)
	require.GreaterOrEqual(t, led["a"].BudgetGPUSeconds, 0.002*3600, "the ledger survives the leader")
}

// tenantMetric is tenant a's value of a gauge or counter; -1 when unset.
func tenantMetric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tenant" && l.GetValue() == "a" {
					return m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// budgetGauge is tenant a's trainyard_scheduler_tenant_budget_gpu_hours
// of the kind ("budget", "used", "remaining"); -1 when it is not set.
func budgetGauge(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "trainyard_scheduler_tenant_budget_gpu_hours" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["tenant"] == "a" && labels["kind"] == kind {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// A cohort's own pool (cohorts/{cohort}) is lent like members' unused
// nominal quota: a (4 nominal GPUs) and b (4) share cohort lab on 16 GPUs;
// a's two 8-GPU jobs need 12 borrowed, the members lend 8, so the second
// waits for quota until the cohort gets a pool of 8 of its own.
func TestSchedulerCohortPool(t *testing.T) {
	b := setup(t)
	b.tenantIn(t, "a", "lab", 4, nil)
	b.tenantIn(t, "b", "lab", 4, nil)
	a1 := b.submit(t, "a", "a1", 1, 8, 0)
	a2 := b.submit(t, "a", "a2", 1, 8, 0)
	_, reg, _ := b.start(t, "s1")
	require.Eventually(t, func() bool { return b.admitted(t, a1) }, 10*time.Second, 20*time.Millisecond)
	c := cycles(t, reg)
	require.Eventually(t, func() bool { return cycles(t, reg) >= c+2 }, 5*time.Second, 20*time.Millisecond)
	require.False(t, b.admitted(t, a2), "the members lend 8 GPUs in all: a borrows 4 for a1, a2 would need 8 more")
	require.Equal(t, job.WaitQuota, b.load(t, a2).WaitReason)

	_, err := b.store.CohortPut(b.ctx, tenant.Cohort{Name: "lab", Nominal: tenant.Quota{GPU: 8}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.admitted(t, a2) }, 10*time.Second, 20*time.Millisecond,
		"the cohort's own 8 GPUs are lent to a")
}
