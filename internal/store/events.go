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

// Event ids increase across all jobs and, within a tenant, in commit order
// (see sqlTenantEventsLock): resuming "after id N" never misses an event.

const eventCols = `e.id, e.job_uid::text, e.tenant_id, e.job_name, e.type, e.reason, e.message, e.state, e.create_time`

func scanEvent(row pgx.CollectableRow) (job.Event, error) {
	var (
		e     job.Event
		state string
	)
	err := row.Scan(&e.ID, &e.JobUID, &e.Tenant, &e.Job, &e.Type, &e.Reason, &e.Message, &state, &e.CreateTime)
	e.State = job.State(state)
	return e, err
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
	// One round trip: no row means no such job; a row of NULLs, no events.
	rows, err := s.pool.Query(ctx, `
		SELECT e.id, e.job_uid::text, e.tenant_id, e.job_name, e.type, e.reason, e.message, e.state, e.create_time
		FROM jobs j
		LEFT JOIN LATERAL (
			SELECT * FROM job_events e
			WHERE e.tenant_id = j.tenant_id AND e.job_uid = j.uid AND e.id > $3
			ORDER BY e.id LIMIT $4
		) e ON true
		WHERE j.tenant_id = $1 AND j.name = $2 AND NOT j.deleted
		ORDER BY e.id`, tenantID, jobName, afterID, clampEventLimit(limit))
	if err != nil {
		return nil, translate(err, what)
	}
	defer rows.Close()
	found := false
	events := []job.Event{}
	for rows.Next() {
		found = true
		var (
			id                                         *int64
			uid, tenant, name, typ, reason, msg, state string
			created                                    *time.Time
		)
		// Columns are NULL (scanned as "") when the job has no events after afterID.
		err := rows.Scan(&id, (*nullString)(&uid), (*nullString)(&tenant), (*nullString)(&name),
			(*nullString)(&typ), (*nullString)(&reason), (*nullString)(&msg), (*nullString)(&state), &created)
		if err != nil {
			return nil, translate(err, what)
		}
		if id == nil {
			continue
		}
		events = append(events, job.Event{ID: *id, JobUID: uid, Tenant: tenant, Job: name, Type: typ,
			Reason: reason, Message: msg, State: job.State(state), CreateTime: *created})
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, what)
	}
	if !found {
		return nil, translate(pgx.ErrNoRows, what)
	}
	return events, nil
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
	rows, err := s.pool.Query(ctx, `SELECT `+eventCols+` FROM job_events e
		WHERE e.tenant_id = $1 AND e.job_uid = $2 AND e.id > $3 ORDER BY e.id LIMIT $4`,
		tenantID, uid, afterID, clampEventLimit(limit))
	if err != nil {
		return nil, translate(err, what)
	}
	events, err := pgx.CollectRows(rows, scanEvent)
	return events, translate(err, what)
}

// EventListTenant returns the events of all the tenant's jobs with ids above
// afterID, oldest first (for watching a tenant).
func (s *Store) EventListTenant(ctx context.Context, tenantID string, afterID int64, limit int) ([]job.Event, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+eventCols+` FROM job_events e
		WHERE e.tenant_id = $1 AND e.id > $2 ORDER BY e.id LIMIT $3`, tenantID, afterID, clampEventLimit(limit))
	if err != nil {
		return nil, translate(err, "events")
	}
	events, err := pgx.CollectRows(rows, scanEvent)
	return events, translate(err, "events")
}

// EventLastID returns the id of the tenant's newest event (0 when none): a
// watch that starts "now" resumes after it.
func (s *Store) EventLastID(ctx context.Context, tenantID string) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM job_events WHERE tenant_id = $1`, tenantID).Scan(&id)
	return id, translate(err, "events")
}

// nullString scans NULL as "".
type nullString string

func (n *nullString) ScanText(v pgtype.Text) error {
	*n = nullString(v.String)
	return nil
}
