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
