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
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
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

func (g *gatedStore) TenantGet(_ context.Context, id string) (tenant.Tenant, error) {
	if id == "gone" {
		return tenant.Tenant{}, store.ErrNotFound
	}
	return tenant.Tenant{ID: id, State: tenant.Active}, nil
}

// readers counts the reads that joined key's read in flight (0: none).
func (t *tailReads) readers(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.flights[key]; f != nil {
		return f.readers
	}
	return 0
}

// Streams of a tenant at the same cursor share one read; a stream that goes
// away meanwhile neither fails the others nor cancels their read.
func TestTailReadsShareOneReadPerCursor(t *testing.T) {
	st := &gatedStore{gate: make(chan struct{})}
	tails := &tailReads{store: st}

	gone, cancel := context.WithCancel(context.Background())
	goneErr := make(chan error, 1)
	go func() {
		_, err := tails.read(gone, "acme", 7, 100, time.Time{})
		goneErr <- err
	}()
	var wg sync.WaitGroup
	results := make([]*tail, 50)
	for i := range results {
		wg.Go(func() {
			r, err := tails.read(context.Background(), "acme", 7, 100, time.Time{})
			require.NoError(t, err)
			results[i] = r
		})
	}
	// All 51 joined the one read before the first goes away.
	require.Eventually(t, func() bool { return tails.readers("acme/7/100") == 51 && st.calls.Load() == 1 }, 5*time.Second, time.Millisecond)
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
		require.Equal(t, "acme", r.tenant.ID, "the tenant, for the streams' access re-check")
		require.False(t, r.tenantGone)
	}

	// Another cursor is another read.
	_, err := tails.read(context.Background(), "acme", 8, 100, time.Time{})
	require.NoError(t, err)
	require.EqualValues(t, 2, st.calls.Load())

	// A caller woken after a read of its key began does not join it: it
	// may miss what committed in between.
	st.gate = make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := tails.read(context.Background(), "acme", 9, 100, time.Time{})
		first <- err
	}()
	require.Eventually(t, func() bool { return st.calls.Load() == 3 }, 5*time.Second, time.Millisecond)
	late := make(chan error, 1)
	go func() {
		_, err := tails.read(context.Background(), "acme", 9, 100, time.Now())
		late <- err
	}()
	require.Eventually(t, func() bool { return st.calls.Load() == 4 }, 5*time.Second, time.Millisecond, "a read of its own")
	close(st.gate)
	require.NoError(t, <-first)
	require.NoError(t, <-late)
}

// A tenant deleted under its watchers is read as gone (the streams' access
// re-check then ends them with NOT_FOUND), not as an error of the read.
func TestTailReadOfAGoneTenant(t *testing.T) {
	st := &gatedStore{gate: make(chan struct{})}
	close(st.gate)
	r, err := (&tailReads{store: st}).read(context.Background(), "gone", 7, 100, time.Time{})
	require.NoError(t, err)
	require.True(t, r.tenantGone)
}
