package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trainyard/trainyard/internal/job"
)

// Event ids order events by writing transaction, then by write order
// within it (trainyard_event_id, migration 000005), and are not assigned
// in commit order: a transaction that got its id earlier may commit later.
// So reads deliver only events below the watermark, the xmin of their
// snapshot shifted like an id (trainyard_event_watermark): every
// transaction below it has ended, so once a reader has passed id N no event
// with a smaller id can appear, and "after id N" is a safe resume point.
//
// An event that committed but is not below the watermark yet (an older
// transaction, of anybody, is still open) is held back. A read that meets
// one waits for it a little (holdBackWait: the older transactions are
// short) and reads again, so that a caller who just wrote an event reads it
// and a watcher woken by its NOTIFY delivers it; past holdBackWait the read
// returns what is deliverable, and the rest follows at the next read.

const eventCols = `e.id, e.job_uid::text, e.tenant_id, e.job_name, e.type, e.reason, e.message, e.state, e.create_time`

// sqlHeld is the column that says an event is above the watermark; the
// subquery runs once per statement.
const sqlHeld = `e.id >= (SELECT trainyard_event_watermark())`

// holdBackWait bounds how long a read waits for held-back events.
const holdBackWait = 500 * time.Millisecond

// heldEvent is an event read with whether it is held back and, for the
// watches' reads, the tenant's event horizon as the same statement saw it.
type heldEvent struct {
	job.Event
	held    bool
	horizon int64
}

// scanHeldEvent scans eventCols, sqlHeld and sqlHorizon.
func scanHeldEvent(row pgx.CollectableRow) (heldEvent, error) {
	var (
		e     heldEvent
		state string
	)
	err := row.Scan(&e.ID, &e.JobUID, &e.Tenant, &e.Job, &e.Type, &e.Reason, &e.Message, &state, &e.CreateTime, &e.held, &e.horizon)
	e.State = job.State(state)
	return e, err
}

