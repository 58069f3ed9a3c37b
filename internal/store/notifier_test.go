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
