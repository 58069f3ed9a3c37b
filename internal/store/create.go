package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/resname"
)

// MaxBatchCreate is the most jobs one JobCreateMany (BatchCreateJobs) takes.
const MaxBatchCreate = 1000

// JobCreated is one job of a JobCreateMany, as it is now.
type JobCreated struct {
	Job job.Job
	// Created is false when the item's RequestID was seen before: Job is
	// the job that first request created.
	Created bool
}

// ItemError is why one item of a batch failed.
type ItemError struct {
	Index int // into the batch
	Err   error
}

func (e ItemError) Error() string { return fmt.Sprintf("item %d: %v", e.Index, e.Err) }

// BatchError says which items of a JobCreateMany failed; nothing of the
// batch was written. errors.Is sees each item's error (ErrAlreadyExists, ...).
type BatchError struct{ Items []ItemError }

func (e *BatchError) Error() string {
	parts := make([]string, len(e.Items))
	for i, it := range e.Items {
		parts[i] = it.Error()
	}
	return strings.Join(parts, "; ")
}

func (e *BatchError) Unwrap() []error {
	out := make([]error, len(e.Items))
	for i, it := range e.Items {
		out[i] = it.Err
	}
	return out
}

// JobCreate creates a QUEUED job with its first event, its idempotency key
// and a wake-up for the scheduler. The job is not claimable by workers
// until the scheduler admits it. created is false when RequestID was seen
// before: the first job is returned as it is now, or ErrNotFound when it
// has been deleted since (see JobGetByRequestID). A duplicate name is
// ErrAlreadyExists; a missing tenant ErrNotFound; a tenant that is not
// ACTIVE ErrFailedPrecondition. It is JobCreateMany of one job.
func (s *Store) JobCreate(ctx context.Context, p JobCreateParams) (job.Job, bool, error) {
	out, err := s.JobCreateMany(ctx, p.Job.Tenant, []JobCreateParams{p})
	var be *BatchError
	if errors.As(err, &be) && len(be.Items) == 1 {
		err = be.Items[0].Err
	}
	if err != nil {
		return job.Job{}, false, err
	}
	return out[0].Job, out[0].Created, nil
}

