//go:build integration

package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { os.Exit(Run(m, "pgtest", nil)) }

func TestNewDatabase(t *testing.T) {
	ctx := context.Background()
	var url string
	ok := t.Run("fresh", func(t *testing.T) {
		url = NewDatabase(t)
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var name string
		require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&name))
		require.Contains(t, url, "/"+name)
		var tables int
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").Scan(&tables))
		require.Zero(t, tables)
	})
	require.True(t, ok)
	// The subtest's cleanup dropped its database.
	_, err := pgx.Connect(ctx, url)
	require.Error(t, err)
	require.Contains(t, err.Error(), "does not exist")
}

// Each test's schema has every migration's tables, and only its own rows.
func TestSchema(t *testing.T) {
	ctx := context.Background()
	var schema string
	for i := range 2 {
		ok := t.Run("schema", func(t *testing.T) {
			pool, url := Schema(t)
			var n int
			require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM tenants").Scan(&n))
			require.Zero(t, n, "a fresh schema")
			_, err := pool.Exec(ctx, "INSERT INTO tenants (id, namespace, create_time, update_time) VALUES ('a', 'ty-a', now(), now())")
			require.NoError(t, err)
			require.NoError(t, pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema))
			conn, err := pgx.Connect(ctx, url)
			require.NoError(t, err)
			defer conn.Close(ctx)
			var viaURL string
			require.NoError(t, conn.QueryRow(ctx, "SELECT current_schema()").Scan(&viaURL))
			require.Equal(t, schema, viaURL, "the URL connects to the same schema (run %d)", i)
		})
		require.True(t, ok)
	}
	conn, err := pgx.Connect(ctx, PackageURL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists))
	require.False(t, exists, "dropped at the end of its test")
}
