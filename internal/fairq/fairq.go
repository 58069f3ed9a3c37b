// Package fairq admits API requests fairly between tenants and, within a
// tenant, between callers, in the spirit of Kubernetes' API Priority and
// Fairness: one tenant flooding the API cannot starve another's requests.
//
//	request ──► tenant's seats free? ──yes──► run ──► release: hand the seat
//	                 │ no                                to the next waiter,
//	                 ▼                                   callers in turn
//	            tenant's queue full? ──yes──► RESOURCE_EXHAUSTED (Retry-After)
//	                 │ no
//	                 ▼
//	            wait (at most Limits.Wait and the call's deadline)
//
// Each tenant has Limits.Concurrency seats: requests beyond them wait in
// the tenant's queue (at most Limits.Queue), and a freed seat goes to the
// callers of the tenant in turn (round robin over callers, FIFO within
// one), so one caller's burst does not delay a colleague's single call
// more than by one turn. Tenants never wait for each other here: what they
// share beyond their seats (the cores, the database) is shared by at most
// the sum of their seats. The admitter is per process.
package fairq

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Limits bound one tenant's requests.
type Limits struct {
	// Concurrency is how many run at once. Must be positive.
	Concurrency int
	// Queue is how many more may wait for a seat; beyond it a request is
	// refused at once. Zero refuses everything past Concurrency.
	Queue int
	// Wait is the longest a request waits for a seat before it is refused.
	// Zero waits until the request's context ends.
	Wait time.Duration
}

// Rejected is the error of a request refused for lack of a seat.
type Rejected struct {
	Lane   string // the tenant, as Acquire was given it
	Limits Limits
	// Waited is true when the request was queued and its wait ran out.
	Waited bool
}

func (e *Rejected) Error() string {
	if e.Waited {
		return fmt.Sprintf("%s is at its limit of %d concurrent requests and this one waited %s for a turn; retry later",
			e.Lane, e.Limits.Concurrency, e.Limits.Wait)
	}
	return fmt.Sprintf("%s is at its limit of %d concurrent requests with %d more waiting; retry later",
		e.Lane, e.Limits.Concurrency, e.Limits.Queue)
}

// Admitter hands out the seats.
type Admitter struct {
	limits Limits

	mu      sync.Mutex
	tenants map[string]*tenantQueue
}

// tenantQueue is one tenant's seats and waiters. It exists while the
// tenant has requests running or waiting.
type tenantQueue struct {
	running int
	waiting int
	callers map[string][]*waiter // FIFO per caller
	turn    []string             // callers with waiters, in the order they get seats
}

type waiter struct {
	granted chan struct{} // closed when the seat is this waiter's
	done    bool          // granted, or given up (under Admitter.mu)
}

// New returns an admitter with these limits per tenant.
func New(l Limits) *Admitter {
	if l.Concurrency <= 0 {
		panic("fairq: Concurrency must be positive")
	}
	return &Admitter{limits: l, tenants: map[string]*tenantQueue{}}
}

// Acquire takes a seat of tenant (any lane name, as errors should show it:
// `tenant "vision"`) for caller, waiting for one if need be.
// It returns the function that gives the seat back (call it once, when the
// request ends), or a *Rejected, or ctx's error when ctx ended first.
func (a *Admitter) Acquire(ctx context.Context, tenant, caller string) (release func(), err error) {
	a.mu.Lock()
	q := a.tenants[tenant]
	if q == nil {
		q = &tenantQueue{callers: map[string][]*waiter{}}
		a.tenants[tenant] = q
	}
	if q.running < a.limits.Concurrency && q.waiting == 0 {
		q.running++
		a.mu.Unlock()
		return a.releaser(tenant), nil
	}
	if q.waiting >= a.limits.Queue {
		a.mu.Unlock()
		return nil, &Rejected{Lane: tenant, Limits: a.limits}
	}
	w := &waiter{granted: make(chan struct{})}
	if len(q.callers[caller]) == 0 {
		q.turn = append(q.turn, caller)
	}
	q.callers[caller] = append(q.callers[caller], w)
	q.waiting++
	a.mu.Unlock()

	var timeout <-chan time.Time
	if a.limits.Wait > 0 {
		t := time.NewTimer(a.limits.Wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.granted:
		return a.releaser(tenant), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = &Rejected{Lane: tenant, Limits: a.limits, Waited: true}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.done { // granted while giving up: take the seat, and give it on
		a.releaseLocked(tenant)
		return nil, err
	}
	w.done = true
	a.removeLocked(q, caller, w)
	return nil, err
}

func (a *Admitter) releaser(tenant string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			a.releaseLocked(tenant)
			a.mu.Unlock()
		})
	}
}

// releaseLocked gives a seat of tenant back: to the next caller's first
// waiter if any, else to nobody.
func (a *Admitter) releaseLocked(tenant string) {
	q := a.tenants[tenant]
	for len(q.turn) > 0 {
		caller := q.turn[0]
		ws := q.callers[caller]
		w := ws[0]
		if len(ws) == 1 {
			delete(q.callers, caller)
			q.turn = q.turn[1:]
		} else {
			q.callers[caller] = ws[1:]
			q.turn = append(q.turn[1:], caller) // the caller's next waiter goes last
		}
		q.waiting--
		w.done = true
		close(w.granted) // the seat passes on: running stays as it is
		return
	}
	q.running--
	if q.running == 0 && q.waiting == 0 {
		delete(a.tenants, tenant)
	}
}

// removeLocked takes a waiter that gave up out of its caller's queue.
func (a *Admitter) removeLocked(q *tenantQueue, caller string, w *waiter) {
	ws := q.callers[caller]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	q.waiting--
	if len(ws) > 0 {
		q.callers[caller] = ws
		return
	}
	delete(q.callers, caller)
	for i, c := range q.turn {
		if c == caller {
			q.turn = append(q.turn[:i:i], q.turn[i+1:]...)
			break
		}
	}
}

// Stats are one tenant's requests now, for metrics and tests.
type Stats struct{ Running, Waiting int }

// Stats returns tenant's requests running and waiting.
func (a *Admitter) Stats(tenant string) Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	if q := a.tenants[tenant]; q != nil {
		return Stats{Running: q.running, Waiting: q.waiting}
	}
	return Stats{}
}
