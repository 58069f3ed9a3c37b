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
	horizonAfterUpgrade := func(seed string) int64 {
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
		require.NoError(t, m.Up())
		var h int64
		require.NoError(t, conn.QueryRow(ctx, `SELECT deleted_through FROM event_horizon`).Scan(&h))
		return h
	}
	require.Zero(t, horizonAfterUpgrade(""))
	require.EqualValues(t, 41, horizonAfterUpgrade(`INSERT INTO job_events (id, tenant_id, job_uid, job_name, type, reason, message, state, create_time)
		VALUES (42, 't', gen_random_uuid(), 'j', 'Normal', 'Queued', '', 'QUEUED', now()),
		       (57, 't', gen_random_uuid(), 'j', 'Normal', 'Queued', '', 'QUEUED', now())`))
}
