//go:build integration

package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

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
