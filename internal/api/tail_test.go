package api

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/job"
)

// gatedStore answers EventListTenant only when gate is closed, and counts
// the calls.
type gatedStore struct {
	Store
	gate  chan struct{}
	calls atomic.Int32
}

func (g *gatedStore) EventListTenant(_ context.Context, tenantID string, after int64, _ int) ([]job.Event, error) {
	g.calls.Add(1)
	<-g.gate
	return []job.Event{{ID: after + 1, Tenant: tenantID, JobUID: "u1", Job: "a"}}, nil
}

func (g *gatedStore) JobGetMany(_ context.Context, tenantID string, _ []string) ([]job.Job, error) {
	return []job.Job{{Tenant: tenantID, UID: "u1", Name: "a", Status: job.Status{State: job.Running}}}, nil
}

// Streams of a tenant at the same cursor share one read; a stream that goes
// away meanwhile neither fails the others nor cancels their read.
func TestTailReadsShareOneReadPerCursor(t *testing.T) {
	st := &gatedStore{gate: make(chan struct{})}
	tails := &tailReads{store: st}

	gone, cancel := context.WithCancel(context.Background())
	goneErr := make(chan error, 1)
	go func() {
		_, err := tails.read(gone, "acme", 7, 100)
		goneErr <- err
	}()
	var wg sync.WaitGroup
	var started atomic.Int32
	results := make([]*tail, 50)
	for i := range results {
		wg.Go(func() {
			started.Add(1)
			r, err := tails.read(context.Background(), "acme", 7, 100)
			require.NoError(t, err)
			results[i] = r
		})
	}
	require.Eventually(t, func() bool { return started.Load() == 50 && st.calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(100 * time.Millisecond) // the last ones from started to waiting
	cancel()
	require.Equal(t, codes.Canceled, status.Code(<-goneErr))
	close(st.gate)
	wg.Wait()
	require.EqualValues(t, 1, st.calls.Load(), "one read for 51 streams")
	for _, r := range results {
		require.Len(t, r.events, 1)
		require.EqualValues(t, 8, r.events[0].ID)
		require.Equal(t, "a", r.jobs["u1"].Name)
		require.Nil(t, r.queue, "no job QUEUED: the queue view is not read")
	}

	// Another cursor is another read.
	_, err := tails.read(context.Background(), "acme", 8, 100)
	require.NoError(t, err)
	require.EqualValues(t, 2, st.calls.Load())
}
