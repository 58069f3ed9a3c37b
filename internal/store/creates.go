package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Concurrent JobCreate calls share statements.
//
// A job's INSERT statement (createStatement) costs Postgres about ten times
// what a plain one-row INSERT does — four tables, eleven indexes on jobs,
// the tenant's share lock — and every one of them ends in a commit that
// waits for its WAL to reach disk. Most of that cost is per statement, not
// per row: BatchCreateJobs writes 1,000 jobs in one statement at about
// twenty times the rate of one-job statements. So JobCreate does not run
// its own statement; it queues its job, and at most createLanes statements
// are in flight per Store. A lane takes every job queued when it starts —
// of any tenant and any caller, up to createBatchMax — and runs them as one
// statement; jobs that arrive meanwhile wait for the next. When the store
// is idle a job leaves at once (a lane is free), so nothing waits on a
// timer; under load, statements grow with the load and the commits per
// job fall. While one lane is busy the other starts only once as many
// jobs wait as that lane is sending (ready): callers whose statement just
// ended come back one by one, and a free lane that left with the first
// of them sent one-job statements — 2.5 jobs a statement at eight
// callers. A job that waits so waits at most for the busy lane's
// statement, which then takes it.
//
// Each job's outcome stays its own: insertJobs reports per item, and a
// statement that fails as a whole is run again without the jobs that made
// it fail (insertShared), so one caller's mistake is never another's
// error. Two jobs of one tenant with the same name or request id never
// share a statement: the second waits for the next.
const (
	createLanes    = 2
	createBatchMax = 256
	// createTimeout bounds a shared statement: it runs for several callers,
	// so none of their contexts is its own.
	createTimeout = 30 * time.Second
)

// createCall is one JobCreate waiting for its outcome.
type createCall struct {
	item createItem
	done chan struct{} // closed when out and err are set
	out  JobCreated
	err  error
}

// createQueue holds the JobCreate calls not yet sent.
type createQueue struct {
	// insert runs items as one statement if it can (Store.insertShared)
	// and says what became of each.
	insert func(context.Context, []createItem) ([]JobCreated, []error)

	mu      sync.Mutex
	waiting []*createCall
	lanes   int // lanes running
	sending int // jobs in the statements in flight

	sent atomic.Int64 // calls to insert, for tests
}

// add queues it and starts a lane if one is free.
func (q *createQueue) add(it createItem) *createCall {
	c := &createCall{item: it, done: make(chan struct{})}
	q.mu.Lock()
	q.waiting = append(q.waiting, c)
	start := q.lanes < createLanes && q.ready(q.lanes)
	if start {
		q.lanes++
	}
	q.mu.Unlock()
	if start {
		go q.run()
	}
	return c
}

// withdraw takes c out of the queue if no lane has taken it yet.
func (q *createQueue) withdraw(c *createCall) bool {
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
// other lanes running: when none is, or when as many jobs wait as they
// are sending. q.mu is held.
func (q *createQueue) ready(others int) bool {
	return others == 0 || len(q.waiting) >= min(q.sending, createBatchMax)
}

// run is a lane: it sends statements until nothing waits, or too little
// to send beside the other lane (ready).
func (q *createQueue) run() {
	var batch []*createCall
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
// up to createBatchMax, none sharing a tenant's name or request id.
// q.mu is held.
func (q *createQueue) take() []*createCall {
	type key struct{ tenant, kind, value string }
	var (
		batch []*createCall
		seen  = map[key]bool{}
		rest  = q.waiting[:0:0]
	)
	for _, c := range q.waiting {
		j := c.item.p.Job
		name, req := key{j.Tenant, "name", j.Name}, key{j.Tenant, "request", c.item.p.RequestID}
		if len(batch) == createBatchMax || seen[name] || (req.value != "" && seen[req]) {
			rest = append(rest, c)
			continue
		}
		seen[name], seen[req] = true, true
		batch = append(batch, c)
	}
	q.waiting = rest
	return batch
}

// send runs batch and hands each call its outcome.
func (q *createQueue) send(batch []*createCall) {
	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	items := make([]createItem, len(batch))
	for i, c := range batch {
		items[i] = c.item
	}
	out, errs := q.insert(ctx, items)
	q.sent.Add(1)
	for i, c := range batch {
		if c.err = errs[i]; c.err == nil {
			c.out = out[i]
		}
		close(c.done)
	}
}

// insertShared runs items — of several tenants and callers, no two of one
// tenant with the same name or request id — as one statement and says
// what became of each. A statement fails as a whole when a name is taken
// (the unique violation rolls every item back): the items whose names a
// live job has get ErrAlreadyExists and the rest go again. A statement
// that fails otherwise is retried one job at a time, so that one caller's
// job is never another's error.
func (s *Store) insertShared(ctx context.Context, items []createItem) ([]JobCreated, []error) {
	out, errs, err := s.insertJobs(ctx, items)
	if err == nil {
		return out, errs
	}
	out, errs = make([]JobCreated, len(items)), make([]error, len(items))
	if len(items) == 1 {
		errs[0] = s.createError(ctx, items[0], err)
		return out, errs
	}
	var taken map[int]bool
	if isUniqueViolation(err, "jobs_tenant_name_key") {
		taken, _ = s.takenNames(ctx, items) // on an error, one at a time below
	}
	if len(taken) > 0 {
		var again []int // indexes into items
		for i, it := range items {
			if taken[i] {
				errs[i] = fmt.Errorf("%w: %s", ErrAlreadyExists, jobWhat(it.p.Job.Tenant, it.p.Job.Name))
			} else {
				again = append(again, i)
			}
		}
		rest := make([]createItem, len(again))
		for k, i := range again {
			rest[k] = items[i]
		}
		o, e := s.insertShared(ctx, rest)
		for k, i := range again {
			out[i], errs[i] = o[k], e[k]
		}
		return out, errs
	}
	for i, it := range items {
		o, e := s.insertShared(ctx, []createItem{it})
		out[i], errs[i] = o[0], e[0]
	}
	return out, errs
}

// takenNames says which items' names a live job of their tenant has.
func (s *Store) takenNames(ctx context.Context, items []createItem) (map[int]bool, error) {
	tenants, names := make([]string, len(items)), make([]string, len(items))
	for i, it := range items {
		tenants[i], names[i] = it.p.Job.Tenant, it.p.Job.Name
	}
	rows, err := s.pool.Query(ctx, `SELECT u.ord - 1 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(tenant_id, name, ord)
		WHERE EXISTS (SELECT FROM jobs j WHERE j.tenant_id = u.tenant_id AND j.name = u.name AND NOT j.deleted)`, tenants, names)
	if err != nil {
		return nil, err
	}
	idx, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, err
	}
	taken := make(map[int]bool, len(idx))
	for _, i := range idx {
		taken[i] = true
	}
	return taken, nil
}

// createError is what a failed one-job statement means for its caller.
func (s *Store) createError(ctx context.Context, it createItem, err error) error {
	tenantID, name := it.p.Job.Tenant, it.p.Job.Name
	if isUniqueViolation(err, "jobs_tenant_name_key") {
		err = s.nameConflicts(ctx, tenantID, []JobCreateParams{it.p}, err)
		var be *BatchError
		if errors.As(err, &be) && len(be.Items) == 1 {
			return be.Items[0].Err
		}
	}
	return translate(err, jobWhat(tenantID, name))
}
