package store

import (
	"context"
	"encoding/json"
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
	"github.com/trainyard/trainyard/internal/tenant"
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
// ACTIVE ErrFailedPrecondition.
//
// Concurrent calls share statements (createshare.go): the job is committed in
// the same transaction as other callers' jobs, but its outcome is its own.
// A caller whose ctx ends before its job was sent creates nothing; one
// whose ctx ends after may or may not have created it, as with any
// statement cut off mid-commit (a retry with the same RequestID is safe).
func (s *Store) JobCreate(ctx context.Context, p JobCreateParams) (job.Job, bool, error) {
	it, err := prepareCreate(ctx, p)
	if err != nil {
		return job.Job{}, false, err
	}
	out, sent, err := s.creates.call(ctx, it)
	if !sent {
		return job.Job{}, false, translate(err, jobWhat(p.Job.Tenant, p.Job.Name))
	}
	return out.Job, out.Created, err
}

// JobCreateMany creates the tenant's jobs of items (at most MaxBatchCreate,
// each as JobCreate would) in one statement — one round trip, one
// transaction: all of them or none. An item whose RequestID was seen before
// creates nothing and returns the job of the first request. Names and
// request ids must be unique within the batch. Errors that belong to items
// (a name taken, a request id twice, a replayed request whose job was
// deleted) come as a *BatchError.
func (s *Store) JobCreateMany(ctx context.Context, tenantID string, items []JobCreateParams) ([]JobCreated, error) {
	if len(items) == 0 {
		return nil, nil
	}
	if len(items) > MaxBatchCreate {
		return nil, fmt.Errorf("%w: %d jobs in one batch; at most %d", ErrFailedPrecondition, len(items), MaxBatchCreate)
	}
	batch := make([]createItem, len(items))
	names, requests := map[string]int{}, map[string]int{}
	var bad []ItemError
	for i, p := range items {
		j := p.Job
		if j.Tenant != tenantID {
			bad = append(bad, ItemError{i, fmt.Errorf("%w: job %q is of tenant %q, not %q", ErrFailedPrecondition, j.Name, j.Tenant, tenantID)})
		}
		if first, ok := names[j.Name]; ok {
			bad = append(bad, ItemError{i, fmt.Errorf("%w: job %q is also item %d of the batch", ErrAlreadyExists, j.Name, first)})
		}
		names[j.Name] = i
		if p.RequestID != "" {
			if first, ok := requests[p.RequestID]; ok {
				bad = append(bad, ItemError{i, fmt.Errorf("%w: request id %q is also item %d's", ErrFailedPrecondition, p.RequestID, first)})
			}
			requests[p.RequestID] = i
		}
		it, err := prepareCreate(ctx, p)
		if err != nil {
			bad = append(bad, ItemError{i, err})
		}
		batch[i] = it
	}
	if len(bad) > 0 {
		return nil, &BatchError{Items: bad}
	}
	out, errs, err := s.insertJobs(ctx, batch)
	if err != nil {
		if isUniqueViolation(err, "jobs_tenant_name_key") {
			return nil, s.nameConflicts(ctx, tenantID, items, err)
		}
		what := fmt.Sprintf("jobs of tenant %q", tenantID)
		if len(items) == 1 {
			what = jobWhat(tenantID, items[0].Job.Name)
		}
		return nil, translate(err, what)
	}
	for i, err := range errs {
		if err != nil {
			bad = append(bad, ItemError{Index: i, Err: err})
		}
	}
	if len(bad) > 0 {
		// A tenant that is not active fails the batch, not each item.
		if err := s.tenantActive(ctx, tenantID); err != nil {
			return nil, err
		}
		// The items created meanwhile stay; a retry with the same request
		// ids returns them.
		return nil, &BatchError{Items: bad}
	}
	return out, nil
}

// createItem is one job to insert, with its uid set, and who asked for it
// (the audit log's actor; none for the system's own creates).
type createItem struct {
	p       JobCreateParams
	uid     uuid.UUID // p.Job.UID
	actor   audit.Actor
	audited bool
}

// prepareCreate gives p's job a uid (UUIDv7) unless it has a valid one.
func prepareCreate(ctx context.Context, p JobCreateParams) (createItem, error) {
	var (
		id  uuid.UUID
		err error
	)
	if p.Job.UID == "" {
		if id, err = uuid.NewV7(); err != nil {
			return createItem{}, fmt.Errorf("store: new job uid: %v", err)
		}
		p.Job.UID = id.String()
	} else if id, err = uuid.Parse(p.Job.UID); err != nil {
		return createItem{}, fmt.Errorf("%w: job uid %q is not a UUID", ErrFailedPrecondition, p.Job.UID)
	}
	a, ok := audit.ActorFrom(ctx)
	return createItem{p: p, uid: id, actor: a, audited: ok}, nil
}

// queuedStatus is a new job's status.
func queuedStatus(now time.Time) job.Status {
	return job.Status{
		State: job.Queued,
		Conditions: []job.Condition{{
			Type: job.CondQueued, Status: true, Reason: "Submitted",
			Message: "waiting for the scheduler to admit it", LastTransitionTime: now,
		}},
	}
}

// insertJobs runs the one INSERT statement of items, which may be of
// several tenants and callers, and says what became of each: created, a
// replay of an earlier request (the job as it is now), or an error of the
// item (its tenant is not active, its caller lacks the role it needs, its
// earlier job was purged). err is the statement's own failure,
// untranslated (a unique violation of a name rolls back every item).
//
// The statement reads the tenants' rows FOR SHARE first: that conflicts
// with the FOR NO KEY UPDATE of TenantUpdate, so no job is inserted for a
// tenant that an offboarding committed meanwhile, and an offboarding waits
// for creates in flight and then sees their jobs. An item with a Caller
// is inserted only if the tenant's members, as the statement reads them,
// give the caller the role: a membership whose removal committed before
// the statement began is refused. Idempotency keys are
// inserted ON CONFLICT DO NOTHING before the jobs: a concurrent retry of
// the same request waits on the key's unique index until the first
// commits, and then creates nothing. No NOTIFY is in the transaction: the
// scheduler's and the watchers' wake-ups leave after commit (notifier.go).
func (s *Store) insertJobs(ctx context.Context, items []createItem) ([]JobCreated, []error, error) {
	now := s.timestamp()
	status := queuedStatus(now)
	query, args := createStatement(items, status, now)
	batch := &pgx.Batch{}
	batch.Queue(sqlGenericPlans)
	batch.Queue(query, args...)
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, nil, err
	}
	r, err := br.Query()
	if err != nil {
		return nil, nil, err
	}
	// The statement returns only what the database chose; the rest of each
	// job is what was sent (decoding the spec and status back costs as
	// much CPU as the whole insert does in Postgres).
	type insertedRow struct {
		seq     int64
		created time.Time
	}
	inserted := make(map[string]insertedRow, len(items))
	for r.Next() {
		var (
			uid string
			row insertedRow
		)
		if err := r.Scan(&uid, &row.seq, &row.created); err != nil {
			r.Close()
			return nil, nil, err
		}
		inserted[uid] = row
	}
	r.Close()
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	if err := br.Close(); err != nil { // the commit's outcome
		return nil, nil, err
	}
	out := make([]JobCreated, len(items))
	errs := make([]error, len(items))
	notes := map[note]struct{}{}
	inactive := map[string]error{} // by tenant, for items not inserted
	for i, it := range items {
		tenantID := it.p.Job.Tenant
		if row, ok := inserted[it.p.Job.UID]; ok {
			j := it.p.Job
			j.CreateTime, j.UpdateTime, j.Status = row.created, row.created, status
			j.Status.Conditions = slices.Clone(status.Conditions) // no job shares another's
			if len(j.Labels) == 0 {
				j.Labels = nil
			}
			out[i] = JobCreated{Job: j, Created: true}
			notes[note{ChannelSchedule, tenantID}] = struct{}{}
			notes[note{ChannelEvents, tenantID}] = struct{}{}
			continue
		}
		// Not inserted: the tenant is not active, the caller lacks the
		// role, or the request id was seen.
		err, checked := inactive[tenantID]
		if !checked {
			err = s.tenantActive(ctx, tenantID)
			inactive[tenantID] = err
		}
		if err == nil && it.p.Caller != nil {
			err = s.callerRole(ctx, tenantID, *it.p.Caller)
		}
		if err == nil {
			var w WorkerJob
			w, err = jobByRequestID(ctx, s.pool, tenantID, it.p.RequestID)
			if errors.Is(err, errRequestUnknown) {
				err = fmt.Errorf("%w: the job of request id %q was purged meanwhile; retry", ErrConflict, it.p.RequestID)
			}
			out[i] = JobCreated{Job: w.Job}
		}
		errs[i] = translate(err, jobWhat(tenantID, it.p.Job.Name))
	}
	s.notifier.add(notes)
	return out, errs, nil
}

