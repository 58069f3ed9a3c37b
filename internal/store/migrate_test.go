//go:build integration

package store

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestMigrateUpDownUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "trainyard_store_migrate_" + randomHex(4)
	require.NoError(t, databaseCreate(ctx, name))
	t.Cleanup(func() { _ = databaseDrop(context.Background(), name) })
	dbURL := databaseURLFor(adminURL, name)

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

	require.Zero(t, version())
	require.NoError(t, Migrate(ctx, dbURL, "up"))
	require.EqualValues(t, 2, version())
	require.Equal(t, 6, tables())
	require.NoError(t, Migrate(ctx, dbURL, "up"), "up when up to date is a no-op")

	require.NoError(t, Migrate(ctx, dbURL, "down"))
	require.Zero(t, version())
	require.Zero(t, tables())

	require.NoError(t, Migrate(ctx, dbURL, "up"))
	require.EqualValues(t, 2, version())
	require.Equal(t, 6, tables())

	require.Error(t, Migrate(ctx, dbURL, "sideways"))
}
