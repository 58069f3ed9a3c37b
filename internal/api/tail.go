package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// A tenant's watchers share their reads. Every WatchJobs stream of a
// tenant wakes on the same notification and, most of the time, stands at
// the same cursor: without sharing, each of N streams would run the same
// three queries (the events after the cursor, their jobs, the queue view),
// and the time from a commit to the last stream would grow with N times
// the queries' cost. tailReads runs one read per (tenant, cursor) at a
// time and hands its result to every stream that asks meanwhile — but only
// if it started after the caller's since: a stream woken by a commit's
// notification must not be handed a read that began before the
// notification arrived (it could miss the commit), so since is that
// arrival (store.Wakeups.Last), the same for every stream it woke. A
// stream behind the others reads on its own key. Filtering and the
// messages stay per stream: the shared result is only read, never
// changed.
type tailReads struct {
	store Store

	mu      sync.Mutex
	flights map[string]*flight // by tenant/cursor/limit
}

// flight is one shared read: done closes when val and err are set.
type flight struct {
	started time.Time
	readers int // the reads that joined it, its first included (tests wait on it)
	done    chan struct{}
	val     *tail
	err     error
}

// tail is one read of a tenant's events after a cursor: the events, their
// jobs by uid, and the tenant's queue view when any of those jobs is
// QUEUED (queueAt zero otherwise).
type tail struct {
	events  []job.Event
	jobs    map[string]job.Job
	queue   map[string]job.QueueInfo
	queueAt time.Time
	// The tenant, read after the events (when there are any): streams
	// re-check their caller's access against it before sending them
	// (auth.Recheck), so a member removed before the events committed
	// does not get them, without a read per stream.
	tenant     tenant.Tenant
	tenantGone bool
}

// tailReadTimeout bounds a shared read: it runs detached from the stream
// that started it, so that one stream going away does not fail the others.
const tailReadTimeout = 30 * time.Second

// read returns the tenant's events after cursor (at most limit), with
// their jobs and queue view, from a read that started at or after since,
// shared with the other callers of the same tenant and cursor.
func (t *tailReads) read(ctx context.Context, tenantID string, cursor int64, limit int, since time.Time) (*tail, error) {
	key := fmt.Sprintf("%s/%d/%d", tenantID, cursor, limit)
	t.mu.Lock()
	f := t.flights[key]
	if f == nil || f.started.Before(since) {
		f = &flight{started: time.Now(), done: make(chan struct{})}
		if t.flights == nil {
			t.flights = map[string]*flight{}
		}
		t.flights[key] = f
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tailReadTimeout)
			f.val, f.err = t.readOnce(rctx, tenantID, cursor, limit)
			cancel()
			t.mu.Lock()
			if t.flights[key] == f {
				delete(t.flights, key)
			}
			t.mu.Unlock()
			close(f.done)
		}()
	}
	f.readers++
	t.mu.Unlock()
	select {
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	case <-f.done:
		return f.val, f.err
	}
}

func (t *tailReads) readOnce(ctx context.Context, tenantID string, cursor int64, limit int) (*tail, error) {
	events, err := t.store.EventListTenant(ctx, tenantID, cursor, limit)
	if err != nil || len(events) == 0 {
		return &tail{events: events}, err
	}
	uids := make([]string, 0, len(events))
	seen := map[string]bool{}
	for _, e := range events {
		if !seen[e.JobUID] {
			seen[e.JobUID] = true
			uids = append(uids, e.JobUID)
		}
	}
	list, err := t.store.JobGetMany(ctx, tenantID, uids)
	if err != nil {
		return nil, err
	}
	out := &tail{events: events, jobs: make(map[string]job.Job, len(list))}
	out.tenant, err = t.store.TenantGet(ctx, tenantID)
	if errors.Is(err, store.ErrNotFound) {
		out.tenantGone, err = true, nil
	}
	if err != nil {
		return nil, err
	}
	queued := false
	for _, j := range list {
		out.jobs[j.UID] = j
		queued = queued || j.Status.State == job.Queued
	}
	if queued {
		if out.queue, out.queueAt, err = t.store.QueueGet(ctx, tenantID); err != nil {
			return nil, err
		}
	}
	return out, nil
}
