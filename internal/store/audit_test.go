//go:build integration

package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

func as(ctx context.Context, subject string) context.Context {
	return audit.WithActor(ctx, audit.Actor{Subject: subject, Groups: []string{"ml"}, Issuer: "https://idp.example.com",
		Request: audit.Request{Address: "192.0.2.7:5000", ID: "req-" + subject}})
}

func actions(t *testing.T, b *testBundle, p AuditListParams) []audit.Action {
	t.Helper()
	recs, _, err := b.store.AuditList(b.ctx, p)
	require.NoError(t, err)
	var out []audit.Action
	for i := len(recs) - 1; i >= 0; i-- { // oldest first, for reading
		out = append(out, recs[i].Action)
	}
	return out
}

// Every change an API caller makes is recorded with the change, by whom,
// from where, in which request; the system's own changes are not.
func TestAuditRecordsEveryChange(t *testing.T) {
	b := setup(t)
	admin := as(b.ctx, "root")
	_, err := b.store.TenantCreate(admin, tenant.Tenant{ID: "a", Namespace: "ty-a",
		Members: []tenant.Member{{Subject: "alice", Role: tenant.RoleEditor}, {Subject: "vera", Role: tenant.RoleViewer}}})
	require.NoError(t, err)
	_, err = b.store.TenantUpdate(admin, "a", func(t *tenant.Tenant) error {
		t.Members = t.Members[:1]
		t.Quota.GPU = 8
		return nil
	})
	require.NoError(t, err)
	_, err = b.store.TenantUpdate(admin, "a", func(*tenant.Tenant) error { return nil })
	require.NoError(t, err)

	alice := as(b.ctx, "alice")
	_, err = b.store.SecretPut(alice, tenant.Secret{Tenant: "a", Name: "hf", Keys: []string{"token"}})
	require.NoError(t, err)
	require.NoError(t, b.store.SecretDelete(alice, "a", "hf"))
	p := JobCreateParams{Job: job.Job{Tenant: "a", Name: "j", Spec: testSpec(), Creator: "alice"}, RequestID: "r1"}
	_, created, err := b.store.JobCreate(alice, p)
	require.NoError(t, err)
	require.True(t, created)
	_, created, err = b.store.JobCreate(alice, p)
	require.NoError(t, err)
	require.False(t, created, "a replay changes nothing")
	_, err = b.store.JobCancel(alice, "a", "j")
	require.NoError(t, err)
	require.NoError(t, b.store.JobDelete(alice, "a", "j"))

	// The system's own changes (no actor) are not recorded.
	_, err = b.store.TenantSetState(b.ctx, "a", tenant.Offboarding)
	require.NoError(t, err)

	require.Equal(t, []audit.Action{audit.TenantCreate, audit.TenantUpdate, audit.SecretPut, audit.SecretDelete,
		audit.JobCreate, audit.JobCancel, audit.JobDelete}, actions(t, b, AuditListParams{}))

	recs, _, err := b.store.AuditList(b.ctx, AuditListParams{Action: audit.TenantUpdate})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	r := recs[0]
	require.Equal(t, "a", r.Tenant)
	require.Equal(t, "tenants/a", r.Resource)
	require.Equal(t, audit.Actor{Subject: "root", Groups: []string{"ml"}, Issuer: "https://idp.example.com",
		Request: audit.Request{Address: "192.0.2.7:5000", ID: "req-root"}}, r.Actor)
	require.WithinDuration(t, time.Now(), r.Time, time.Minute)
	changed := r.Details["changed"].(map[string]any)
	require.Contains(t, changed, "members")
	require.Contains(t, changed, "quota")
	require.NotContains(t, changed, "displayName")

	recs, _, err = b.store.AuditList(b.ctx, AuditListParams{Action: audit.SecretPut})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"keys": []any{"token"}}, recs[0].Details, "key names, never values")
	recs, _, err = b.store.AuditList(b.ctx, AuditListParams{Action: audit.JobCreate})
	require.NoError(t, err)
	require.Equal(t, "tenants/a/jobs/j", recs[0].Resource)
	require.Equal(t, "r1", recs[0].Details["requestId"])

	// Offboarding by a caller is its own action.
	_, err = b.store.TenantCreate(admin, tenant.Tenant{ID: "b", Namespace: "ty-b"})
	require.NoError(t, err)
	_, err = b.store.TenantUpdate(admin, "b", func(t *tenant.Tenant) error { t.State = tenant.Offboarding; return nil })
	require.NoError(t, err)
	require.Equal(t, []audit.Action{audit.TenantCreate, audit.TenantOffboard}, actions(t, b, AuditListParams{Tenant: "b"}))
}