// deliverable calls read (events with ids above after, at most limit, in id
// order) until what it returns holds nothing back, the limit is reached or
// holdBackWait has passed, and returns the events below the watermark. A
// page whose horizon is above its after fails with *EventsExpiredError:
// retention may have deleted events it would have had. (Reads that do not
// select the horizon leave it 0.)
func deliverable(ctx context.Context, after int64, limit int, read func(after int64, limit int) ([]heldEvent, error)) ([]job.Event, error) {
	out := []job.Event{}
	deadline := time.Now().Add(holdBackWait)
	pause := time.Millisecond
	for {
		page, err := read(after, limit-len(out))
		if err != nil {
			return nil, err
		}
		if len(page) > 0 && page[0].horizon > after {
			return nil, &EventsExpiredError{After: after, Horizon: page[0].horizon}
		}
		held := false
		for _, e := range page {
			if e.held {
				held = true
				break
			}
			out = append(out, e.Event)
			after = e.ID
		}
		if !held || len(out) >= limit || time.Now().After(deadline) {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

func clampEventLimit(n int) int {
	switch {
	case n <= 0:
		return 100
	case n > MaxPageSize:
		return MaxPageSize
	}
	return n
}

// EventList returns the events of the tenant's (undeleted) job jobName with
// ids above afterID, oldest first, at most limit (default 100, max 1000).
func (s *Store) EventList(ctx context.Context, tenantID, jobName string, afterID int64, limit int) ([]job.Event, error) {
	what := jobWhat(tenantID, jobName)
	events, err := deliverable(ctx, afterID, clampEventLimit(limit), func(after int64, limit int) ([]heldEvent, error) {
		// One round trip: no row means no such job; a row of NULLs, no events.
		rows, err := s.pool.Query(ctx, `
			SELECT `+eventCols+`, `+sqlHeld+`
			FROM jobs j
			LEFT JOIN LATERAL (
				SELECT * FROM job_events e
				WHERE e.tenant_id = j.tenant_id AND e.job_uid = j.uid AND e.id > $3
				ORDER BY e.id LIMIT $4
			) e ON true
			WHERE j.tenant_id = $1 AND j.name = $2 AND NOT j.deleted
			ORDER BY e.id`, tenantID, jobName, after, limit)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		found := false
		events := []heldEvent{}
		for rows.Next() {
			found = true
			var (
				id                                         *int64
				uid, tenant, name, typ, reason, msg, state string
				created                                    *time.Time
				held                                       *bool
			)
			// Columns are NULL (scanned as "") when the job has no events after afterID.
			err := rows.Scan(&id, (*nullString)(&uid), (*nullString)(&tenant), (*nullString)(&name),
				(*nullString)(&typ), (*nullString)(&reason), (*nullString)(&msg), (*nullString)(&state), &created, &held)
			if err != nil {
				return nil, err
			}
			if id == nil {
				continue
			}
			events = append(events, heldEvent{job.Event{ID: *id, JobUID: uid, Tenant: tenant, Job: name, Type: typ,
				Reason: reason, Message: msg, State: job.State(state), CreateTime: *created}, *held, 0})
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if !found {
			return nil, pgx.ErrNoRows
		}
		return events, nil
	})
	return events, translate(err, what)
}

// EventListByJob returns the events of the tenant's job with this uid (the
// job deleted or not) with ids above afterID, oldest first, at most limit
// (default 100, max 1000). Unlike EventList it follows one job, never
// another that took its name after it was deleted; a uid without events (or
// without a job) gives an empty list.
func (s *Store) EventListByJob(ctx context.Context, tenantID, uid string, afterID int64, limit int) ([]job.Event, error) {
	what := fmt.Sprintf("events of job %s in tenant %q", uid, tenantID)
	if _, err := uuid.Parse(uid); err != nil {
		return []job.Event{}, nil
	}
	events, err := deliverable(ctx, afterID, clampEventLimit(limit), func(after int64, limit int) ([]heldEvent, error) {
		rows, err := s.pool.Query(ctx, `SELECT `+eventCols+`, `+sqlHeld+`, `+sqlHorizon+` FROM job_events e
			WHERE e.tenant_id = $1 AND e.job_uid = $2 AND e.id > $3 ORDER BY e.id LIMIT $4`,
			tenantID, uid, after, limit)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, scanHeldEvent)
	})
	return events, translate(err, what)
}

// EventListTenant returns the events of all the tenant's jobs with ids above
// afterID, oldest first (for watching a tenant).
func (s *Store) EventListTenant(ctx context.Context, tenantID string, afterID int64, limit int) ([]job.Event, error) {
	events, err := deliverable(ctx, afterID, clampEventLimit(limit), func(after int64, limit int) ([]heldEvent, error) {
		rows, err := s.pool.Query(ctx, `SELECT `+eventCols+`, `+sqlHeld+`, `+sqlHorizon+` FROM job_events e
			WHERE e.tenant_id = $1 AND e.id > $2 ORDER BY e.id LIMIT $3`, tenantID, after, limit)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, scanHeldEvent)
	})
	return events, translate(err, "events")
}

// EventLastID returns the id of the tenant's newest event below the
// watermark (0 when none): a watch that starts "now" resumes after it, and
// so also gets whatever committed above the watermark just before it
// started, never less. When retention has deleted events of the tenant
// past that (a tenant quiet for longer than the retention age), it is the
// tenant's event horizon instead, so that the watch's reads find their
// position good (EventsExpiredError).
func (s *Store) EventLastID(ctx context.Context, tenantID string) (int64, error) {
	var id int64
	deadline := time.Now().Add(holdBackWait)
	for {
		var held bool
		err := s.pool.QueryRow(ctx, `
			WITH w AS (SELECT trainyard_event_watermark() AS wm)
			SELECT greatest((SELECT coalesce(max(id), 0) FROM job_events WHERE tenant_id = $1 AND id < w.wm), `+sqlHorizon+`),
			       EXISTS (SELECT FROM job_events WHERE tenant_id = $1 AND id >= w.wm)
			FROM w`, tenantID).Scan(&id, &held)
		if err != nil || !held || time.Now().After(deadline) {
			return id, translate(err, "events")
		}
		// What was just written is "now" too: wait for it, as reads do.
		select {
		case <-ctx.Done():
			return 0, translate(ctx.Err(), "events")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// nullString scans NULL as "".
type nullString string

func (n *nullString) ScanText(v pgtype.Text) error {
	*n = nullString(v.String)
	return nil
}
