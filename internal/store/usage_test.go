//go:build integration

package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// A preemption across tenants keeps the preemptor's tenant through the
// requeue, and an admission records the GPU model it was counted against.
func TestSchedulerCommitAcrossTenants(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	victim := b.jobInState(t, "a", "borrower", job.Running, true)
	reclaimer := b.jobCreate(t, "b", "reclaimer", 1)
	anyModel := b.jobCreate(t, "b", "any-model", 1)

	res, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{
		Lease: b.lease(t), Admit: []JobKey{keyOf(anyModel)}, GPUTypes: map[JobKey]string{keyOf(anyModel): "H100"},
		Preempt: []PreemptWrite{{Victim: keyOf(victim.Job), For: reclaimer.UID, ForTenant: "b",
			Message: `reclaim in cohort lab: job "reclaimer" of tenant b needs quota within its nominal share`}},
	})
	require.NoError(t, err)
	require.Len(t, res.Preempted, 1)
	read, err := b.store.SchedulerRead(b.ctx, 0)
	require.NoError(t, err)
	for _, j := range read.Jobs {
		switch j.Key {
		case keyOf(victim.Job):
			require.Equal(t, reclaimer.UID, j.PreemptFor)
			require.Equal(t, "b", j.PreemptorTenant)
		case keyOf(anyModel):
			require.Equal(t, "H100", j.GPUType)
		}
	}
	got, err := b.store.JobGet(b.ctx, "b", "any-model")
	require.NoError(t, err)
	require.Equal(t, "H100", got.Status.GPUType, "the worker renders the node selector from the status")
}

// The usage ledger: written by the lease holder only, GPU-seconds added
// per day, decayed usage replaced, and tenants' sharing settings kept.
func TestUsageLedger(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a", Quota: tenant.Quota{GPU: 8},
		Sharing: tenant.Sharing{Cohort: "lab", Weight: 2, UsageHalfLifeSeconds: 3600, Budget: &tenant.Budget{GPUHours: 10}}})
	require.NoError(t, err)
	tn, err := b.store.TenantGet(b.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, tenant.Sharing{Cohort: "lab", Weight: 2, UsageHalfLifeSeconds: 3600, Budget: &tenant.Budget{GPUHours: 10}}, tn.Sharing)

	lease := b.lease(t)
	now := time.Now().UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	for range 2 {
		require.NoError(t, b.store.UsageLedgerWrite(b.ctx, lease, now, map[string]UsageWrite{
			"a":    {Decayed: map[string]float64{"nvidia.com/gpu": 4}, AddGPUSeconds: 1800, Day: now},
			"gone": {AddGPUSeconds: 5, Day: now},
		}))
	}
	got, err := b.store.UsageLedgerRead(b.ctx, "")
	require.NoError(t, err)
	require.Len(t, got, 1, "a tenant that does not exist is skipped")
	require.Equal(t, map[time.Time]float64{day: 3600}, got["a"].GPUSeconds)
	require.Equal(t, 4.0, got["a"].Decayed["nvidia.com/gpu"])
	require.WithinDuration(t, now, got["a"].UpdateTime, time.Millisecond)

	stale := lease
	stale.Epoch--
	err = b.store.UsageLedgerWrite(b.ctx, stale, now, map[string]UsageWrite{"a": {AddGPUSeconds: 1, Day: now}})
	require.ErrorIs(t, err, ErrLeaseLost)
}
