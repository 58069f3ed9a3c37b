package store

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeNotifications is what a Listener would be: payloads are tenant ids.
type fakeNotifications struct {
	mu   sync.Mutex
	subs map[chan string]bool
	n    int // Subscribe calls
}

func (f *fakeNotifications) Subscribe(channel string) (<-chan string, func()) {
	ch := make(chan string, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[chan string]bool{}
	}
	f.subs[ch] = true
	f.n++
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.subs, ch)
			close(ch)
		})
	}
}

func (f *fakeNotifications) notify(payload string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		ch <- payload
	}
}

func (f *fakeNotifications) open() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

func TestTenantWakeupsWakeOnlyTheirTenant(t *testing.T) {
	src := &fakeNotifications{}
	w := NewWakeups(src, ChannelEvents)
	a1, stopA1 := w.Subscribe("a")
	a2, stopA2 := w.Subscribe("a")
	b, stopB := w.Subscribe("b")
	require.Equal(t, 1, src.open(), "one subscription for every watcher")

	for range 10 {
		src.notify("b")
	}
	require.Eventually(t, func() bool { return len(b) == 1 }, time.Second, time.Millisecond)
	require.Len(t, b, 1, "wake-ups coalesce")
	require.Empty(t, a1)
	require.Empty(t, a2)

	src.notify("a")
	require.Eventually(t, func() bool { return len(a1) == 1 && len(a2) == 1 }, time.Second, time.Millisecond)

	stopA1()
	stopA1()
	stopA2()
	require.Equal(t, 0, w.subscribers("a"))
	require.Equal(t, 1, src.open())
	stopB()
	require.Equal(t, 0, src.open(), "the last watcher gone, the subscription goes")

	c, stopC := w.Subscribe("c")
	defer stopC()
	require.Equal(t, 1, src.open())
	require.Equal(t, 2, src.n)
	src.notify("c")
	require.Eventually(t, func() bool { return len(c) == 1 }, time.Second, time.Millisecond)
}
