package api

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/job"
)

// A tenant's watchers share their reads. Every WatchJobs stream of a
// tenant wakes on the same notification and, most of the time, stands at
// the same cursor: without sharing, each of N streams would run the same
// three queries (the events after the cursor, their jobs, the queue view),
// and the time from a commit to the last stream would grow with N times
// the queries' cost. tailReads runs one read per (tenant, cursor) at a
// time and hands its result to every stream that asks meanwhile
// (singleflight); a stream behind the others reads on its own key.
// Filtering and the messages stay per stream: the shared result is only
// read, never changed.
type tailReads struct {
	g     singleflight.Group
	store Store
}

// tail is one read of a tenant's events after a cursor: the events, their
// jobs by uid, and the tenant's queue view when any of those jobs is
// QUEUED (queueAt zero otherwise).
type tail struct {
	events  []job.Event
	jobs    map[string]job.Job
	queue   map[string]job.QueueInfo
	queueAt time.Time
}

// tailReadTimeout bounds a shared read: it runs detached from the stream
// that started it, so that one stream going away does not fail the others.
const tailReadTimeout = 30 * time.Second

// read returns the tenant's events after cursor (at most limit), with
// their jobs and queue view, shared with concurrent callers of the same
// tenant and cursor.
func (t *tailReads) read(ctx context.Context, tenantID string, cursor int64, limit int) (*tail, error) {
	key := fmt.Sprintf("%s/%d/%d", tenantID, cursor, limit)
	ch := t.g.DoChan(key, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tailReadTimeout)
		defer cancel()
		return t.readOnce(rctx, tenantID, cursor, limit)
	})
	select {
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*tail), nil
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
