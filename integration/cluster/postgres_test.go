//go:build integration

package cluster_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/integration/cluster"
)

func TestNewDatabase(t *testing.T) {
	ctx := context.Background()
	var url string
	ok := t.Run("fresh", func(t *testing.T) {
		url = cluster.NewDatabase(t)
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var name string
		require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&name))
		require.Contains(t, url, "/"+name)
		var tables int
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").Scan(&tables))
		require.Zero(t, tables)
		_, err = conn.Exec(ctx, "CREATE TABLE jobs (id text PRIMARY KEY)")
		require.NoError(t, err)
	})
	require.True(t, ok)
	// The subtest's cleanup dropped its database.
	_, err := pgx.Connect(ctx, url)
	require.Error(t, err)
	require.Contains(t, err.Error(), "does not exist")
}
