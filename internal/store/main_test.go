//go:build integration

package store

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/pgtest"
	"github.com/trainyard/trainyard/internal/tenant"
)

// The package gets its own database (pgtest.Run), migrated with Migrate;
// each test then gets its own schema in it (pgtest.Schema) holding a fresh
// copy of the tables, so that cross-tenant queries (the claim) only ever
// see the test's own rows.

func TestMain(m *testing.M) {
	os.Exit(pgtest.Run(m, "store", func(ctx context.Context, url string) error { return Migrate(ctx, url, "up") }))
}

// testBundle is what most tests need.
type testBundle struct {
	ctx   context.Context
	store *Store
	pool  *pgxpool.Pool
	// url connects to the test's schema (for a Listener).
	url string
}

// setup gives the test a fresh schema with the tables of every up
// migration, and a Store on it.
func setup(t testing.TB) *testBundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	pool, url := pgtest.Schema(t)
	return &testBundle{ctx: ctx, store: New(pool), pool: pool, url: url}
}

// tenantCreate creates an ACTIVE tenant with id (and namespace ty-<id>).
func (b *testBundle) tenantCreate(t testing.TB, id string, members ...tenant.Member) tenant.Tenant {
	t.Helper()
	tn, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: id, Namespace: "ty-" + id, Members: members})
	require.NoError(t, err)
	return tn
}

func testSpec() job.Spec {
	return job.Spec{
		Replicas: []job.ReplicaSpec{{
			Type: job.Worker, Count: 2, Image: "tensorflow/tensorflow:2.16.1",
			Command:       []string{"python", "train.py"},
			Resources:     job.Resources{CPU: "1", Memory: "1Gi", GPU: 1},
			Port:          job.DefaultPort,
			RestartPolicy: job.RestartOnFailure,
		}},
		RunPolicy: job.RunPolicy{BackoffLimit: 3, CleanPodPolicy: job.CleanRunning},
	}
}

// jobCreate creates a job named name in tenantID whose replica asks for
// gpu GPUs.
func (b *testBundle) jobCreate(t testing.TB, tenantID, name string, gpu int64) job.Job {
	t.Helper()
	spec := testSpec()
	spec.Replicas[0].Resources.GPU = int32(gpu)
	j, created, err := b.store.JobCreate(b.ctx, JobCreateParams{
		Job: job.Job{Tenant: tenantID, Name: name, Spec: spec, Creator: "alice"},
	})
	require.NoError(t, err)
	require.True(t, created)
	return j
}

// own makes worker own exactly the job key, as if it had claimed it. It
// goes around JobClaim so tests that are not about claiming pick their job.
func (b *testBundle) own(t testing.TB, worker string, key JobKey) WorkerJob {
	t.Helper()
	tag, err := b.pool.Exec(b.ctx, `
		WITH l AS (INSERT INTO worker_leases VALUES ($3, now() + interval '1 hour')
		           ON CONFLICT (worker_id) DO UPDATE SET expires_at = EXCLUDED.expires_at)
		UPDATE jobs SET worker_id = $3, version = version + 1 WHERE tenant_id = $1 AND uid = $2 AND active`, key.Tenant, key.UID, worker)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected(), "job %s is not active", key)
	w, err := b.store.JobLoad(b.ctx, key.Tenant, key.UID)
	require.NoError(t, err)
	return w
}

// lease takes the scheduler lease as the tests' scheduler.
func (b *testBundle) lease(t testing.TB) SchedulerLease {
	t.Helper()
	lease, ok, err := b.store.SchedulerLeaseAcquire(b.ctx, "test-scheduler", time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "the scheduler lease is held by someone else")
	return lease
}

// admit admits jobs as the scheduler does: under its lease, in one commit.
func (b *testBundle) admit(t testing.TB, keys ...JobKey) {
	t.Helper()
	lease := b.lease(t)
	res, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: lease, Admit: keys})
	require.NoError(t, err)
	require.Len(t, res.Admitted, len(keys))
}

// jobInState creates a job and, through its worker, moves it to state.
func (b *testBundle) jobInState(t testing.TB, tenantID, name string, state job.State, admitted bool) WorkerJob {
	t.Helper()
	j := b.jobCreate(t, tenantID, name, 1)
	key := JobKey{Tenant: tenantID, UID: j.UID}
	if admitted {
		b.admit(t, key)
	}
	w := b.own(t, "setup-worker", key)
	version := w.Version
	if state != job.Queued {
		st := w.Job.Status
		st.State = state
		_, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "setup-worker", Tenant: tenantID, UID: j.UID,
			Version: version, Status: st, Events: []job.Event{{Reason: string(state)}}})
		require.NoError(t, err)
	}
	w, err := b.store.JobLoad(b.ctx, tenantID, j.UID)
	require.NoError(t, err)
	return w
}

// exec runs a statement of the test's setup.
func (b *testBundle) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, sql, args...)
	require.NoError(t, err, sql)
}

// count returns the result of a count(*) query.
func (b *testBundle) count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

func keyOf(j job.Job) JobKey { return JobKey{Tenant: j.Tenant, UID: j.UID} }

func TestMigrateURL(t *testing.T) {
	got := pgtest.URLFor("postgres://u@h:5432/postgres?sslmode=disable", "x")
	require.True(t, strings.HasPrefix(migrateURL(got), "pgx5://u@h:5432/x"))
}
