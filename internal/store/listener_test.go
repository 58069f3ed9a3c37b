//go:build integration

package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// listenerStart runs a Listener for the test and returns it once the first
// connection has listened to every channel given.
func listenerStart(t *testing.T, b *testBundle, channels ...string) (*Listener, map[string]<-chan string, chan struct{}) {
	t.Helper()
	l, err := NewListener(b.url, ListenerConfig{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	require.NoError(t, err)
	reconnects := make(chan struct{}, 10)
	l.OnReconnect(func() { reconnects <- struct{}{} })
	subs := map[string]<-chan string{}
	for _, ch := range channels {
		c, unsubscribe := l.Subscribe(ch)
		t.Cleanup(unsubscribe)
		subs[ch] = c
	}
	ctx, cancel := context.WithCancel(b.ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-stopped)
	})
	waitFor(t, reconnects, "first connection")
	for _, ch := range channels {
		require.True(t, l.Listening(ch))
	}
	return l, subs, reconnects
}

func waitFor[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		require.FailNow(t, "timed out waiting for "+what)
	}
	var zero T
	return zero
}

func TestListenerCommittedOnly(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	_, subs, _ := listenerStart(t, b, ChannelSchedule, ChannelEvents, "test_channel")

	// A job create notifies the scheduler and watchers.
	j := b.jobCreate(t, "a", "j", 0)
	require.Equal(t, "a", waitFor(t, subs[ChannelSchedule], "schedule notification"))
	require.Equal(t, "a", waitFor(t, subs[ChannelEvents], "event notification"))

	// A failed create (duplicate name) notifies nobody; nor does a rollback.
	_, _, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: "j", Spec: testSpec()}})
	require.ErrorIs(t, err, ErrAlreadyExists)
	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	_, err = tx.Exec(b.ctx, `SELECT pg_notify('test_channel', 'rolled back')`)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(b.ctx))
	tx, err = b.pool.Begin(b.ctx)
	require.NoError(t, err)
	_, err = tx.Exec(b.ctx, `SELECT pg_notify('test_channel', 'committed')`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(b.ctx))
	// Notifications arrive in commit order: had the rolled-back or failed
	// ones been sent, they would come first.
	require.Equal(t, "committed", waitFor(t, subs["test_channel"], "committed notification"))
	select {
	case p := <-subs[ChannelSchedule]:
		require.FailNow(t, "unexpected schedule notification", p)
	default:
	}

	// A worker's save with events notifies watchers.
	w := b.own(t, "w", keyOf(j))
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w", Tenant: "a", UID: j.UID, Version: w.Version,
		Status: job.Status{State: job.Starting}, Events: []job.Event{{Reason: "Admitted"}}})
	require.NoError(t, err)
	require.Equal(t, "a", waitFor(t, subs[ChannelEvents], "event notification after save"))
}

func TestListenerSubscribeLaterAndFullBuffer(t *testing.T) {
	b := setup(t)
	l, err := NewListener(b.url, ListenerConfig{Buffer: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(b.ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- l.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-stopped) }()

	// Subscribing while connected listens without reconnecting.
	c, unsubscribe := l.Subscribe("late_channel")
	require.Eventually(t, func() bool { return l.Listening("late_channel") }, 10*time.Second, 5*time.Millisecond)
	for _, p := range []string{"1", "2", "3", "4"} {
		_, err := b.pool.Exec(b.ctx, `SELECT pg_notify('late_channel', $1)`, p)
		require.NoError(t, err)
	}
	// The subscriber reads nothing yet. A notification on a second channel,
	// sent after 1-4, arrives only after those were dispatched.
	c2, unsubscribe2 := l.Subscribe("after")
	defer unsubscribe2()
	require.Eventually(t, func() bool { return l.Listening("after") }, 10*time.Second, 5*time.Millisecond)
	_, err = b.pool.Exec(b.ctx, `SELECT pg_notify('after', 'ok')`)
	require.NoError(t, err)
	require.Equal(t, "ok", waitFor(t, c2, "notification on a new channel"))
	// 3 and 4 found the buffer full and were coalesced into the pending
	// wake-ups; the dispatcher never blocked on the slow subscriber, and
	// counted what it dropped.
	require.Equal(t, uint64(2), l.Dropped("late_channel"))
	require.Zero(t, l.Dropped("after"))
	require.Equal(t, "1", waitFor(t, c, "first payload"))
	require.Equal(t, "2", waitFor(t, c, "second payload"))
	select {
	case p := <-c:
		require.FailNow(t, "payload beyond the buffer was delivered", p)
	default:
	}

	unsubscribe()
	_, open := <-c
	require.False(t, open, "unsubscribe closes the channel")
	require.Eventually(t, func() bool { return !l.Listening("late_channel") }, 10*time.Second, 5*time.Millisecond)
}

func TestListenerReconnects(t *testing.T) {
	b := setup(t)
	l, subs, reconnects := listenerStart(t, b, "test_channel")

	// Kill the listener's connection from the server side.
	var killed int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'trainyard-listener' AND datname = current_database()
		  AND pid <> pg_backend_pid()`).Scan(&killed))
	require.GreaterOrEqual(t, killed, 1)

	waitFor(t, reconnects, "reconnect hook")
	require.True(t, l.Listening("test_channel"))
	_, err := b.pool.Exec(b.ctx, `SELECT pg_notify('test_channel', 'after reconnect')`)
	require.NoError(t, err)
	require.Equal(t, "after reconnect", waitFor(t, subs["test_channel"], "notification after reconnect"))
}
