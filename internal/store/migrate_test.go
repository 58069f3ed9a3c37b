//go:build integration

package store

import (
	"context"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/pgtest"
	"github.com/trainyard/trainyard/migrations"
)

func TestMigrateUpDownUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbURL := pgtest.NewDatabase(t)

	tables := func() int {
		conn, err := pgx.Connect(ctx, dbURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'
			AND tablename IN ('tenants', 'tenant_members', 'jobs', 'job_events', 'idempotency_keys', 'secrets')`).Scan(&n))
		return n
	}
	version := func() uint {
		v, dirty, err := MigrationVersion(ctx, dbURL)
		require.NoError(t, err)
		require.False(t, dirty)
		return v
	}

	// The newest migration, whatever it is: a new one must not need this test edited.
	entries, err := fs.Glob(migrations.FS, "*.up.sql")
	require.NoError(t, err)
	slices.Sort(entries)
	latest, err := strconv.Atoi(strings.SplitN(entries[len(entries)-1], "_", 2)[0])
	require.NoError(t, err)

	require.Zero(t, version())
	require.NoError(t, Migrate(ctx, dbURL, "up"))
	require.EqualValues(t, latest, version())
	require.Equal(t, 6, tables())
	require.NoError(t, Migrate(ctx, dbURL, "up"), "up when up to date is a no-op")

	require.NoError(t, Migrate(ctx, dbURL, "down"))
	require.Zero(t, version())
	require.Zero(t, tables())

	require.NoError(t, Migrate(ctx, dbURL, "up"))
	require.EqualValues(t, latest, version())
	require.Equal(t, 6, tables())

	require.Error(t, Migrate(ctx, dbURL, "sideways"))
}

// Migration 000008 starts the event horizon where what was deleted before
// it may end: below the oldest event left on a database that has events,
// and at 0 on one without jobs, which has lost none.
func TestMigrateEventHorizonStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// horizonAfterUpgrade seeds a database at version 7, migrates it and
	// returns the horizon it started with, and the event watermark just
	// before and just after the migration.
	horizonAfterUpgrade := func(seed string) (h, before, after int64) {
		dbURL := pgtest.NewDatabase(t)
		m, err := newMigrate(dbURL)
		require.NoError(t, err)
		defer m.Close()
		require.NoError(t, m.Migrate(7))
		conn, err := pgx.Connect(ctx, dbURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		if seed != "" {
			_, err = conn.Exec(ctx, seed)
			require.NoError(t, err)
		}
		watermark := func() (w int64) {
			require.NoError(t, conn.QueryRow(ctx, `SELECT trainyard_event_watermark()`).Scan(&w))
			return w
		}
		before = watermark()
		require.NoError(t, m.Up())
		after = watermark()
		require.NoError(t, conn.QueryRow(ctx, `SELECT deleted_through FROM event_horizon`).Scan(&h))
		return h, before, after
	}
	first := func(h, _, _ int64) int64 { return h }
	// A database without jobs has lost no event.
	require.Zero(t, first(horizonAfterUpgrade("")))
	// With events left, everything below the oldest may have been deleted.
	require.EqualValues(t, 41, first(horizonAfterUpgrade(`INSERT INTO job_events (id, tenant_id, job_uid, job_name, type, reason, message, state, create_time)
		VALUES (42, 't', gen_random_uuid(), 'j', 'Normal', 'Queued', '', 'QUEUED', now()),
		       (57, 't', gen_random_uuid(), 'j', 'Normal', 'Queued', '', 'QUEUED', now())`)))
	// Jobs whose events are all gone (retention before there was a
	// horizon): every event written before the migration may have been
	// deleted, so the horizon is the watermark of the migration's moment.
	h, before, after := horizonAfterUpgrade(`
		INSERT INTO tenants (id, namespace, create_time, update_time) VALUES ('t', 'ty-t', now(), now());
		INSERT INTO jobs (tenant_id, uid, name, spec, status, state, create_time, update_time)
		VALUES ('t', gen_random_uuid(), 'j', '{}', '{}', 'SUCCEEDED', now(), now())`)
	require.Positive(t, before)
	require.GreaterOrEqual(t, h, before-1)
	require.LessOrEqual(t, h, after-1)
}

// Migration 000025 moves the ledger's open spans into their jobs' rows
// (an open span of a job gone ends), and its down migration moves them
// back; closed spans stay as they are.
func TestMigrateLedgerOpenSpans(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbURL := pgtest.NewDatabase(t)
	m, err := newMigrate(dbURL)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Migrate(24))
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
		INSERT INTO tenants (id, namespace, create_time, update_time) VALUES ('t', 'ty-t', now(), now());
		INSERT INTO jobs (tenant_id, uid, name, spec, status, state, create_time, update_time, creator, labels)
		VALUES ('t', '00000000-0000-0000-0000-000000000001', 'run', '{}', '{}', 'RUNNING', now(), now(), 'alice', '{"team": "vision"}');
		INSERT INTO usage_intervals (tenant_id, job_uid, creator, labels, gpus, cpu_millis, memory_bytes, pods, start_time, end_time, rolled_to) VALUES
		    ('t', '00000000-0000-0000-0000-000000000001', 'alice', '{"team": "vision"}', 2, 4000, 1024, 1, '2026-01-01 08:00Z', '2026-01-01 09:00Z', '2026-01-01 09:00Z'),
		    ('t', '00000000-0000-0000-0000-000000000001', 'alice', '{"team": "vision"}', 2, 4000, 1024, 1, '2026-01-01 10:00Z', NULL, '2026-01-01 11:00Z'),
		    ('t', '00000000-0000-0000-0000-000000000002', 'bob', '{}', 1, 1000, 1, 1, '2026-01-01 10:00Z', NULL, '2026-01-01 10:00Z')`)
	require.NoError(t, err)

	require.NoError(t, m.Migrate(25))
	var (
		since, rolled          time.Time
		gpus, cpu, mem, pods   int64
		open, closed, orphaned int
	)
	require.NoError(t, conn.QueryRow(ctx, `SELECT ledger_since, ledger_rolled, ledger_gpus, ledger_cpu_millis, ledger_memory_bytes, ledger_pods
		FROM jobs WHERE uid = '00000000-0000-0000-0000-000000000001'`).Scan(&since, &rolled, &gpus, &cpu, &mem, &pods))
	require.Equal(t, time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC), since.UTC())
	require.Equal(t, time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC), rolled.UTC())
	require.Equal(t, []int64{2, 4000, 1024, 1}, []int64{gpus, cpu, mem, pods})
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE job_uid = '00000000-0000-0000-0000-000000000001'),
		count(*) FILTER (WHERE job_uid = '00000000-0000-0000-0000-000000000002') FROM usage_intervals`).Scan(&closed, &orphaned))
	require.Equal(t, 1, closed, "the closed span stays, the open one moved")
	require.Equal(t, 1, orphaned, "the open span of a job gone ends")

	require.NoError(t, m.Migrate(24))
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM usage_intervals
		WHERE job_uid = '00000000-0000-0000-0000-000000000001' AND end_time IS NULL
		  AND start_time = '2026-01-01 10:00Z' AND rolled_to = '2026-01-01 11:00Z' AND gpus = 2 AND cpu_millis = 4000
		  AND memory_bytes = 1024 AND pods = 1 AND creator = 'alice' AND labels = '{"team": "vision"}'`).Scan(&open))
	require.Equal(t, 1, open, "down: the open span is a row again")
}
