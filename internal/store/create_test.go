//go:build integration

package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

func batchItems(tenantID string, names ...string) []JobCreateParams {
	items := make([]JobCreateParams, len(names))
	for i, n := range names {
		items[i] = JobCreateParams{Job: job.Job{Tenant: tenantID, Name: n, Spec: testSpec(), Creator: "alice"}, RequestID: "req-" + n}
	}
	return items
}

// itemIndexes are the indexes a *BatchError names.
func itemIndexes(t *testing.T, err error) []int {
	t.Helper()
	var be *BatchError
	require.ErrorAs(t, err, &be)
	var out []int
	for _, it := range be.Items {
		out = append(out, it.Index)
	}
	return out
}

func TestJobCreateMany(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	_, err := b.store.TenantUpdate(b.ctx, "b", func(tn *tenant.Tenant) error { tn.State = tenant.Offboarding; return nil })
	require.NoError(t, err)
	b.jobCreate(t, "a", "taken", 0)

	tests := []struct {
		name    string
		tenant  string
		items   []JobCreateParams
		wantErr error
		items_  []int // indexes the error names
	}{
		{name: "a name already taken", tenant: "a", items: batchItems("a", "x0", "taken", "x2"),
			wantErr: ErrAlreadyExists, items_: []int{1}},
		{name: "a name twice in the batch", tenant: "a", items: func() []JobCreateParams {
			it := batchItems("a", "y0", "y1", "y0")
			it[2].RequestID = "req-y2"
			return it
		}(), wantErr: ErrAlreadyExists, items_: []int{2}},
		{name: "a request id twice", tenant: "a", items: func() []JobCreateParams {
			it := batchItems("a", "z0", "z1")
			it[1].RequestID = it[0].RequestID
			return it
		}(), wantErr: ErrFailedPrecondition, items_: []int{1}},
		{name: "another tenant's job", tenant: "a", items: append(batchItems("a", "w0"), batchItems("b", "w1")...),
			wantErr: ErrFailedPrecondition, items_: []int{1}},
		{name: "a bad uid", tenant: "a", items: func() []JobCreateParams {
			it := batchItems("a", "u0", "u1")
			it[1].Job.UID = "nope"
			return it
		}(), wantErr: ErrFailedPrecondition, items_: []int{1}},
		{name: "an offboarding tenant", tenant: "b", items: batchItems("b", "v0"), wantErr: ErrFailedPrecondition},
		{name: "no such tenant", tenant: "c", items: batchItems("c", "v0"), wantErr: ErrNotFound},
		{name: "too many", tenant: "a", items: make([]JobCreateParams, MaxBatchCreate+1), wantErr: ErrFailedPrecondition},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.store.JobCreateMany(b.ctx, tc.tenant, tc.items)
			require.ErrorIs(t, err, tc.wantErr)
			if tc.items_ != nil {
				require.Equal(t, tc.items_, itemIndexes(t, err))
			} else {
				var be *BatchError
				require.False(t, errors.As(err, &be), "the batch's error, not each item's: %v", err)
			}
		})
	}
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs`), "a failed batch writes nothing")
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM idempotency_keys`))

	// A good one: every job with its event, key and audit record, in order.
	ctx := audit.WithActor(b.ctx, audit.Actor{Subject: "alice"})
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("ok-%03d", i)
	}
	items := batchItems("a", names...)
	items[5].RequestID = "" // mixed: some without a request id
	out, err := b.store.JobCreateMany(ctx, "a", items)
	require.NoError(t, err)
	require.Len(t, out, len(names))
	for i, c := range out {
		require.True(t, c.Created)
		require.Equal(t, names[i], c.Job.Name)
		require.Equal(t, job.Queued, c.Job.Status.State)
		require.Equal(t, "alice", c.Job.Creator)
		if i > 0 {
			require.Greater(t, c.Job.UID, out[i-1].Job.UID, "uids (UUIDv7) in item order")
		}
	}
	require.Equal(t, 300, b.count(t, `SELECT count(*) FROM job_events WHERE job_name LIKE 'ok-%' AND reason = 'Queued'`))
	require.Equal(t, 299, b.count(t, `SELECT count(*) FROM idempotency_keys WHERE request_id LIKE 'req-ok-%'`))
	require.Equal(t, 300, b.count(t, `SELECT count(*) FROM audit_records WHERE action = 'job.create' AND subject = 'alice'`))
	events, err := b.store.EventListTenant(b.ctx, "a", 0, 1000)
	require.NoError(t, err)
	require.Equal(t, "taken", events[0].Job)
	for i, e := range events[1:] {
		require.Equal(t, names[i], e.Job, "events in item order")
	}
}