// A change that fails leaves no record: they commit together.
func TestAuditRecordCommitsWithItsChange(t *testing.T) {
	b := setup(t)
	ctx := as(b.ctx, "alice")
	b.tenantCreate(t, "a")
	_, err := b.store.TenantSetState(b.ctx, "a", tenant.Offboarding)
	require.NoError(t, err)
	_, _, err = b.store.JobCreate(ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: "j", Spec: testSpec()}})
	require.ErrorIs(t, err, ErrFailedPrecondition)
	_, err = b.store.TenantCreate(ctx, tenant.Tenant{ID: "a", Namespace: "ty-a"})
	require.ErrorIs(t, err, ErrAlreadyExists)
	require.Empty(t, actions(t, b, AuditListParams{}))
}

func TestAuditListFiltersAndPages(t *testing.T) {
	b := setup(t)
	for _, tc := range []struct{ tenant, subject string }{{"a", "root"}, {"b", "root"}, {"c", "ops"}} {
		_, err := b.store.TenantCreate(as(b.ctx, tc.subject), tenant.Tenant{ID: tc.tenant, Namespace: "ty-" + tc.tenant})
		require.NoError(t, err)
	}
	for i := range 5 {
		_, err := b.store.SecretPut(as(b.ctx, "alice"), tenant.Secret{Tenant: "a", Name: "s" + string(rune('0'+i))})
		require.NoError(t, err)
	}
	require.Len(t, actions(t, b, AuditListParams{Tenant: "a"}), 6)
	require.Len(t, actions(t, b, AuditListParams{Subject: "root"}), 2)
	require.Len(t, actions(t, b, AuditListParams{Subject: "root", Tenant: "b"}), 1)
	require.Len(t, actions(t, b, AuditListParams{Action: audit.SecretPut}), 5)
	require.Empty(t, actions(t, b, AuditListParams{Since: time.Now().Add(time.Hour)}))
	require.Empty(t, actions(t, b, AuditListParams{Until: time.Now().Add(-time.Hour)}))
	require.Len(t, actions(t, b, AuditListParams{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour)}), 8)

	// Keyset pages, newest first, each record once.
	var seen []int64
	var before int64
	for {
		page, next, err := b.store.AuditList(b.ctx, AuditListParams{PageSize: 3, BeforeID: before})
		require.NoError(t, err)
		for _, r := range page {
			seen = append(seen, r.ID)
		}
		if next == 0 {
			break
		}
		before = next
	}
	require.Len(t, seen, 8)
	for i := 1; i < len(seen); i++ {
		require.Less(t, seen[i], seen[i-1])
	}
}

// Records cannot be altered, even in the database; retention deletes old
// ones whole.
func TestAuditRecordsAreImmutableAndExpire(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(as(b.ctx, "root"), tenant.Tenant{ID: "a", Namespace: "ty-a"})
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `UPDATE audit_records SET subject = 'someone-else'`)
	require.ErrorContains(t, err, "audit records cannot be changed")

	n, err := b.store.AuditDeleteBefore(b.ctx, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = b.store.AuditDeleteBefore(b.ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Empty(t, actions(t, b, AuditListParams{}))
}
