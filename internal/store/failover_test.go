//go:build integration

package store

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/pgtest"
	"github.com/trainyard/trainyard/internal/tenant"
)

// deadHost is an address nobody listens on: bound, then closed.
func deadHost(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// withDeadFirstHost is rawURL listing a dead server before its own, with
// target_session_attrs=read-write: what a primary and its standbys look
// like in a URL (the old primary down, its successor next).
func withDeadFirstHost(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	u.Host = deadHost(t) + "," + u.Host
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	return u.String()
}

// A URL of several hosts with target_session_attrs=read-write (a primary
// and its standbys) works for every connection Trainyard makes: the
// store's pool, the notification listener's own connection and the
// migrations; each skips the dead host and reaches the writable one.
func TestMultiHostURL(t *testing.T) {
	b := setup(t)
	multi := withDeadFirstHost(t, b.url)

	s, err := Open(b.ctx, multi)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.TenantCreate(b.ctx, tenant.Tenant{ID: "multi", Namespace: "ty-multi"})
	require.NoError(t, err)
	_, err = b.store.TenantGet(b.ctx, "multi")
	require.NoError(t, err, "the multi-host store wrote where the test's store reads")

	l, err := NewListener(multi, ListenerConfig{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	require.NoError(t, err)
	listening := make(chan struct{}, 1)
	l.OnReconnect(func() { listening <- struct{}{} })
	ch, unsubscribe := l.Subscribe("test_multi_host")
	defer unsubscribe()
	ctx, cancel := context.WithCancel(b.ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- l.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-stopped) }()
	waitFor(t, listening, "the listener's first connection")
	b.exec(t, `SELECT pg_notify('test_multi_host', 'hello')`)
	require.Equal(t, "hello", waitFor(t, ch, "a notification through the multi-host listener"))

	version, dirty, err := MigrationVersion(b.ctx, withDeadFirstHost(t, pgtest.PackageURL()))
	require.NoError(t, err)
	require.False(t, dirty)
	require.Positive(t, version)
}

// What a fail-over leaves a session with is ErrUnavailable (the API's
// UNAVAILABLE: retry), not an internal error: a write refused as read-only
// (25006: a server that is, or became, a standby) and a connection the
// server ended (57P01, admin shutdown: the old primary going down).
func TestFailoverErrorsAreUnavailable(t *testing.T) {
	b := setup(t)
	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(b.ctx)
	_, err = tx.Exec(b.ctx, `SET TRANSACTION READ ONLY`)
	require.NoError(t, err)
	_, err = tx.Exec(b.ctx, `INSERT INTO worker_leases VALUES ('w', now())`)
	require.ErrorContains(t, err, "25006")
	require.ErrorIs(t, translate(err, "x"), ErrUnavailable, "%v", err)

	conn, err := b.pool.Acquire(b.ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(b.ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
	require.ErrorContains(t, err, "57P01")
	require.ErrorIs(t, translate(err, "x"), ErrUnavailable, "%v", err)
}
