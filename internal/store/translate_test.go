//go:build integration

package store

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/pgtest"
)

// A database that refuses connections is ErrUnavailable, which the API
// maps to UNAVAILABLE (retry), not an internal error.
func TestUnavailableWhenPostgresRefuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A port nobody listens on: bind one, then close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	pool, err := pgxpool.New(ctx, "postgres://postgres@"+addr+"/postgres?sslmode=disable&connect_timeout=2")
	require.NoError(t, err)
	defer pool.Close()
	s := New(pool)

	_, err = s.TenantGet(ctx, "acme")
	require.ErrorIs(t, err, ErrUnavailable)
	_, _, err = s.JobCreate(ctx, JobCreateParams{})
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, s.Ping(ctx), ErrUnavailable)
}

// A connection the server ends (a restart, a failover, an operator) is
// ErrUnavailable too.
func TestUnavailableWhenTheConnectionIsTerminated(t *testing.T) {
	b := setup(t)
	conn, err := b.pool.Acquire(b.ctx)
	require.NoError(t, err)
	defer conn.Release()
	var pid int
	require.NoError(t, conn.QueryRow(b.ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	require.NoError(t, pgtest.Exec(b.ctx, pgtest.PackageURL(), "SELECT pg_terminate_backend("+strconv.Itoa(pid)+")"))
	_, err = conn.Exec(b.ctx, `SELECT 1`)
	require.Error(t, err)
	require.ErrorIs(t, translate(err, "x"), ErrUnavailable, "%v", err)
}

// A statement timeout is ErrUnavailable; a serialization failure is
// ErrConflict (ABORTED: retry the whole request).
func TestTimeoutAndSerializationFailure(t *testing.T) {
	b := setup(t)
	_, err := b.pool.Exec(b.ctx, `SET statement_timeout = '50ms'; SELECT pg_sleep(1)`)
	require.ErrorIs(t, translate(err, "x"), ErrUnavailable, "%v", err)

	_, err = b.pool.Exec(b.ctx, `CREATE TABLE ser (k int PRIMARY KEY, v int); INSERT INTO ser VALUES (1, 0), (2, 0)`)
	require.NoError(t, err)
	opts := pgx.TxOptions{IsoLevel: pgx.Serializable}
	tx1, err := b.pool.BeginTx(b.ctx, opts)
	require.NoError(t, err)
	defer tx1.Rollback(b.ctx)
	tx2, err := b.pool.BeginTx(b.ctx, opts)
	require.NoError(t, err)
	defer tx2.Rollback(b.ctx)
	// Write skew: each reads what the other writes.
	var sum int
	require.NoError(t, tx1.QueryRow(b.ctx, `SELECT sum(v) FROM ser`).Scan(&sum))
	require.NoError(t, tx2.QueryRow(b.ctx, `SELECT sum(v) FROM ser`).Scan(&sum))
	_, err = tx1.Exec(b.ctx, `UPDATE ser SET v = 1 WHERE k = 1`)
	require.NoError(t, err)
	_, err = tx2.Exec(b.ctx, `UPDATE ser SET v = 1 WHERE k = 2`)
	require.NoError(t, err)
	require.NoError(t, tx1.Commit(b.ctx))
	err = tx2.Commit(b.ctx)
	require.Error(t, err)
	require.ErrorIs(t, translate(err, "x"), ErrConflict, "%v", err)
}

// Programming errors stay internal: neither unavailable nor a conflict.
func TestTranslateKeepsOtherErrorsInternal(t *testing.T) {
	b := setup(t)
	var n string
	err := b.pool.QueryRow(b.ctx, `SELECT 1`).Scan(&n, &n)
	got := translate(err, "x")
	require.False(t, errors.Is(got, ErrUnavailable) || errors.Is(got, ErrConflict), "%v", got)
	_, err = b.pool.Exec(b.ctx, `SELECT * FROM no_such_table`)
	got = translate(err, "x")
	require.False(t, errors.Is(got, ErrUnavailable), "%v", got)
}

// Issue 41, finding 2: errors Postgres answers while refusing a connection
// (the database does not accept connections: 55000; does not exist:
// 3D000; the role may not log in: 28000) are an outage, ErrUnavailable,
// not internal errors; so is a backend terminated under an open pool.
func TestUnavailableWhenPostgresRefusesAtConnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbURL := pgtest.NewDatabase(t)
	server, err := pgtest.Server(ctx)
	require.NoError(t, err)
	name := strings.TrimPrefix(mustParse(t, dbURL).Path, "/")

	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	s := New(pool)
	require.NoError(t, s.Ping(ctx))

	require.NoError(t, pgtest.Exec(ctx, server, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" ALLOW_CONNECTIONS false"))
	require.NoError(t, pgtest.Exec(ctx, server, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"+name+"'"))
	for range 3 { // the terminated connections, then new ones refused with 55000
		_, err = s.TenantGet(ctx, "acme")
		require.ErrorIs(t, err, ErrUnavailable, "%v", err)
	}
	_, err = s.TenantGet(ctx, "acme")
	require.ErrorContains(t, err, "55000")

	missing, err := pgxpool.New(ctx, pgtest.URLFor(server, "no_such_database_"+name))
	require.NoError(t, err)
	defer missing.Close()
	_, err = New(missing).TenantGet(ctx, "acme")
	require.ErrorIs(t, err, ErrUnavailable, "%v", err)
	require.ErrorContains(t, err, "3D000")
}

func mustParse(t *testing.T, raw string) *url.URL {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}
