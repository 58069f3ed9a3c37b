package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Notifications that arrive while a send is in flight leave together in
// the next one, identical ones once; nothing is sent when idle.
func TestNotifierCoalesces(t *testing.T) {
	var (
		mu      sync.Mutex
		batches [][]string
	)
	inFlight, release := make(chan struct{}), make(chan struct{})
	first := true
	n := &notifier{exec: func(_ context.Context, channels, payloads []string) error {
		mu.Lock()
		var b []string
		for i := range channels {
			b = append(b, channels[i]+":"+payloads[i])
		}
		batches = append(batches, b)
		block := first
		first = false
		mu.Unlock()
		if block {
			close(inFlight)
			<-release
		}
		return nil
	}}
	n.add(map[note]struct{}{{ChannelSchedule, "a"}: {}})
	<-inFlight
	for i := range 100 {
		n.add(map[note]struct{}{{ChannelEvents, fmt.Sprint(i % 10)}: {}, {ChannelSchedule, "a"}: {}})
	}
	close(release)
	require.Eventually(t, func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return !n.running
	}, 10*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, batches, 2, "100 transactions' notifications in one send")
	require.Len(t, batches[1], 11, "ten events payloads and one schedule payload")
	require.EqualValues(t, 2, n.sends.Load())
	n.add(nil)
	require.EqualValues(t, 2, n.sends.Load(), "nothing to send, nothing sent")
}

// Lazy notes (events, the scheduler's) sent within the linger of the last
// send wait for it to pass, or leave at once with an urgent one (a job for
// a worker); an idle notifier sends at once.
func TestNotifierLingersForLazyNotes(t *testing.T) {
	sent := make(chan []string, 10)
	n := &notifier{linger: 300 * time.Millisecond, exec: func(_ context.Context, channels, payloads []string) error {
		var b []string
		for i := range channels {
			b = append(b, channels[i]+":"+payloads[i])
		}
		sent <- b
		return nil
	}}
	next := func(within time.Duration) []string {
		t.Helper()
		select {
		case b := <-sent:
			return b
		case <-time.After(within):
			t.Fatalf("nothing sent within %s", within)
			return nil
		}
	}
	quiet := func(d time.Duration) {
		t.Helper()
		select {
		case b := <-sent:
			t.Fatalf("sent %v early", b)
		case <-time.After(d):
		}
	}
	n.add(map[note]struct{}{{ChannelEvents, "a"}: {}})
	require.Equal(t, []string{ChannelEvents + ":a"}, next(time.Second), "idle: at once")

	n.add(map[note]struct{}{{ChannelEvents, "b"}: {}})
	n.add(map[note]struct{}{{ChannelSchedule, "b"}: {}})
	quiet(100 * time.Millisecond)
	n.add(map[note]struct{}{{ChannelJobs, "b/1"}: {}})
	require.ElementsMatch(t, []string{ChannelEvents + ":b", ChannelSchedule + ":b", ChannelJobs + ":b/1"},
		next(100*time.Millisecond), "an urgent note takes the lazy ones along at once")

	began := time.Now()
	n.add(map[note]struct{}{{ChannelFreed, "c"}: {}})
	quiet(100 * time.Millisecond)
	require.Equal(t, []string{ChannelFreed + ":c"}, next(2*time.Second))
	require.GreaterOrEqual(t, time.Since(began), 250*time.Millisecond, "waited out the linger")
	require.Eventually(t, func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return !n.running
	}, 10*time.Second, time.Millisecond)
}
