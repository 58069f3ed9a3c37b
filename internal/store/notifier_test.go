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

// Under load sends leave at most one per gap, and what arrives meanwhile
// folds into the next; the first after a quiet spell leaves at once.
func TestNotifierGap(t *testing.T) {
	const gap = 40 * time.Millisecond
	var (
		mu     sync.Mutex
		starts []time.Time
		sizes  []int
	)
	n := &notifier{gap: gap, exec: func(_ context.Context, channels, _ []string) error {
		mu.Lock()
		defer mu.Unlock()
		starts, sizes = append(starts, time.Now()), append(sizes, len(channels))
		return nil
	}}
	idle := func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return !n.running
	}
	t0 := time.Now()
	for i := range 20 {
		n.add(map[note]struct{}{{ChannelEvents, fmt.Sprint(i)}: {}})
		time.Sleep(time.Millisecond)
	}
	require.Eventually(t, idle, 10*time.Second, time.Millisecond)
	mu.Lock()
	require.Less(t, starts[0].Sub(t0), gap/2, "the first leaves at once")
	for i := 1; i < len(starts); i++ {
		require.GreaterOrEqual(t, starts[i].Sub(starts[i-1]), gap, "send %d", i)
	}
	total := 0
	for _, s := range sizes {
		total += s
	}
	require.Equal(t, 20, total, "every notification sent once")
	require.Less(t, len(starts), 10, "20 notifications in 20 ms fold into a few sends")
	mu.Unlock()

	time.Sleep(2 * gap)
	t1 := time.Now()
	n.add(map[note]struct{}{{ChannelSchedule, "a"}: {}})
	require.Eventually(t, idle, 10*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Less(t, starts[len(starts)-1].Sub(t1), gap/2, "after a quiet spell, at once")
}
