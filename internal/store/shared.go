package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Concurrent calls share statements.
//
// A write's cost in Postgres is mostly per statement, not per row: the
// parse, plan and executor start, the round trip, and the commit that
// waits for its WAL to reach disk. BatchCreateJobs writes 1,000 jobs in
// one statement at about twenty times the rate of one-job statements. So
// JobCreate and JobSave do not run statements of their own: they queue
// their item in a sharedQueue, and at most sharedLanes statements are in
// flight per queue. A lane takes every item queued when it starts — of
// any caller, up to the queue's max — and runs them as one statement;
// items that arrive meanwhile wait for the next. When the queue is idle an
// item leaves at once (a lane is free), so nothing waits on a timer; under
// load, statements grow with the load and the commits per item fall.
// While one lane is busy the other starts only once as many items wait as
// that lane is sending (ready): callers whose statement just ended come
// back one by one, and a free lane that left with the first of them sent
// one-item statements (2.5 jobs a statement at eight JobCreate callers,
// 3.5 with the rule). An item that waits so waits at most for the busy
// lane's statement, which then takes it.
//
// Each item's outcome stays its own: run reports per item, and runs a
// statement that fails as a whole again without the items that made it
// fail, so that one caller's mistake is never another's error. Items with
// a key in common never share a statement: the second waits for the next.
const (
	sharedLanes = 2
	// sharedTimeout bounds a shared statement: it runs for several callers,
	// so none of their contexts is its own.
	sharedTimeout = 30 * time.Second
)

// sharedQueue holds the calls not yet sent, of items I with outcomes O.
type sharedQueue[I, O any] struct {
	// run runs items as one statement if it can and says what became of
	// each (an outcome or an error per item).
	run func(context.Context, []I) ([]O, []error)
	// max is the most items a statement takes.
	max int
	// keys are what two items of one statement must not have in common
	// (nil: nothing).
	keys func(I) []string

	mu      sync.Mutex
	waiting []*sharedCall[I, O]
	lanes   int // lanes running
	sending int // items in the statements in flight

	sent atomic.Int64 // statements run, for tests and benchmarks
}

// sharedCall is one call waiting for its outcome.
type sharedCall[I, O any] struct {
	item I
	done chan struct{} // closed when out and err are set
	out  O
	err  error
}

// call queues it and waits for its outcome. A call whose ctx ends before a
// statement took it is withdrawn: sent is false, nothing was written, and
// err is ctx's. One whose ctx ends after waits for its statement, which
// takes no longer than sharedTimeout.
func (q *sharedQueue[I, O]) call(ctx context.Context, it I) (out O, sent bool, err error) {
	c, start := q.add(it)
	if start {
		q.lead()
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		if q.withdraw(c) {
			return out, false, ctx.Err()
		}
		<-c.done // sent already: its outcome is known in a moment
	}
	return c.out, true, c.err
}

// add queues it and says whether the caller is to start a lane (lead):
// one is free.
func (q *sharedQueue[I, O]) add(it I) (*sharedCall[I, O], bool) {
	c := &sharedCall[I, O]{item: it, done: make(chan struct{})}
	q.mu.Lock()
	q.waiting = append(q.waiting, c)
	start := q.lanes < sharedLanes && q.ready(q.lanes)
	if start {
		q.lanes++
	}
	q.mu.Unlock()
	return c, start
}

// lead is a lane's first statement, sent by the caller that started the
// lane: it takes the caller's own item (and what else waits), so a lone
// caller's statement needs no goroutine to be started and woken, and none
// to wake the caller (a tenth of serve's CPU per submit at one client went
// to the scheduler's hand-offs). A lane that has more to send goes on in a
// goroutine of its own, and the caller returns with its outcome.
func (q *sharedQueue[I, O]) lead() {
	q.mu.Lock()
	batch := q.take()
	q.sending += len(batch)
	q.mu.Unlock()
	q.send(batch)
	q.mu.Lock()
	q.sending -= len(batch)
	more := len(q.waiting) > 0 && q.ready(q.lanes-1)
	if !more {
		q.lanes--
	}
	q.mu.Unlock()
	if more {
		go q.lane()
	}
}

// withdraw takes c out of the queue if no lane has taken it yet.
func (q *sharedQueue[I, O]) withdraw(c *sharedCall[I, O]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, w := range q.waiting {
		if w == c {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// ready says whether a lane should send what waits now, with others
// other lanes running: when none is, or when as many items wait as they
// are sending. q.mu is held.
func (q *sharedQueue[I, O]) ready(others int) bool {
	return others == 0 || len(q.waiting) >= min(q.sending, q.max)
}

// lane sends statements until nothing waits, or too little to send beside
// the other lane (ready).
func (q *sharedQueue[I, O]) lane() {
	var batch []*sharedCall[I, O]
	for {
		q.mu.Lock()
		q.sending -= len(batch)
		batch = nil
		if q.ready(q.lanes - 1) {
			batch = q.take()
		}
		if len(batch) == 0 {
			q.lanes--
			q.mu.Unlock()
			return
		}
		q.sending += len(batch)
		q.mu.Unlock()
		q.send(batch)
	}
}

// take removes and returns the next statement's calls, in arrival order:
// up to q.max, none with a key in common. q.mu is held.
func (q *sharedQueue[I, O]) take() []*sharedCall[I, O] {
	var (
		batch []*sharedCall[I, O]
		seen  = map[string]bool{}
		rest  = q.waiting[:0:0]
	)
	for _, c := range q.waiting {
		var keys []string
		if q.keys != nil {
			keys = q.keys(c.item)
		}
		if len(batch) == q.max || anySeen(seen, keys) {
			rest = append(rest, c)
			continue
		}
		for _, k := range keys {
			seen[k] = true
		}
		batch = append(batch, c)
	}
	q.waiting = rest
	return batch
}

func anySeen(seen map[string]bool, keys []string) bool {
	for _, k := range keys {
		if seen[k] {
			return true
		}
	}
	return false
}

// send runs batch and hands each call its outcome.
func (q *sharedQueue[I, O]) send(batch []*sharedCall[I, O]) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	items := make([]I, len(batch))
	for i, c := range batch {
		items[i] = c.item
	}
	out, errs := q.run(ctx, items)
	q.sent.Add(1)
	for i, c := range batch {
		if c.err = errs[i]; c.err == nil {
			c.out = out[i]
		}
		close(c.done)
	}
}