// createStatement is insertJobs' INSERT: the tenants' share locks, the
// idempotency keys, the jobs, their first events and, for the items a
// caller asked for, their audit records. Its shape does not depend on the
// items, so one prepared statement serves every batch.
//
// Events and audit records are written from n, the items the jobs INSERT
// takes (it inserts each of them or fails as a whole), not from a join of
// its RETURNING with the items: Postgres's generic plan for this statement
// expects ten items and joined 1,000 by a nested loop, a million
// comparisons twice (a 1,000-job batch took 270 ms from its sixth run on,
// 60 ms before; TestJobCreateManyPlanIsLinear).
func createStatement(items []createItem, status job.Status, now time.Time) (string, []any) {
	n := len(items)
	var (
		tenants                                = make([]string, 0, n)
		uids                                   = make([]uuid.UUID, n) // binary: pgx encodes no []string as uuid[] but in text, after a failed try
		names, displays, creators, requests    = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		labels                                 = make([]map[string]string, n)
		specs                                  = make([]job.Spec, n)
		priorities                             = make([]int32, n)
		messages, resources                    = make([]string, n), make([]string, n)
		details                                = make([]map[string]any, n)
		audited                                = make([]bool, n)
		subjects, issuers, addresses, auditIDs = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		groups                                 = make([]string, n) // JSON arrays: unnest takes no ragged 2-D array
		rowTenants                             = make([]string, n)
		needs                                  = make([]int32, n) // tenant.Role: 0 checks nothing
		callers, callerGroups                  = make([]string, n), make([]string, n)
	)
	for i, it := range items {
		j := it.p.Job
		if !slices.Contains(tenants, j.Tenant) {
			tenants = append(tenants, j.Tenant)
		}
		message := "job submitted"
		if j.Creator != "" {
			message += " by " + j.Creator
		}
		rowTenants[i], uids[i], names[i], displays[i], creators[i], requests[i] = j.Tenant, it.uid, j.Name, j.DisplayName, j.Creator, it.p.RequestID
		labels[i], specs[i], priorities[i] = nonNilMap(j.Labels), j.Spec, j.Spec.Priority
		messages[i], resources[i] = message, resname.Job.Format(j.Tenant, j.Name)
		details[i] = map[string]any{"uid": j.UID, "requestId": it.p.RequestID}
		a := it.actor
		g, _ := json.Marshal(nonNilSlice(a.Groups)) // a []string always encodes
		audited[i], subjects[i], groups[i], issuers[i], addresses[i], auditIDs[i] =
			it.audited, a.Subject, string(g), a.Issuer, a.Address, a.ID
		callerGroups[i] = "[]"
		if c := it.p.Caller; c != nil {
			g, _ := json.Marshal(nonNilSlice(c.Groups))
			needs[i], callers[i], callerGroups[i] = int32(max(c.Role, tenant.RoleViewer)), c.Subject, string(g)
		}
	}
	slices.Sort(tenants) // share locks taken in one order
	args := []any{tenants, rowTenants, uids, names, displays, labels, creators, specs, status,
		priorities, requests, messages, resources, details, now,
		audited, subjects, groups, issuers, addresses, auditIDs, string(audit.JobCreate),
		needs, callers, callerGroups}
	return `
		WITH t AS (
			SELECT id FROM tenants WHERE id = ANY($1::text[]) AND state = 'ACTIVE' ORDER BY id FOR SHARE
		), i AS (
			SELECT * FROM unnest($2::text[], $3::uuid[], $4::text[], $5::text[], $6::jsonb[], $7::text[], $8::jsonb[],
			                     $10::int[], $11::text[], $12::text[], $13::text[], $14::jsonb[],
			                     $16::bool[], $17::text[], $18::text[], $19::text[], $20::text[], $21::text[],
			                     $23::int[], $24::text[], $25::text[])
			     WITH ORDINALITY AS u(tenant_id, uid, name, display_name, labels, creator, spec, priority,
			                          request_id, message, resource, details,
			                          audited, subject, groups, issuer, address, audit_id,
			                          need, caller, caller_groups, ord)
			WHERE tenant_id = ANY (ARRAY(SELECT id FROM t))
			  AND (u.need = 0 OR u.need <= (
			      SELECT coalesce(max(array_position(ARRAY['viewer','editor','admin'], m.role)), 0)
			      FROM tenant_members m
			      WHERE m.tenant_id = u.tenant_id
			        AND (m.kind = 'subject' AND m.principal = u.caller AND u.caller <> ''
			             OR m.kind = 'group' AND u.caller_groups::jsonb ? m.principal)))
		), k AS (
			INSERT INTO idempotency_keys (tenant_id, request_id, job_uid, create_time)
			SELECT i.tenant_id, i.request_id, i.uid, $15 FROM i WHERE i.request_id <> '' ORDER BY i.ord
			ON CONFLICT (tenant_id, request_id) DO NOTHING
			RETURNING job_uid
		), n AS (
			SELECT * FROM i WHERE i.request_id = '' OR i.uid IN (SELECT job_uid FROM k)
		), j AS (
			INSERT INTO jobs (tenant_id, uid, name, display_name, labels, creator, spec, status, state,
			                  priority, create_time, update_time, queued_at, claim_after)
			SELECT n.tenant_id, n.uid, n.name, n.display_name, n.labels, n.creator, n.spec, $9::jsonb, 'QUEUED',
			       n.priority, $15, $15, $15, 'infinity'
			FROM n ORDER BY n.ord
			RETURNING uid, seq, create_time
		), e AS (
			INSERT INTO job_events (tenant_id, job_uid, job_name, type, reason, message, state, create_time)
			SELECT n.tenant_id, n.uid, n.name, 'Normal', 'Queued', n.message, 'QUEUED', $15
			FROM n ORDER BY n.ord
		), a AS (
			INSERT INTO audit_records (tenant_id, subject, groups, issuer, address, request_id, action, resource, details)
			SELECT n.tenant_id, n.subject, ARRAY(SELECT jsonb_array_elements_text(n.groups::jsonb)), n.issuer, n.address,
			       n.audit_id, $22, n.resource, n.details
			FROM n WHERE n.audited ORDER BY n.ord
		)
		SELECT j.uid, j.seq, j.create_time FROM j ORDER BY j.seq`, args
}