// JobCreateMany creates the tenant's jobs of items (at most MaxBatchCreate,
// each as JobCreate would) in one statement — one round trip, one
// transaction: all of them or none. An item whose RequestID was seen before
// creates nothing and returns the job of the first request. Names and
// request ids must be unique within the batch. Errors that belong to items
// (a name taken, a request id twice, a replayed request whose job was
// deleted) come as a *BatchError.
//
// The statement reads the tenant row FOR SHARE first: that conflicts with
// the FOR NO KEY UPDATE of TenantUpdate, so no job is inserted for a tenant
// that an offboarding committed meanwhile, and an offboarding waits for
// creates in flight and then sees their jobs. Idempotency keys are
// inserted ON CONFLICT DO NOTHING before the jobs: a concurrent retry of
// the same request waits on the key's unique index until the first
// commits, and then creates nothing. No NOTIFY is in the transaction: the
// scheduler's and the watchers' wake-ups leave after commit (notifier.go).
func (s *Store) JobCreateMany(ctx context.Context, tenantID string, items []JobCreateParams) ([]JobCreated, error) {
	if len(items) == 0 {
		return nil, nil
	}
	if len(items) > MaxBatchCreate {
		return nil, fmt.Errorf("%w: %d jobs in one batch; at most %d", ErrFailedPrecondition, len(items), MaxBatchCreate)
	}
	rows, err := newCreateRows(tenantID, items, s.timestamp())
	if err != nil {
		return nil, err
	}
	query, args := rows.statement(ctx)
	what := fmt.Sprintf("jobs of tenant %q", tenantID)
	if len(items) == 1 {
		what = jobWhat(tenantID, items[0].Job.Name)
	}
	r, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		if isUniqueViolation(err, "jobs_tenant_name_key") {
			return nil, s.nameConflicts(ctx, tenantID, items, err)
		}
		return nil, translate(err, what)
	}
	// The statement returns only what the database chose; the rest of each
	// job is what was sent (decoding the spec and status back costs as
	// much CPU as the whole insert does in Postgres).
	inserted := map[string]job.Job{}
	for r.Next() {
		var (
			uid     string
			created time.Time
			seq     int64
		)
		if err := r.Scan(&uid, &seq, &created); err != nil {
			r.Close()
			return nil, translate(err, what)
		}
		inserted[uid] = rows.job(uid, created)
	}
	r.Close()
	if err := r.Err(); err != nil {
		if isUniqueViolation(err, "jobs_tenant_name_key") {
			return nil, s.nameConflicts(ctx, tenantID, items, err)
		}
		return nil, translate(err, what)
	}
	if len(inserted) < len(items) {
		if err := s.tenantActive(ctx, tenantID); err != nil {
			return nil, err
		}
	}
	out := make([]JobCreated, len(items))
	var bad []ItemError
	for i, it := range items {
		if j, ok := inserted[rows.uids[i]]; ok {
			out[i] = JobCreated{Job: j, Created: true}
			continue
		}
		// Not inserted, the tenant being active: the request id was seen.
		w, err := jobByRequestID(ctx, s.pool, tenantID, it.RequestID)
		if errors.Is(err, errRequestUnknown) {
			err = fmt.Errorf("%w: the job of request id %q was purged meanwhile; retry", ErrConflict, it.RequestID)
		}
		if err != nil {
			bad = append(bad, ItemError{Index: i, Err: translate(err, jobWhat(tenantID, it.Job.Name))})
			continue
		}
		out[i] = JobCreated{Job: w.Job}
	}
	if len(inserted) > 0 {
		s.notifier.add(map[note]struct{}{{ChannelSchedule, tenantID}: {}, {ChannelEvents, tenantID}: {}})
	}
	if len(bad) > 0 {
		// The items created meanwhile stay; a retry with the same request
		// ids returns them.
		return nil, &BatchError{Items: bad}
	}
	return out, nil
}

// createRows is a batch as the statement's column arrays.
type createRows struct {
	items                                     []JobCreateParams
	index                                     map[string]int // by uid
	status                                    job.Status
	tenant                                    string
	uids, names, displays, creators, requests []string
	labels                                    []map[string]string
	specs                                     []job.Spec
	priorities                                []int32
	messages, resources                       []string
	details                                   []map[string]any
	now                                       time.Time
}

func newCreateRows(tenantID string, items []JobCreateParams, now time.Time) (*createRows, error) {
	n := len(items)
	r := &createRows{tenant: tenantID, now: now, items: items, index: make(map[string]int, n),
		uids: make([]string, n), names: make([]string, n), displays: make([]string, n), creators: make([]string, n),
		requests: make([]string, n), labels: make([]map[string]string, n), specs: make([]job.Spec, n),
		priorities: make([]int32, n), messages: make([]string, n),
		resources: make([]string, n), details: make([]map[string]any, n)}
	status := job.Status{
		State: job.Queued,
		Conditions: []job.Condition{{
			Type: job.CondQueued, Status: true, Reason: "Submitted",
			Message: "waiting for the scheduler to admit it", LastTransitionTime: now,
		}},
	}
	names, requests := map[string]int{}, map[string]int{}
	var bad []ItemError
	for i, it := range items {
		j := it.Job
		if j.Tenant != tenantID {
			bad = append(bad, ItemError{i, fmt.Errorf("%w: job %q is of tenant %q, not %q", ErrFailedPrecondition, j.Name, j.Tenant, tenantID)})
		}
		if first, ok := names[j.Name]; ok {
			bad = append(bad, ItemError{i, fmt.Errorf("%w: job %q is also item %d of the batch", ErrAlreadyExists, j.Name, first)})
		}
		names[j.Name] = i
		if it.RequestID != "" {
			if first, ok := requests[it.RequestID]; ok {
				bad = append(bad, ItemError{i, fmt.Errorf("%w: request id %q is also item %d's", ErrFailedPrecondition, it.RequestID, first)})
			}
			requests[it.RequestID] = i
		}
		if j.UID == "" {
			id, err := uuid.NewV7()
			if err != nil {
				return nil, fmt.Errorf("store: new job uid: %v", err)
			}
			j.UID = id.String()
		} else if _, err := uuid.Parse(j.UID); err != nil {
			bad = append(bad, ItemError{i, fmt.Errorf("%w: job uid %q is not a UUID", ErrFailedPrecondition, j.UID)})
		}
		message := "job submitted"
		if j.Creator != "" {
			message += " by " + j.Creator
		}
		r.index[j.UID] = i
		r.uids[i], r.names[i], r.displays[i], r.creators[i], r.requests[i] = j.UID, j.Name, j.DisplayName, j.Creator, it.RequestID
		r.labels[i], r.specs[i], r.priorities[i] = nonNilMap(j.Labels), j.Spec, j.Spec.Priority
		r.messages[i], r.resources[i] = message, resname.Job.Format(tenantID, j.Name)
		r.details[i] = map[string]any{"uid": j.UID, "requestId": it.RequestID}
	}
	if len(bad) > 0 {
		return nil, &BatchError{Items: bad}
	}
	r.status = status
	return r, nil
}

