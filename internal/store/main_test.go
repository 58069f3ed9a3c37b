//go:build integration

package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/migrations"
)

// The package gets its own database, created and migrated (with Migrate)
// in TestMain and dropped at the end. Each test then gets its own schema in
// it, holding a fresh copy of the tables, so that cross-tenant queries (the
// claim) only ever see the test's own rows.

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

var (
	adminURL   string // the server's maintenance database, from DATABASE_URL
	packageURL string // this package's database
	schemaSeq  atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	adminURL = os.Getenv("DATABASE_URL")
	if adminURL == "" {
		adminURL = defaultDatabaseURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "trainyard_store_" + randomHex(6)
	if err := databaseCreate(ctx, name); err != nil {
		// Store tests need Postgres: fail, never skip.
		fmt.Fprintf(os.Stderr, "store tests need Postgres at DATABASE_URL (%s): %v\n", redact(adminURL), err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := databaseDrop(ctx, name); err != nil {
			fmt.Fprintf(os.Stderr, "drop test database %s: %v\n", name, err)
		}
	}()
	packageURL = databaseURLFor(adminURL, name)
	if err := Migrate(ctx, packageURL, "up"); err != nil {
		fmt.Fprintf(os.Stderr, "migrate test database: %v\n", err)
		return 1
	}
	return m.Run()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func redact(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return "(unparseable)"
}

// databaseURLFor returns base with its database replaced by name.
func databaseURLFor(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

func adminExec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func databaseCreate(ctx context.Context, name string) error {
	return adminExec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
}

func databaseDrop(ctx context.Context, name string) error {
	return adminExec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// testBundle is what most tests need.
type testBundle struct {
	ctx    context.Context
	store  *Store
	pool   *pgxpool.Pool
	schema string
	// url connects to the test's schema (for a Listener).
	url string
}

// setup gives the test a fresh schema with the tables of every up
// migration, and a Store on it.
func setup(t testing.TB) *testBundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)

	schema := fmt.Sprintf("t%d_%s", schemaSeq.Add(1), randomHex(3))
	conn, err := pgx.Connect(ctx, packageURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema+"; SET search_path TO "+schema)
	require.NoError(t, err)
	for _, sql := range upMigrations(t) {
		_, err = conn.Exec(ctx, sql)
		require.NoError(t, err)
	}

	u, err := url.Parse(packageURL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	require.NoError(t, err)
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, packageURL)
		if err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			conn.Close(ctx)
		}
	})
	return &testBundle{ctx: ctx, store: New(pool), pool: pool, schema: schema, url: u.String()}
}

func upMigrations(t testing.TB) []string {
	names, err := fs.Glob(migrations.FS, "*.up.sql")
	require.NoError(t, err)
	sort.Strings(names)
	var out []string
	for _, n := range names {
		b, err := fs.ReadFile(migrations.FS, n)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	return out
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
	tag, err := b.pool.Exec(b.ctx, `UPDATE jobs SET worker_id = $3, lease_expires_at = now() + interval '1 hour',
		version = version + 1 WHERE tenant_id = $1 AND uid = $2 AND active`, key.Tenant, key.UID, worker)
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

// count returns the result of a count(*) query.
func (b *testBundle) count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

func keyOf(j job.Job) JobKey { return JobKey{Tenant: j.Tenant, UID: j.UID} }

func TestDatabaseURLFor(t *testing.T) {
	got := databaseURLFor("postgres://u@h:5432/postgres?sslmode=disable", "x")
	require.Equal(t, "postgres://u@h:5432/x?sslmode=disable", got)
	require.True(t, strings.HasPrefix(migrateURL(got), "pgx5://u@h:5432/x"))
}
