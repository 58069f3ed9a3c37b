package store

import (
	"context"
	"runtime"
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
	if n <= sharedLanes {
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
	f := &fakeInserts{inFlight: make(chan struct{}, sharedLanes), unhold: make(chan struct{})}
	q := newCreateQueue(f.insert)

	// Fill both lanes with a statement each, held.
	first := enqueue(q, fakeItem("a", "first", ""))
	<-f.inFlight
	second := enqueue(q, fakeItem("a", "second", ""))
	<-f.inFlight

	// While the first is in flight, everything else waits in the queue.
	calls := []*sharedCall[createItem, JobCreated]{
		enqueue(q, fakeItem("a", "j1", "r1")),
		enqueue(q, fakeItem("b", "j1", "r1")), // another tenant's name and request id
		enqueue(q, fakeItem("a", "j1", "")),   // a's j1 again: the next statement
		enqueue(q, fakeItem("a", "j2", "r1")), // a's request r1 again: the next statement
		enqueue(q, fakeItem("c", "replayed", "r9")),
	}
	gone := enqueue(q, fakeItem("c", "withdrawn", ""))
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

// heldInserts records each statement's job names and holds statement i
// until release[i] is closed.
type heldInserts struct {
	mu         sync.Mutex
	statements [][]string
	started    chan int
	release    [8]chan struct{}
}

func newHeldInserts() *heldInserts {
	f := &heldInserts{started: make(chan int, 8)}
	for i := range f.release {
		f.release[i] = make(chan struct{})
	}
	return f
}

func (f *heldInserts) insert(_ context.Context, items []createItem) ([]JobCreated, []error) {
	f.mu.Lock()
	var names []string
	for _, it := range items {
		names = append(names, it.p.Job.Name)
	}
	f.statements = append(f.statements, names)
	i := len(f.statements) - 1
	f.mu.Unlock()
	f.started <- i
	<-f.release[i]
	out := make([]JobCreated, len(items))
	for k, it := range items {
		out[k] = JobCreated{Job: it.p.Job, Created: true}
	}
	return out, make([]error, len(items))
}

func (f *heldInserts) statement(t *testing.T, want int) []string {
	t.Helper()
	select {
	case i := <-f.started:
		require.Equal(t, want, i)
	case <-time.After(10 * time.Second):
		t.Fatalf("statement %d not sent", want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statements[want]
}

func (f *heldInserts) none(t *testing.T) {
	t.Helper()
	select {
	case i := <-f.started:
		t.Fatalf("statement %d sent early", i)
	case <-time.After(50 * time.Millisecond):
	}
}

// While one lane sends n jobs, the other starts once n wait, not with the
// first that comes; jobs left waiting below that go with the busy lane's
// next statement.
func TestCreateQueueSecondLaneWaitsForAShare(t *testing.T) {
	f := newHeldInserts()
	q := newCreateQueue(f.insert)
	add := func(names ...string) {
		for _, n := range names {
			enqueue(q, fakeItem("a", n, ""))
		}
	}
	add("j1")
	require.Equal(t, []string{"j1"}, f.statement(t, 0))
	add("j2") // as many wait (1) as the busy lane sends (1)
	require.Equal(t, []string{"j2"}, f.statement(t, 1))
	add("j3", "j4", "j5") // both lanes busy
	f.none(t)
	close(f.release[0])
	require.Equal(t, []string{"j3", "j4", "j5"}, f.statement(t, 2))
	close(f.release[1]) // nothing waits: that lane ends

	add("j6", "j7") // fewer than the three in flight
	f.none(t)
	add("j8")
	require.Equal(t, []string{"j6", "j7", "j8"}, f.statement(t, 3))

	add("j9")
	close(f.release[2]) // one waits, three in flight: this lane ends too
	f.none(t)
	close(f.release[3]) // the last lane takes it
	require.Equal(t, []string{"j9"}, f.statement(t, 4))
	close(f.release[4])
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.lanes == 0 && q.sending == 0
	}, 10*time.Second, time.Millisecond)
}

// enqueue queues it as a call does, with the lane the call would lead
// started in a goroutine of its own, so that the test goes on meanwhile.
func enqueue(q *createQueue, it createItem) *sharedCall[createItem, JobCreated] {
	c, start := q.add(it)
	if start {
		go q.lead()
	}
	return c
}

// A lone call sends its own statement, on its own goroutine (no lane
// goroutine to start and wake); what waits behind it still goes out.
func TestCreateQueueLoneCallSendsItself(t *testing.T) {
	var stacks []string
	var mu sync.Mutex
	q := newCreateQueue(func(_ context.Context, items []createItem) ([]JobCreated, []error) {
		buf := make([]byte, 1<<16)
		mu.Lock()
		stacks = append(stacks, string(buf[:runtime.Stack(buf, false)]))
		mu.Unlock()
		out := make([]JobCreated, len(items))
		for i, it := range items {
			out[i] = JobCreated{Job: it.p.Job, Created: true}
		}
		return out, make([]error, len(items))
	})
	out, sent, err := q.call(context.Background(), fakeItem("a", "alone", ""))
	require.NoError(t, err)
	require.True(t, sent)
	require.True(t, out.Created)
	require.Len(t, stacks, 1)
	require.Contains(t, stacks[0], "testing.tRunner(", "the statement ran on the caller's (the test's) goroutine:\n%s", stacks[0])
	q.mu.Lock()
	defer q.mu.Unlock()
	require.Zero(t, q.lanes, "the lane ended with the caller's statement")
}