// job is the item with uid as JobGet would read it once inserted.
func (r *createRows) job(uid string, created time.Time) job.Job {
	i := r.index[uid]
	j := r.items[i].Job
	j.UID, j.CreateTime, j.UpdateTime, j.Status = uid, created, created, r.status
	j.Status.Conditions = slices.Clone(r.status.Conditions) // no job shares another's
	if len(j.Labels) == 0 {
		j.Labels = nil
	}
	return j
}

// statement is the one INSERT of the batch: the tenant's share lock, the
// idempotency keys, the jobs, their first events and, when a caller made
// the request, their audit records.
func (r *createRows) statement(ctx context.Context) (string, []any) {
	args := []any{r.tenant, r.uids, r.names, r.displays, r.labels, r.creators, r.specs, r.status,
		r.priorities, r.requests, r.messages, r.resources, r.details, r.now}
	auditCTE := ""
	if a, ok := audit.ActorFrom(ctx); ok {
		args = append(args, a.Subject, nonNilSlice(a.Groups), a.Issuer, a.Address, a.ID, string(audit.JobCreate))
		auditCTE = `, a AS (
			INSERT INTO audit_records (tenant_id, subject, groups, issuer, address, request_id, action, resource, details)
			SELECT j.tenant_id, $15, $16, $17, $18, $19, $20, i.resource, i.details
			FROM j JOIN i ON i.uid = j.uid ORDER BY i.ord
		)`
	}
	return `
		WITH t AS (
			SELECT id FROM tenants WHERE id = $1 AND state = 'ACTIVE' FOR SHARE
		), i AS (
			SELECT * FROM unnest($2::uuid[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::jsonb[],
			                     $9::int[], $10::text[], $11::text[], $12::text[], $13::jsonb[])
			     WITH ORDINALITY AS u(uid, name, display_name, labels, creator, spec, priority,
			                          request_id, message, resource, details, ord)
		), k AS (
			INSERT INTO idempotency_keys (tenant_id, request_id, job_uid, create_time)
			SELECT t.id, i.request_id, i.uid, $14 FROM t, i WHERE i.request_id <> '' ORDER BY i.ord
			ON CONFLICT (tenant_id, request_id) DO NOTHING
			RETURNING job_uid
		), j AS (
			INSERT INTO jobs (tenant_id, uid, name, display_name, labels, creator, spec, status, state,
			                  priority, create_time, update_time, queued_at, claim_after)
			SELECT t.id, i.uid, i.name, i.display_name, i.labels, i.creator, i.spec, $8::jsonb, 'QUEUED',
			       i.priority, $14, $14, $14, 'infinity'
			FROM t, i WHERE i.request_id = '' OR i.uid IN (SELECT job_uid FROM k)
			ORDER BY i.ord
			RETURNING tenant_id, uid, name, seq, create_time
		), e AS (
			INSERT INTO job_events (tenant_id, job_uid, job_name, type, reason, message, state, create_time)
			SELECT j.tenant_id, j.uid, j.name, 'Normal', 'Queued', i.message, 'QUEUED', j.create_time
			FROM j JOIN i ON i.uid = j.uid ORDER BY i.ord
		)` + auditCTE + `
		SELECT j.uid, j.seq, j.create_time FROM j ORDER BY j.seq`, args
}

