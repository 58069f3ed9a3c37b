//go:build integration

package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/tenant"
)

// A cohort's own pool: put (create, then replace), get with its members,
// listed beside the cohorts tenants only name, read by the scheduler,
// deleted; every change audited under no tenant.
func TestCohorts(t *testing.T) {
	b := setup(t)
	for _, id := range []string{"a", "b", "c"} {
		cohort := "lab"
		if id == "c" {
			cohort = "other"
		}
		_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: id, Namespace: "ty-" + id, Quota: tenant.Quota{GPU: 8},
			Sharing: tenant.Sharing{Cohort: cohort}})
		require.NoError(t, err)
	}
	ctx := as(b.ctx, "root")

	_, err := b.store.CohortGet(b.ctx, "nobody")
	require.ErrorIs(t, err, ErrNotFound, "neither a pool nor a member")
	named, err := b.store.CohortGet(b.ctx, "lab")
	require.NoError(t, err, "a cohort tenants name exists without a pool")
	require.Equal(t, tenant.Cohort{Name: "lab", GPUTypes: map[string]int64{}, Tenants: []string{"a", "b"}}, named)

	got, err := b.store.CohortPut(ctx, tenant.Cohort{Name: "lab", Nominal: tenant.Quota{GPU: 16}, GPUTypes: map[string]int64{"A100": 16}})
	require.NoError(t, err)
	require.Equal(t, tenant.Quota{GPU: 16}, got.Nominal)
	require.Equal(t, map[string]int64{"A100": 16}, got.GPUTypes)
	require.Equal(t, []string{"a", "b"}, got.Tenants)
	require.False(t, got.CreateTime.IsZero())
	got, err = b.store.CohortPut(ctx, tenant.Cohort{Name: "lab", Nominal: tenant.Quota{GPU: 24}})
	require.NoError(t, err)
	require.Equal(t, tenant.Quota{GPU: 24}, got.Nominal, "put replaces")
	require.Empty(t, got.GPUTypes)
	_, err = b.store.CohortPut(ctx, tenant.Cohort{Name: "empty", Nominal: tenant.Quota{GPU: 4}})
	require.NoError(t, err, "a pool before any tenant names the cohort")

	list, err := b.store.CohortList(b.ctx)
	require.NoError(t, err)
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"empty", "lab", "other"}, names)
	require.Equal(t, []string{"c"}, list[2].Tenants)
	require.True(t, list[2].CreateTime.IsZero(), "no pool: no times")
	require.Empty(t, list[0].Tenants)

	read, err := b.store.SchedulerRead(b.ctx, 0)
	require.NoError(t, err)
	require.Len(t, read.Cohorts, 2)
	require.Equal(t, "lab", read.Cohorts[1].Name)
	require.Equal(t, tenant.Quota{GPU: 24}, read.Cohorts[1].Nominal)

	require.NoError(t, b.store.CohortDelete(ctx, "lab"))
	require.ErrorIs(t, b.store.CohortDelete(ctx, "lab"), ErrNotFound)
	named, err = b.store.CohortGet(b.ctx, "lab")
	require.NoError(t, err)
	require.Equal(t, tenant.Quota{}, named.Nominal, "its members still form the cohort")

	recs, _, err := b.store.AuditList(b.ctx, AuditListParams{Tenant: ""})
	require.NoError(t, err)
	var cohortActions []audit.Action
	for _, r := range recs {
		if r.Action == audit.CohortPut || r.Action == audit.CohortDelete {
			cohortActions = append(cohortActions, r.Action)
			require.Equal(t, "root", r.Actor.Subject)
			require.Empty(t, r.Tenant)
		}
	}
	require.Equal(t, []audit.Action{audit.CohortDelete, audit.CohortPut, audit.CohortPut, audit.CohortPut}, cohortActions, "newest first")
}
