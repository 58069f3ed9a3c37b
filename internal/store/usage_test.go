//go:build integration

package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// A preemption across tenants keeps the preemptor's tenant through the
// requeue, and an admission records the GPU model it was counted against
// and the cluster it was placed in.
func TestSchedulerCommitAcrossTenants(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	victim := b.jobInState(t, "a", "borrower", job.Running, true)
	reclaimer := b.jobCreate(t, "b", "reclaimer", 1)
	anyModel := b.jobCreate(t, "b", "any-model", 1)

	res, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{
		Lease: b.lease(t), Admit: []JobKey{keyOf(anyModel)}, GPUTypes: map[JobKey]string{keyOf(anyModel): "H100"},
		Clusters: map[JobKey]string{keyOf(anyModel): "eu-west"},
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
			require.Equal(t, "eu-west", j.Cluster)
		case keyOf(reclaimer):
			require.Equal(t, DefaultCluster, j.Cluster, "not admitted: the column's default")
		}
	}
	got, err := b.store.JobGet(b.ctx, "b", "any-model")
	require.NoError(t, err)
	require.Equal(t, "H100", got.Status.GPUType, "the worker renders the node selector from the status")
	require.Equal(t, "eu-west", got.Status.Cluster, "GetJob says where it runs")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE cluster = 'eu-west'`))
}

// A tenant's sharing settings are kept as written.
func TestSharingSettingsKept(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a", Quota: tenant.Quota{GPU: 8},
		Sharing: tenant.Sharing{Cohort: "lab", Weight: 2, UsageHalfLifeSeconds: 3600, Budget: &tenant.Budget{GPUHours: 10}}})
	require.NoError(t, err)
	tn, err := b.store.TenantGet(b.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, tenant.Sharing{Cohort: "lab", Weight: 2, UsageHalfLifeSeconds: 3600, Budget: &tenant.Budget{GPUHours: 10}}, tn.Sharing)
}
