//go:build integration

package store

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

func TestTenantCreateGet(t *testing.T) {
	b := setup(t)
	in := tenant.Tenant{
		ID: "vision", DisplayName: "Vision team", Namespace: "ty-vision",
		Labels:          map[string]string{"cost-center": "42"},
		Quota:           tenant.Quota{GPU: 8, CPU: "64", Memory: "256Gi", Pods: 100},
		PodReaderGroups: []string{"vision-devs"},
		Members: []tenant.Member{
			{Subject: "alice", Role: tenant.RoleAdmin},
			{Group: "vision-devs", Role: tenant.RoleEditor},
			{Subject: "bob", Role: tenant.RoleViewer},
		},
	}
	got, err := b.store.TenantCreate(b.ctx, in)
	require.NoError(t, err)
	require.Equal(t, tenant.Active, got.State)
	require.False(t, got.CreateTime.IsZero())
	require.Equal(t, got.CreateTime, got.UpdateTime)
	in.State, in.CreateTime, in.UpdateTime = got.State, got.CreateTime, got.UpdateTime
	require.Equal(t, in, got, "members keep their order")

	again, err := b.store.TenantGet(b.ctx, "vision")
	require.NoError(t, err)
	require.Equal(t, got, again)

	_, err = b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "vision", Namespace: "x"})
	require.ErrorIs(t, err, ErrAlreadyExists)
	_, err = b.store.TenantGet(b.ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "bad", Namespace: "x",
		Members: []tenant.Member{{Subject: "a", Group: "g", Role: tenant.RoleViewer}}})
	require.ErrorIs(t, err, ErrFailedPrecondition)
	_, err = b.store.TenantGet(b.ctx, "bad")
	require.ErrorIs(t, err, ErrNotFound, "a failed create leaves nothing behind")
}

func TestTenantList(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a", tenant.Member{Subject: "alice", Role: tenant.RoleViewer})
	b.tenantCreate(t, "b", tenant.Member{Group: "ml", Role: tenant.RoleEditor})
	b.tenantCreate(t, "c", tenant.Member{Subject: "alice", Role: tenant.RoleAdmin}, tenant.Member{Group: "ml", Role: tenant.RoleViewer})
	b.tenantCreate(t, "d", tenant.Member{Subject: "carol", Role: tenant.RoleAdmin})

	ids := func(p TenantListParams) []string {
		t.Helper()
		var out []string
		for {
			page, err := b.store.TenantList(b.ctx, p)
			require.NoError(t, err)
			for _, tn := range page {
				out = append(out, tn.ID)
			}
			if len(page) == 0 {
				return out
			}
			p.After = page[len(page)-1].ID
		}
	}
	require.Equal(t, []string{"a", "b", "c", "d"}, ids(TenantListParams{All: true, PageSize: 3}))
	require.Equal(t, []string{"a", "b", "c", "d"}, ids(TenantListParams{All: true, PageSize: 1}))
	require.Equal(t, []string{"a", "c"}, ids(TenantListParams{Subject: "alice"}))
	require.Equal(t, []string{"b", "c"}, ids(TenantListParams{Subject: "mallory", Groups: []string{"ml", "x"}}))
	require.Equal(t, []string{"a", "b", "c"}, ids(TenantListParams{Subject: "alice", Groups: []string{"ml"}, PageSize: 2}))
	require.Empty(t, ids(TenantListParams{Subject: "mallory"}))
	require.Empty(t, ids(TenantListParams{}), "an empty subject matches nobody")

	all, err := b.store.TenantListAll(b.ctx)
	require.NoError(t, err)
	require.Len(t, all, 4)
	require.Len(t, all[2].Members, 2)
}

func TestTenantUpdate(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a", tenant.Member{Subject: "alice", Role: tenant.RoleAdmin})

	got, err := b.store.TenantUpdate(b.ctx, "a", func(tn *tenant.Tenant) error {
		tn.Quota.GPU = 4
		tn.Members = []tenant.Member{{Group: "ml", Role: tenant.RoleViewer}, {Subject: "bob", Role: tenant.RoleEditor}}
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 4, got.Quota.GPU)
	require.Equal(t, []tenant.Member{{Group: "ml", Role: tenant.RoleViewer}, {Subject: "bob", Role: tenant.RoleEditor}}, got.Members)
	require.True(t, got.UpdateTime.After(got.CreateTime) || got.UpdateTime.Equal(got.CreateTime))

	page, err := b.store.TenantList(b.ctx, TenantListParams{Subject: "alice"})
	require.NoError(t, err)
	require.Empty(t, page, "the members table was rewritten")

	boom := errors.New("boom")
	_, err = b.store.TenantUpdate(b.ctx, "a", func(tn *tenant.Tenant) error {
		tn.Quota.GPU = 99
		return boom
	})
	require.ErrorIs(t, err, boom)
	_, err = b.store.TenantUpdate(b.ctx, "a", func(tn *tenant.Tenant) error { tn.ID = "b"; return nil })
	require.ErrorIs(t, err, ErrFailedPrecondition)
	_, err = b.store.TenantUpdate(b.ctx, "zzz", func(*tenant.Tenant) error { return nil })
	require.ErrorIs(t, err, ErrNotFound)

	got, err = b.store.TenantSetState(b.ctx, "a", tenant.Offboarding)
	require.NoError(t, err)
	require.Equal(t, tenant.Offboarding, got.State)
	require.EqualValues(t, 4, got.Quota.GPU, "a failed update changed nothing")
}

// TestTenantUsage: a tenant's usage is the demand of its admitted jobs
// that have not finished; queued jobs not admitted yet, finished jobs and
// other tenants' jobs do not count.
func TestTenantUsage(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	b.jobInState(t, "a", "running", job.Running, true) // 2 workers of 1 GPU, 1 CPU, 1Gi
	b.jobInState(t, "a", "admitted", job.Queued, true)
	b.jobInState(t, "a", "waiting", job.Queued, false)
	b.jobInState(t, "a", "done", job.Succeeded, true)
	b.jobInState(t, "b", "other", job.Running, true)

	got, err := b.store.TenantUsage(b.ctx, "a")
	require.NoError(t, err)
	var want job.Vector
	want[job.GPU], want[job.Pods] = 4, 4
	want[job.CPU], want[job.Memory] = 4000, 4<<30
	require.Equal(t, want, got)

	got, err = b.store.TenantUsage(b.ctx, "nobody")
	require.NoError(t, err)
	require.True(t, got.IsZero())
}