// tenantActive says why nothing was inserted when the tenant is the reason.
func (s *Store) tenantActive(ctx context.Context, tenantID string) error {
	var state string
	err := s.pool.QueryRow(ctx, `SELECT state FROM tenants WHERE id = $1`, tenantID).Scan(&state)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: tenant %q", ErrNotFound, tenantID)
	case err != nil:
		return translate(err, fmt.Sprintf("tenant %q", tenantID))
	case state != "ACTIVE":
		return fmt.Errorf("%w: tenant %q is %s", ErrFailedPrecondition, tenantID, state)
	}
	return nil
}

// nameConflicts names the items whose names a live job of the tenant has
// (the batch was rolled back on the first).
func (s *Store) nameConflicts(ctx context.Context, tenantID string, items []JobCreateParams, cause error) error {
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.Job.Name
	}
	rows, err := s.pool.Query(ctx, `SELECT name FROM jobs WHERE tenant_id = $1 AND name = ANY($2) AND NOT deleted`, tenantID, names)
	if err != nil {
		return translate(cause, fmt.Sprintf("jobs of tenant %q", tenantID))
	}
	taken, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(taken) == 0 {
		// Deleted meanwhile: the conflict is gone, a retry may pass.
		return translate(cause, fmt.Sprintf("jobs of tenant %q", tenantID))
	}
	set := map[string]bool{}
	for _, n := range taken {
		set[n] = true
	}
	var bad []ItemError
	for i, it := range items {
		if set[it.Job.Name] {
			bad = append(bad, ItemError{i, fmt.Errorf("%w: %s", ErrAlreadyExists, jobWhat(tenantID, it.Job.Name))})
		}
	}
	return &BatchError{Items: bad}
}

// isUniqueViolation reports whether err is a unique violation of constraint.
func isUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == constraint
}

// RequestedJob is the job an earlier request created (JobGetByRequestIDs).
type RequestedJob struct {
	Job job.Job
	// Deleted: the job has been deleted since (not purged yet); a retry of
	// its request is NOT_FOUND, as in JobGetByRequestID.
	Deleted bool
}

// JobGetByRequestIDs is JobGetByRequestID for many request ids of a tenant
// in one query: the jobs of the ids seen before, by request id; ids never
// seen (or whose jobs were purged) are left out.
func (s *Store) JobGetByRequestIDs(ctx context.Context, tenantID string, requestIDs []string) (map[string]RequestedJob, error) {
	out := map[string]RequestedJob{}
	if len(requestIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT k.request_id, `+jobCols+` FROM idempotency_keys k
		JOIN jobs j ON j.tenant_id = k.tenant_id AND j.uid = k.job_uid
		WHERE k.tenant_id = $1 AND k.request_id = ANY($2)`, tenantID, requestIDs)
	if err != nil {
		return nil, translate(err, "request ids")
	}
	defer rows.Close()
	for rows.Next() {
		var rid string
		w, _, err := scanJob(prefixedRow{rows, &rid})
		if err != nil {
			return nil, translate(err, "request ids")
		}
		out[rid] = RequestedJob{Job: w.Job, Deleted: w.Deleted}
	}
	return out, translate(rows.Err(), "request ids")
}

// prefixedRow scans its first column into first and the rest as asked.
type prefixedRow struct {
	pgx.Row
	first *string
}

func (r prefixedRow) Scan(dest ...any) error { return r.Row.Scan(append([]any{r.first}, dest...)...) }