// sqlGenericPlans goes before the create statement in its batch (one
// implicit transaction, one round trip): the statement is then executed
// with its prepared generic plan instead of being planned again each time.
// Left to itself (plan_cache_mode auto), Postgres plans it anew on every
// execution: a custom plan sees the length of each unnest array and
// estimates a fraction of the rows the generic plan assumes (100), so the
// generic one never looks cheaper, and planning this statement (five
// tables, thirteen indexes on jobs) cost half as much again as running
// it: the Postgres backend's CPU per one-job create, alternating 100
// creates of each on one connection, was 1.29-1.36 ms planned each time
// and 0.80-0.94 ms on the generic plan (a loaded machine). The generic plan
// is a good one at every batch size: it touches only the batch's own rows
// through unique indexes. Local to the transaction: other statements on
// the connection keep custom plans.
const sqlGenericPlans = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

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

// callerRole says why an item with a Caller was not inserted when the
// caller's role is the reason: a *RoleError.
func (s *Store) callerRole(ctx context.Context, tenantID string, c RoleCheck) error {
	rows, err := s.pool.Query(ctx, `SELECT role FROM tenant_members WHERE tenant_id = $1
		AND (kind = 'subject' AND principal = $2 AND $2 <> '' OR kind = 'group' AND principal = ANY($3::text[]))`,
		tenantID, c.Subject, nonNilSlice(c.Groups))
	if err != nil {
		return translate(err, tenantWhat(tenantID))
	}
	roles, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return translate(err, tenantWhat(tenantID))
	}
	have := tenant.RoleNone
	for _, r := range roles {
		if role, _ := tenant.ParseRole(r); role > have {
			have = role
		}
	}
	if need := max(c.Role, tenant.RoleViewer); have < need {
		return &RoleError{Tenant: tenantID, Have: have, Need: need}
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