// A batch retried with the same request ids creates nothing new and
// returns the first jobs, also when mixed with new items; concurrent
// retries of one batch create each job once.
func TestJobCreateManyIdempotent(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	first, err := b.store.JobCreateMany(b.ctx, "a", batchItems("a", "p0", "p1", "p2"))
	require.NoError(t, err)

	retry := batchItems("a", "p0", "p1", "p2", "p3")
	retry[1].Job.Name = "renamed" // a replay is not compared with the first request
	again, err := b.store.JobCreateMany(b.ctx, "a", retry)
	require.NoError(t, err)
	for i := range 3 {
		require.False(t, again[i].Created, "item %d replayed", i)
		require.Equal(t, first[i].Job.UID, again[i].Job.UID)
	}
	require.True(t, again[3].Created)
	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM jobs`))

	items := batchItems("a", "c0", "c1", "c2", "c3", "c4")
	const callers = 6
	var wg sync.WaitGroup
	results := make([][]JobCreated, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = b.store.JobCreateMany(b.ctx, "a", items)
		}()
	}
	wg.Wait()
	created := 0
	for i := range callers {
		require.NoError(t, errs[i])
		for k, c := range results[i] {
			require.Equal(t, results[0][k].Job.UID, c.Job.UID, "every caller gets the same job for item %d", k)
			if c.Created {
				created++
			}
		}
	}
	require.Equal(t, len(items), created, "each job created once")
	require.Equal(t, 9, b.count(t, `SELECT count(*) FROM jobs`))

	// A replayed item whose job was deleted is NOT_FOUND, by index.
	_, err = b.store.JobCancel(b.ctx, "a", "c2")
	require.NoError(t, err)
	require.NoError(t, b.store.JobDelete(b.ctx, "a", "c2"))
	_, err = b.store.JobCreateMany(b.ctx, "a", items)
	require.ErrorIs(t, err, ErrNotFound)
	require.Equal(t, []int{2}, itemIndexes(t, err))
	require.False(t, errors.Is(err, ErrAlreadyExists))
}

// Concurrent JobCreates of several tenants and callers share statements
// (createshare.go), and each caller still gets its own outcome: its job, a
// replay of its earlier request, a name taken, a tenant not active; each
// job's audit record names the caller who asked for it.
func TestJobCreateConcurrentCallers(t *testing.T) {
	b := setup(t)
	for _, id := range []string{"a", "b", "c"} {
		b.tenantCreate(t, id)
	}
	b.tenantCreate(t, "gone")
	_, err := b.store.TenantUpdate(b.ctx, "gone", func(tn *tenant.Tenant) error { tn.State = tenant.Offboarding; return nil })
	require.NoError(t, err)
	taken := b.jobCreate(t, "a", "taken", 0)
	replayed, created, err := b.store.JobCreate(b.ctx, JobCreateParams{
		Job: job.Job{Tenant: "b", Name: "first", Spec: testSpec()}, RequestID: "again"})
	require.NoError(t, err)
	require.True(t, created)
	statements0 := b.store.creates.sent.Load()

	type call struct {
		tenant, name, request, subject string
		want                           error
		replay                         bool
	}
	var calls []call
	for i := range 60 {
		tn := []string{"a", "b", "c"}[i%3]
		calls = append(calls, call{tenant: tn, name: fmt.Sprintf("j%02d", i), request: fmt.Sprintf("r%02d", i), subject: fmt.Sprintf("user-%d", i%7)})
	}
	calls = append(calls,
		call{tenant: "a", name: "taken", subject: "mallory", want: ErrAlreadyExists},
		call{tenant: "b", name: "second", request: "again", subject: "bob", replay: true},
		call{tenant: "gone", name: "late", subject: "carol", want: ErrFailedPrecondition},
		call{tenant: "nope", name: "x", subject: "dave", want: ErrNotFound},
	)
	got := make([]job.Job, len(calls))
	gotCreated := make([]bool, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			ctx := audit.WithActor(b.ctx, audit.Actor{Subject: c.subject, Groups: []string{"g-" + c.subject}, Issuer: "test"})
			got[i], gotCreated[i], errs[i] = b.store.JobCreate(ctx, JobCreateParams{
				Job: job.Job{Tenant: c.tenant, Name: c.name, Spec: testSpec(), Creator: c.subject}, RequestID: c.request})
		})
	}
	wg.Wait()
	for i, c := range calls {
		switch {
		case c.want != nil:
			require.ErrorIs(t, errs[i], c.want, "%s/%s", c.tenant, c.name)
			require.Empty(t, got[i].UID)
		case c.replay:
			require.NoError(t, errs[i])
			require.False(t, gotCreated[i])
			require.Equal(t, replayed.UID, got[i].UID)
		default:
			require.NoError(t, errs[i], "%s/%s", c.tenant, c.name)
			require.True(t, gotCreated[i])
			require.Equal(t, c.name, got[i].Name)
			require.Equal(t, c.tenant, got[i].Tenant)
			read, err := b.store.JobGet(b.ctx, c.tenant, c.name)
			require.NoError(t, err)
			require.Equal(t, read.UID, got[i].UID)
			require.Equal(t, job.Queued, read.Status.State)
		}
	}
	still, err := b.store.JobGet(b.ctx, "a", "taken")
	require.NoError(t, err)
	require.Equal(t, taken.UID, still.UID, "the taken name's job is untouched")
	require.Equal(t, 62, b.count(t, `SELECT count(*) FROM jobs`))
	require.Equal(t, 62, b.count(t, `SELECT count(*) FROM job_events WHERE reason = 'Queued'`))
	require.Equal(t, 61, b.count(t, `SELECT count(*) FROM idempotency_keys`))
	statements := b.store.creates.sent.Load() - statements0
	t.Logf("%d creates in %d statements", len(calls), statements)
	require.Less(t, statements, int64(len(calls)), "concurrent creates share statements")

	// Each created job has one audit record, of its own caller.
	for i, c := range calls {
		if c.want != nil || c.replay {
			continue
		}
		recs, _, err := b.store.AuditList(b.ctx, AuditListParams{Tenant: c.tenant, Subject: c.subject, Action: audit.JobCreate, PageSize: 100})
		require.NoError(t, err)
		var mine []audit.Record
		for _, r := range recs {
			if r.Details["uid"] == got[i].UID {
				mine = append(mine, r)
			}
		}
		require.Len(t, mine, 1, "%s/%s", c.tenant, c.name)
		require.Equal(t, []string{"g-" + c.subject}, mine[0].Actor.Groups)
		require.Equal(t, "test", mine[0].Actor.Issuer)
		require.Equal(t, c.request, mine[0].Details["requestId"])
	}
	require.Equal(t, 60, b.count(t, `SELECT count(*) FROM audit_records WHERE action = 'job.create'`))
}

// TestJobCreateChecksCallerRole: a create with a Caller is refused with a
// *RoleError, creating nothing, unless the tenant's members give the
// caller the role now, by subject or by group; a member removed is
// refused by the next create, and the refusal says what role they have.
func TestJobCreateChecksCallerRole(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a",
		tenant.Member{Subject: "ed", Role: tenant.RoleEditor},
		tenant.Member{Subject: "vi", Role: tenant.RoleViewer},
		tenant.Member{Group: "ml", Role: tenant.RoleEditor})
	b.tenantCreate(t, "b", tenant.Member{Subject: "other", Role: tenant.RoleAdmin})
	create := func(name string, c *RoleCheck) error {
		_, _, err := b.store.JobCreate(b.ctx, JobCreateParams{
			Job: job.Job{Tenant: "a", Name: name, Spec: testSpec(), Creator: "x"}, RequestID: "req-" + name, Caller: c})
		return err
	}
	editor := func(subject string, groups ...string) *RoleCheck {
		return &RoleCheck{Subject: subject, Groups: groups, Role: tenant.RoleEditor}
	}
	tests := []struct {
		name   string
		caller *RoleCheck
		want   *RoleError // nil: created
	}{
		{"an editor by subject", editor("ed"), nil},
		{"an editor by group", editor("someone", "ml"), nil},
		{"no check", nil, nil},
		{"a viewer", editor("vi"), &RoleError{Tenant: "a", Have: tenant.RoleViewer, Need: tenant.RoleEditor}},
		{"a stranger", editor("nobody", "ops"), &RoleError{Tenant: "a", Need: tenant.RoleEditor}},
		{"another tenant's admin", editor("other"), &RoleError{Tenant: "a", Need: tenant.RoleEditor}},
		{"an empty subject matches no member", editor(""), &RoleError{Tenant: "a", Need: tenant.RoleEditor}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("j%d", i)
			err := create(name, tc.caller)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			var re *RoleError
			require.ErrorAs(t, err, &re)
			require.Equal(t, tc.want, re)
			require.Zero(t, b.count(t, `SELECT count(*) FROM jobs WHERE tenant_id = 'a' AND name = $1`, name))
			require.Zero(t, b.count(t, `SELECT count(*) FROM idempotency_keys WHERE tenant_id = 'a' AND request_id = $1`, "req-"+name))
		})
	}

	// Revoked: the next create is refused, without anything in between.
	require.NoError(t, create("before", editor("ed")))
	_, err := b.store.TenantUpdate(b.ctx, "a", func(tn *tenant.Tenant) error {
		tn.Members = []tenant.Member{{Subject: "vi", Role: tenant.RoleViewer}}
		return nil
	})
	require.NoError(t, err)
	var re *RoleError
	require.ErrorAs(t, create("after", editor("ed")), &re)
	require.Equal(t, tenant.RoleNone, re.Have)

	// Shared statements: each item's caller is checked on its own.
	var (
		wg   sync.WaitGroup
		errs = make([]error, 20)
	)
	for i := range errs {
		c := editor("vi")
		if i%2 == 0 {
			c = nil
		}
		wg.Go(func() { errs[i] = create(fmt.Sprintf("shared-%d", i), c) })
	}
	wg.Wait()
	for i, err := range errs {
		if i%2 == 0 {
			require.NoError(t, err, "item %d", i)
		} else {
			require.ErrorAs(t, err, &re, "item %d", i)
		}
	}
}

// The create statement runs on its prepared generic plan (sqlGenericPlans):
// planned once per connection, not once per create.
func TestJobCreatePlansGenerically(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "acme")
	cfg, err := pgxpool.ParseConfig(b.url)
	require.NoError(t, err)
	cfg.MaxConns = 1 // pg_prepared_statements is the session's own
	pool, err := pgxpool.NewWithConfig(b.ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := New(pool)
	for i := range 8 {
		_, _, err := st.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "acme", Name: fmt.Sprintf("g-%d", i), Spec: testSpec()}})
		require.NoError(t, err)
	}
	var generic, custom int64
	require.NoError(t, pool.QueryRow(b.ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE '%INSERT INTO idempotency_keys%'`).Scan(&generic, &custom))
	require.Equal(t, int64(8), generic, "creates on the generic plan")
	require.Zero(t, custom, "creates planned for their arguments")
	var mode string
	require.NoError(t, pool.QueryRow(b.ctx, `SHOW plan_cache_mode`).Scan(&mode))
	require.Equal(t, "auto", mode, "the setting ends with the create's transaction")
}
