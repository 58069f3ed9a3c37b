package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/store/storetest"
)

func TestTenantWakeupsWakeOnlyTheirTenant(t *testing.T) {
	src := &storetest.Notifications{}
	w := NewWakeups(src, ChannelEvents)
	a1, stopA1 := w.Subscribe("a")
	a2, stopA2 := w.Subscribe("a")
	b, stopB := w.Subscribe("b")
	require.Equal(t, 1, src.Open(), "one subscription for every watcher")

	for range 10 {
		src.Notify("b")
	}
	require.Eventually(t, func() bool { return len(b) == 1 }, time.Second, time.Millisecond)
	require.Len(t, b, 1, "wake-ups coalesce")
	require.Empty(t, a1)
	require.Empty(t, a2)

	src.Notify("a")
	require.Eventually(t, func() bool { return len(a1) == 1 && len(a2) == 1 }, time.Second, time.Millisecond)

	stopA1()
	stopA1()
	stopA2()
	require.Equal(t, 0, w.subscribers("a"))
	require.Equal(t, 1, src.Open())
	stopB()
	require.Equal(t, 0, src.Open(), "the last watcher gone, the subscription goes")

	c, stopC := w.Subscribe("c")
	defer stopC()
	require.Equal(t, 1, src.Open())
	require.Equal(t, 2, src.Subscriptions())
	src.Notify("c")
	require.Eventually(t, func() bool { return len(c) == 1 }, time.Second, time.Millisecond)
}

// Last is when a tenant's last notification arrived, set before its
// subscribers wake: one woken reads that time or a later one.
func TestWakeupsLast(t *testing.T) {
	src := &storetest.Notifications{}
	w := NewWakeups(src, ChannelEvents)
	require.True(t, w.Last("a").IsZero())
	a, stop := w.Subscribe("a")
	before := time.Now()
	src.Notify("a")
	<-a
	first := w.Last("a")
	require.False(t, first.Before(before), "set before the wake-up")
	require.True(t, w.Last("b").IsZero(), "per tenant")
	src.Notify("a")
	<-a
	require.False(t, w.Last("a").Before(first), "moves with each notification")
	stop()
	require.True(t, w.Last("a").IsZero(), "forgotten with the last subscriber")
	require.True(t, (*Wakeups)(nil).Last("a").IsZero())
}

// subscribers counts the subscribers of tenantID.
func (w *Wakeups) subscribers(tenantID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.subs[tenantID])
}
