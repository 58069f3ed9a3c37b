package store

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// fakeInserts is a createQueue's insert that records each statement's
// jobs, holds the first two (both lanes) until released, and fails a statement of more
// than one job that holds a job named "taken" (as a unique violation rolls
// a real one back).
type fakeInserts struct {
	mu               sync.Mutex
	statements       [][]string // tenant/name of each job
	inFlight, unhold chan struct{}
}

func (f *fakeInserts) insert(_ context.Context, items []createItem) ([]JobCreated, []error) {
	f.mu.Lock()
	var names []string
	for _, it := range items {
		names = append(names, it.p.Job.Tenant+"/"+it.p.Job.Name)
	}
	f.statements = append(f.statements, names)
	n := len(f.statements)
	f.mu.Unlock()
	if n <= createLanes {
		f.inFlight <- struct{}{}
		<-f.unhold
	}
	out, errs := make([]JobCreated, len(items)), make([]error, len(items))
	for i, it := range items {
		if it.p.Job.Name == "replayed" {
			errs[i] = ErrNotFound
			continue
		}
		out[i] = JobCreated{Job: it.p.Job, Created: true}
	}
	return out, errs
}

func fakeItem(tenantID, name, requestID string) createItem {
	return createItem{p: JobCreateParams{Job: job.Job{Tenant: tenantID, Name: name}, RequestID: requestID}}
}

// Jobs queued while both lanes' statements are in flight leave together in
// the next, except one that shares a tenant's name or request id with a
// job already in it; each caller gets its own outcome; a job not yet sent
// can be withdrawn.
func TestCreateQueueSharesStatements(t *testing.T) {
	f := &fakeInserts{inFlight: make(chan struct{}, createLanes), unhold: make(chan struct{})}
	q := &createQueue{insert: f.insert}

	// Fill both lanes with a statement each, held.
	first := q.add(fakeItem("a", "first", ""))
	<-f.inFlight
	second := q.add(fakeItem("a", "second", ""))
	<-f.inFlight

	// While the first is in flight, everything else waits in the queue.
	calls := []*createCall{
		q.add(fakeItem("a", "j1", "r1")),
		q.add(fakeItem("b", "j1", "r1")), // another tenant's name and request id
		q.add(fakeItem("a", "j1", "")),   // a's j1 again: the next statement
		q.add(fakeItem("a", "j2", "r1")), // a's request r1 again: the next statement
		q.add(fakeItem("c", "replayed", "r9")),
	}
	gone := q.add(fakeItem("c", "withdrawn", ""))
	require.True(t, q.withdraw(gone), "not sent yet")
	q.mu.Lock()
	require.Len(t, q.waiting, len(calls))
	q.mu.Unlock()

	close(f.unhold)
	for _, c := range append(calls, first, second) {
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("job %s has no outcome", c.item.p.Job.Name)
		}
	}
	require.False(t, q.withdraw(first), "sent already")

	require.NoError(t, first.err)
	require.True(t, first.out.Created)
	require.NoError(t, second.err)
	for _, i := range []int{0, 1, 2, 3} {
		require.NoError(t, calls[i].err, calls[i].item.p.Job.Name)
		require.True(t, calls[i].out.Created)
	}
	require.ErrorIs(t, calls[4].err, ErrNotFound, "an item's own error stays its own")
	require.Empty(t, calls[4].out.Job.Name)

	f.mu.Lock()
	defer f.mu.Unlock()
	got := slices.Clone(f.statements)
	require.Equal(t, [][]string{{"a/first"}, {"a/second"}}, got[:2])
	// Then, in two lanes in any order: one statement for the four that may
	// share one; its jobs alone, as it failed as a whole ("taken");
	// as it failed as a whole ("taken"), and the two that waited (they
	// could not share with a's j1 and r1, but may share with each other;
	// in separate statements the database orders them, as it does
	// separate callers').
	require.ElementsMatch(t, [][]string{
		{"a/j1", "b/j1", "c/replayed"},
		{"a/j1", "a/j2"},
	}, got[2:])
	require.EqualValues(t, len(got), q.sent.Load())
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.lanes == 0
	}, 10*time.Second, time.Millisecond, "lanes end when nothing waits")
}
