package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/resname"
	"github.com/trainyard/trainyard/internal/tenant"
)

// JobCreateParams is a job to create.
type JobCreateParams struct {
	// Job: Tenant, Name, Spec, Labels, DisplayName and Creator are stored;
	// UID is generated (UUIDv7) when empty. Status, times and the rest are
	// set by the store.
	Job job.Job
	// RequestID (AIP-155), optional: a create with a request id seen before
	// in this tenant returns the first job instead of creating one.
	RequestID string
	// Caller, optional, is who asks, when the create must check their role
	// itself: the job is created only if the tenant's members, read in the
	// create's own statement (which holds the tenant's row), still give
	// the caller at least Caller.Role; otherwise the create fails with a
	// *RoleError. The API sets it when it authorized the call from a
	// tenant record kept in memory (auth.TenantCache), so that a member
	// removed since is refused at once.
	Caller *RoleCheck
}

// RoleCheck is a role a caller must hold in a job's tenant
// (JobCreateParams.Caller): their subject's, or one of their groups'.
type RoleCheck struct {
	Subject string
	Groups  []string
	Role    tenant.Role
}

// RoleError is a create refused because its caller does not hold the
// role it needs in the tenant (JobCreateParams.Caller); Have is the role
// the members give them now (tenant.RoleNone: none).
type RoleError struct {
	Tenant     string
	Have, Need tenant.Role
}

func (e *RoleError) Error() string {
	if e.Have == tenant.RoleNone {
		return fmt.Sprintf("the caller has no role in tenant %q", e.Tenant)
	}
	return fmt.Sprintf("the caller is %s in tenant %q and needs %s", e.Have, e.Tenant, e.Need)
}

// JobListParams filters and pages JobList.
type JobListParams struct {
	// States keeps jobs in any of these states (all when empty).
	States []job.State
	// LabelEquals keeps jobs with all of these labels set to these values.
	LabelEquals map[string]string
	// LabelExists keeps jobs that have all of these label keys.
	LabelExists []string
	// Creator keeps the jobs this OIDC subject created (all when empty).
	Creator string
	// PageSize defaults to DefaultPageSize and is capped at MaxPageSize.
	PageSize int
	// Before is the cursor returned with the previous page (0: newest first).
	Before int64
}

// jobCols is every column a job read needs, in scanJob's order.
const jobCols = `j.tenant_id, j.uid, j.seq, j.name, j.display_name, j.labels, j.creator, j.spec, j.status,
	j.state, j.cancel_requested, j.suspend_requested, j.create_time, j.update_time,
	j.version, j.admitted, j.deleted, j.active, coalesce(j.worker_id, ''),
	coalesce(j.preempt_for::text, ''), j.preempt_message, j.wait_reason`

func scanJob(row pgx.Row) (WorkerJob, int64, error) {
	var (
		w         WorkerJob
		seq       int64
		state     string
		cancelReq bool
		suspReq   bool
		j         = &w.Job
	)
	err := row.Scan(&j.Tenant, &j.UID, &seq, &j.Name, &j.DisplayName, &j.Labels, &j.Creator, &j.Spec, &j.Status,
		&state, &cancelReq, &suspReq, &j.CreateTime, &j.UpdateTime,
		&w.Version, &w.Admitted, &w.Deleted, &w.Active, &w.WorkerID,
		&w.PreemptFor, &w.PreemptMessage, &w.WaitReason)
	if err != nil {
		return WorkerJob{}, 0, err
	}
	// The columns are the truth; the JSON copies them for the reader.
	j.Status.State = job.State(state)
	j.Status.CancelRequested = cancelReq
	j.Status.SuspendRequested = suspReq
	if len(j.Labels) == 0 {
		j.Labels = nil
	}
	return w, seq, nil
}

func jobWhat(tenantID, name string) string {
	return fmt.Sprintf("job %q in tenant %q", name, tenantID)
}

// JobGetByRequestID returns the job that the create with requestID made in
// the tenant, as it is now (final or not): a retried create (AIP-155) looks
// here before validating anything, so that a retry of a create that
// committed returns its job even when the tenant or the rules changed
// since. ok is false when the request id is unknown: never seen, or its job
// has been purged (the key goes with the job's row; the id may then be used
// again). A job that was deleted but is not purged yet is ErrNotFound, with a
// message saying so: the resource the request created no longer exists.
func (s *Store) JobGetByRequestID(ctx context.Context, tenantID, requestID string) (j job.Job, ok bool, err error) {
	w, err := jobByRequestID(ctx, s.pool, tenantID, requestID)
	if errors.Is(err, errRequestUnknown) {
		return job.Job{}, false, nil
	}
	if err != nil {
		return job.Job{}, false, translate(err, fmt.Sprintf("request id %q in tenant %q", requestID, tenantID))
	}
	return w.Job, true, nil
}

var errRequestUnknown = errors.New("request id not seen")

// jobByRequestID reads the job of an idempotency key: errRequestUnknown
// without a key, ErrNotFound (explained) for a deleted job.
func jobByRequestID(ctx context.Context, q querier, tenantID, requestID string) (WorkerJob, error) {
	w, _, err := scanJob(q.QueryRow(ctx, `SELECT `+jobCols+` FROM idempotency_keys k
		JOIN jobs j ON j.tenant_id = k.tenant_id AND j.uid = k.job_uid
		WHERE k.tenant_id = $1 AND k.request_id = $2`, tenantID, requestID))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return WorkerJob{}, errRequestUnknown
	case err != nil:
		return WorkerJob{}, err
	case w.Deleted:
		return WorkerJob{}, fmt.Errorf("%w: job %q, which request id %q created in tenant %q, has been deleted; use a new request id to create another",
			ErrNotFound, w.Job.Name, requestID, tenantID)
	}
	return w, nil
}

// querier is the pool or a transaction, for a one-row read.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// JobGet returns a job by tenant and name. Deleted jobs are not found.
func (s *Store) JobGet(ctx context.Context, tenantID, name string) (job.Job, error) {
	w, _, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs j
		WHERE j.tenant_id = $1 AND j.name = $2 AND NOT j.deleted`, tenantID, name))
	return w.Job, translate(err, jobWhat(tenantID, name))
}

// JobGetMany returns the tenant's jobs with the given uids, in no particular
// order, in one query: watchers read the jobs of a batch of events with it.
// Jobs that were deleted are included as long as their rows remain (until a
// worker purges them), so that the events of a deleted job can still be
// shown with the job as it was last. Uids that match no row (purged, another
// tenant's, not a UUID) are left out.
func (s *Store) JobGetMany(ctx context.Context, tenantID string, uids []string) ([]job.Job, error) {
	valid := make([]uuid.UUID, 0, len(uids))
	for _, u := range uids {
		if id, err := uuid.Parse(u); err == nil {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+jobCols+` FROM jobs j
		WHERE j.tenant_id = $1 AND j.uid = ANY($2::uuid[])`, tenantID, valid)
	if err != nil {
		return nil, translate(err, "jobs")
	}
	defer rows.Close()
	var out []job.Job
	for rows.Next() {
		w, _, err := scanJob(rows)
		if err != nil {
			return nil, translate(err, "jobs")
		}
		out = append(out, w.Job)
	}
	return out, translate(rows.Err(), "jobs")
}

// JobPage is a page of JobList.
type JobPage struct {
	Jobs []job.Job
	// Next is the cursor of the next page (0 when this is the last).
	Next int64
	// WatchAfter is where an event read picks up what this page may not
	// show: the event watermark (doc.go, "Events") as read just before the
	// page, less one. Every event below it belongs to a transaction that
	// had ended, so the page shows its effect; reading events after it
	// gets every later change, and maybe some the page already shows.
	WatchAfter int64
}

// JobList returns a page of a tenant's jobs, newest first. Pages are keyset
// on seq, so rows inserted meanwhile never shift a page: each row is
// returned at most once, and every row that existed at the first call is
// returned. The watermark and the page are two statements in one round
// trip, the watermark first.
func (s *Store) JobList(ctx context.Context, tenantID string, p JobListParams) (JobPage, error) {
	size := clampPageSize(p.PageSize)
	query, args := jobListQuery(tenantID, p, size+1)
	batch := &pgx.Batch{}
	batch.Queue(`SELECT trainyard_event_watermark()`)
	batch.Queue(query, args...)
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()
	var page JobPage
	if err := br.QueryRow().Scan(&page.WatchAfter); err != nil {
		return JobPage{}, translate(err, "jobs")
	}
	page.WatchAfter--
	rows, err := br.Query()
	if err != nil {
		return JobPage{}, translate(err, "jobs")
	}
	defer rows.Close()
	var seqs []int64
	for rows.Next() {
		w, seq, err := scanJob(rows)
		if err != nil {
			return JobPage{}, translate(err, "jobs")
		}
		page.Jobs, seqs = append(page.Jobs, w.Job), append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return JobPage{}, translate(err, "jobs")
	}
	if len(page.Jobs) > size {
		page.Jobs = page.Jobs[:size]
		page.Next = seqs[size-1]
	}
	return page, nil
}

// jobListQuery builds JobList's statement. Each shape is one ordered range
// scan of an index, stopped by LIMIT, so a page costs the same at any table
// size. Several states become one branch per state, each ordered and limited
// on its own (a leaf with a WHERE clause is planned as its own subquery, so
// the order must be asked for inside it): Postgres then merges the branches
// (Merge Append) instead of sorting.
func jobListQuery(tenantID string, p JobListParams, limit int) (string, []any) {
	before := p.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	args := []any{tenantID, before, limit}
	where := `j.tenant_id = $1 AND NOT j.deleted AND j.seq < $2`
	if len(p.LabelEquals) > 0 {
		args = append(args, p.LabelEquals)
		where += fmt.Sprintf(` AND j.labels @> $%d::jsonb`, len(args))
	}
	if len(p.LabelExists) > 0 {
		args = append(args, p.LabelExists)
		where += fmt.Sprintf(` AND j.labels ?& $%d::text[]`, len(args))
	}
	if p.Creator != "" {
		args = append(args, p.Creator)
		where += fmt.Sprintf(` AND j.creator = $%d`, len(args))
	}
	states := uniqueStates(p.States)
	if len(states) == 0 {
		return `SELECT ` + jobCols + ` FROM jobs j WHERE ` + where + ` ORDER BY j.seq DESC LIMIT $3`, args
	}
	branches := make([]string, 0, len(states))
	for _, st := range states {
		args = append(args, string(st))
		branches = append(branches, fmt.Sprintf(`SELECT %s FROM jobs j WHERE %s AND j.state = $%d
			ORDER BY j.seq DESC LIMIT $3`, jobColsAliased, where, len(args)))
	}
	if len(branches) == 1 {
		return branches[0], args
	}
	return `SELECT * FROM ((` + strings.Join(branches, `) UNION ALL (`) + `)) j ORDER BY j.seq DESC LIMIT $3`, args
}

// jobColsAliased names the computed column of jobCols so that a UNION ALL
// has unique column names.
var jobColsAliased = strings.NewReplacer(
	"coalesce(j.worker_id, '')", "coalesce(j.worker_id, '') AS worker_id",
	"coalesce(j.preempt_for::text, '')", "coalesce(j.preempt_for::text, '') AS preempt_for",
).Replace(jobCols)

func uniqueStates(states []job.State) []job.State {
	seen := map[job.State]bool{}
	var out []job.State
	for _, s := range states {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// JobCancel cancels a job. A final job is returned unchanged. A job that is
// QUEUED and not admitted has no Kubernetes objects yet: it becomes
// CANCELLED at once and needs no worker (the scheduler admits only QUEUED
// jobs without cancel_requested, under the same row lock, so it can not
// admit it any more). Any other job gets cancel_requested, and its worker
// stops it.
func (s *Store) JobCancel(ctx context.Context, tenantID, name string) (job.Job, error) {
	what := jobWhat(tenantID, name)
	var out WorkerJob
	err := s.inTx(ctx, func(tx *txn) error {
		w, _, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs j
			WHERE j.tenant_id = $1 AND j.name = $2 AND NOT j.deleted FOR UPDATE`, tenantID, name))
		if err != nil {
			return err
		}
		out = w
		st := w.Job.Status
		if st.State.Final() || st.CancelRequested {
			return nil
		}
		now := s.timestamp()
		var ev job.Event
		if (st.State == job.Queued && !w.Admitted) || st.State == job.Suspended {
			// A suspended job has no pods either (what is left, its
			// Services, goes with the job's delete or TTL, as a requeued
			// job's does).
			st.State = job.Cancelled
			st.Reason = "Cancelled"
			st.Message = "cancelled before it started"
			st.CompletionTime = &now
			st.Conditions = conditionSet(st.Conditions, job.Condition{
				Type: job.CondQueued, Status: false, Reason: "Cancelled", LastTransitionTime: now})
			st.Conditions = conditionSet(st.Conditions, job.Condition{
				Type: job.CondCancelled, Status: true, Reason: "Cancelled",
				Message: st.Message, LastTransitionTime: now})
			st.CancelRequested = false
			ev = job.Event{Type: job.EventNormal, Reason: "Cancelled", Message: st.Message, State: job.Cancelled}
			err = tx.QueryRow(ctx, `
				UPDATE jobs SET state = 'CANCELLED', status = $3, finish_time = $4, update_time = $4,
				                active = false, version = version + 1
				WHERE tenant_id = $1 AND uid = $2 RETURNING version`,
				tenantID, w.Job.UID, st, now).Scan(&out.Version)
			out.Active = false
			if err == nil {
				// It may have held the tenant's queue: the scheduler decides again.
				tx.notify(ChannelFreed, tenantID)
			}
		} else {
			ev = job.Event{Type: job.EventNormal, Reason: "CancelRequested",
				Message: "cancellation requested; stopping the job", State: st.State}
			// A job that needs a worker again keeps its owner only if it had one.
			err = tx.QueryRow(ctx, `
				UPDATE jobs SET cancel_requested = true, update_time = $3, version = version + 1,
				                worker_id = CASE WHEN active THEN worker_id END,
				                active = true
				WHERE tenant_id = $1 AND uid = $2 RETURNING version`,
				tenantID, w.Job.UID, now).Scan(&out.Version)
			st.CancelRequested = true
			out.Active = true
		}
		if err != nil {
			return err
		}
		out.Job.Status, out.Job.UpdateTime = st, now
		return recordJobAction(ctx, tx, w.Job, ev, audit.JobCancel, now)
	})
	if err != nil {
		return job.Job{}, translate(err, what)
	}
	return out.Job, nil
}

// JobDelete deletes a final job: the row is marked deleted (its name is free
// at once) and handed to a worker, which removes what is left in Kubernetes
// and then calls JobPurge. A job that is not final is ErrFailedPrecondition.
func (s *Store) JobDelete(ctx context.Context, tenantID, name string) error {
	err := s.inTx(ctx, func(tx *txn) error {
		w, _, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs j
			WHERE j.tenant_id = $1 AND j.name = $2 AND NOT j.deleted FOR UPDATE`, tenantID, name))
		if err != nil {
			return err
		}
		if state := w.Job.Status.State; !state.Final() {
			return fmt.Errorf("%w: job %q is %s; cancel it first", ErrFailedPrecondition, name, state)
		}
		now := s.timestamp()
		_, err = tx.Exec(ctx, `
			UPDATE jobs SET deleted = true, update_time = $3, version = version + 1,
			                worker_id = CASE WHEN active THEN worker_id END,
			                active = true, claim_after = '-infinity'
			WHERE tenant_id = $1 AND uid = $2`, tenantID, w.Job.UID, now)
		if err != nil {
			return err
		}
		ev := job.Event{Type: job.EventNormal, Reason: job.ReasonDeleted, Message: "job deleted",
			State: w.Job.Status.State, CreateTime: now}
		if err := eventsInsert(ctx, tx, w.Job, []job.Event{ev}, now); err != nil {
			return err
		}
		if err := auditInsert(ctx, tx, tenantID, audit.JobDelete, resname.Job.Format(tenantID, name),
			map[string]any{"uid": w.Job.UID, "state": string(w.Job.Status.State)}); err != nil {
			return err
		}
		tx.notify(ChannelJobs, tenantID+"/"+w.Job.UID)
		// A job waiting on it can no longer be met (spec.dependsOn).
		tx.notify(ChannelFreed, tenantID)
		return nil
	})
	return translate(err, jobWhat(tenantID, name))
}

// conditionSet sets c in conds, keeping the transition time when the status
// did not change.
func conditionSet(conds []job.Condition, c job.Condition) []job.Condition {
	for i := range conds {
		if conds[i].Type != c.Type {
			continue
		}
		if conds[i].Status == c.Status {
			c.LastTransitionTime = conds[i].LastTransitionTime
		}
		out := append([]job.Condition(nil), conds...)
		out[i] = c
		return out
	}
	return append(append([]job.Condition(nil), conds...), c)
}

// eventsInsert writes events of j (in order) and wakes the tenant's
// watchers once tx commits. Event fields left empty default to Normal, the
// job's state and now. Their ids come from trainyard_event_id (migration
// 000005): no lock orders them; readers deliver them below the watermark
// (events.go).
func eventsInsert(ctx context.Context, tx *txn, j job.Job, events []job.Event, now time.Time) error {
	k := JobKey{Tenant: j.Tenant, UID: j.UID}
	sql, args, tenants, err := eventsStatement(map[JobKey]job.Job{k: j}, map[JobKey][]job.Event{k: events}, now)
	if err != nil || sql == "" {
		return err
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return err
	}
	for _, t := range tenants {
		tx.notify(ChannelEvents, t)
	}
	return nil
}

// eventsStatement is the one statement that writes the events of several
// jobs, job by job in key order and each job's in order (a scheduling
// cycle admits thousands of jobs at once), and the tenants whose watchers
// to wake once it commits; "" when there are none. Defaults as in
// eventsInsert.
func eventsStatement(jobs map[JobKey]job.Job, events map[JobKey][]job.Event, now time.Time) (sql string, args []any, tenantIDs []string, err error) {
	keys := make([]JobKey, 0, len(events))
	for k, evs := range events {
		if len(evs) > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "", nil, nil, nil
	}
	slices.SortFunc(keys, func(a, b JobKey) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.UID, b.UID))
	})
	var (
		tenants, names []string
		uids           []uuid.UUID
		all            eventColumns
	)
	for _, k := range keys {
		j := jobs[k]
		uid, err := uuid.Parse(j.UID)
		if err != nil {
			return "", nil, nil, fmt.Errorf("event of job %s: %w", k, err)
		}
		a := columnsOf(events[k], j.Status.State, now)
		for range events[k] {
			tenants, uids, names = append(tenants, j.Tenant), append(uids, uid), append(names, j.Name)
		}
		all.types, all.reasons, all.messages = append(all.types, a.types...), append(all.reasons, a.reasons...), append(all.messages, a.messages...)
		all.states, all.times = append(all.states, a.states...), append(all.times, a.times...)
		if len(tenantIDs) == 0 || tenantIDs[len(tenantIDs)-1] != k.Tenant { // keys are in tenant order
			tenantIDs = append(tenantIDs, k.Tenant)
		}
	}
	return `
		INSERT INTO job_events (tenant_id, job_uid, job_name, type, reason, message, state, create_time)
		SELECT tn, u, n, t, r, m, s, c
		FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[])
		     WITH ORDINALITY AS x(tn, u, n, t, r, m, s, c, o)
		ORDER BY o`,
		[]any{tenants, uids, names, all.types, all.reasons, all.messages, all.states, all.times}, tenantIDs, nil
}

// eventColumns are a job's events as the arrays the INSERTs unnest, with
// the defaults applied: type Normal, the job's state, now.
type eventColumns struct {
	types, reasons, messages, states []string
	times                            []time.Time
}

func columnsOf(events []job.Event, state job.State, now time.Time) eventColumns {
	n := len(events)
	a := eventColumns{make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)}
	for i, e := range events {
		a.types[i], a.reasons[i], a.messages[i], a.states[i], a.times[i] = e.Type, e.Reason, e.Message, string(e.State), e.CreateTime
		if a.types[i] == "" {
			a.types[i] = job.EventNormal
		}
		if a.states[i] == "" {
			a.states[i] = string(state)
		}
		if a.times[i].IsZero() {
			a.times[i] = now
		}
	}
	return a
}

// sqlUnfinished selects the jobs that have not reached a final state and
// are not SUSPENDED (a suspended job holds no quota, needs no worker and
// waits for no admission: neither the scheduler nor the usage sees it). It is
// written once, as a literal: it is also the predicate of the partial index
// jobs_unfinished_idx (migration 000003), and Postgres uses a partial index
// only for a query whose condition implies the index's, which a parameter
// would not show it. TestUnfinishedStates checks it against job.State.Final.
const sqlUnfinished = `state IN ('QUEUED', 'STARTING', 'RUNNING', 'RESTARTING')`

// JobSuspend suspends a job (issue 42): its pods are stopped gracefully
// and it is held SUSPENDED, unadmitted (its quota released), with its
// spec, restarts and checkpoint volume kept. A job that is QUEUED and not
// admitted has no pods: it is SUSPENDED at once. Any other unfinished job
// gets suspend_requested, and its worker stops its pods and then saves it
// SUSPENDED (job.Plan, plan_requeue.go). A job already suspended, or being
// suspended, is returned unchanged; a final job, or one being cancelled, is
// ErrFailedPrecondition.
func (s *Store) JobSuspend(ctx context.Context, tenantID, name string) (job.Job, error) {
	what := jobWhat(tenantID, name)
	var out WorkerJob
	err := s.inTx(ctx, func(tx *txn) error {
		w, _, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs j
			WHERE j.tenant_id = $1 AND j.name = $2 AND NOT j.deleted FOR UPDATE`, tenantID, name))
		if err != nil {
			return err
		}
		out = w
		st := w.Job.Status
		switch {
		case st.State.Final():
			return fmt.Errorf("%w: job %q is %s; only a job that has not finished can be suspended", ErrFailedPrecondition, name, st.State)
		case st.CancelRequested:
			return fmt.Errorf("%w: job %q is being cancelled; it can not be suspended", ErrFailedPrecondition, name)
		case st.State == job.Suspended || st.SuspendRequested:
			return nil
		}
		now := s.timestamp()
		var ev job.Event
		if st.State == job.Queued && !w.Admitted {
			msg := "suspended by a user; resume it to queue it again"
			st.State, st.Reason, st.Message = job.Suspended, job.ReasonSuspended, "suspended before it started"
			st.Conditions = conditionSet(st.Conditions, job.Condition{
				Type: job.CondQueued, Status: false, Reason: job.ReasonSuspended, Message: msg, LastTransitionTime: now})
			st.Conditions = conditionSet(st.Conditions, job.Condition{
				Type: job.CondSuspended, Status: true, Reason: job.ReasonSuspended, Message: msg, LastTransitionTime: now})
			ev = job.Event{Type: job.EventNormal, Reason: job.ReasonSuspended, Message: st.Message, State: job.Suspended}
			st.SuspendRequested = true
			err = tx.QueryRow(ctx, `
				UPDATE jobs SET state = 'SUSPENDED', status = $3, suspend_requested = true, update_time = $4,
				                wait_reason = '', version = version + 1
				WHERE tenant_id = $1 AND uid = $2 RETURNING version`,
				tenantID, w.Job.UID, st, now).Scan(&out.Version)
			if err == nil {
				// It may have held its tenant's queue: the scheduler decides again.
				tx.notify(ChannelFreed, tenantID)
			}
		} else {
			ev = job.Event{Type: job.EventNormal, Reason: "SuspendRequested",
				Message: "suspension requested; stopping the job's pods", State: st.State}
			err = tx.QueryRow(ctx, `
				UPDATE jobs SET suspend_requested = true, update_time = $3, version = version + 1
				WHERE tenant_id = $1 AND uid = $2 RETURNING version`,
				tenantID, w.Job.UID, now).Scan(&out.Version)
			st.SuspendRequested = true
		}
		if err != nil {
			return err
		}
		out.Job.Status, out.Job.UpdateTime = st, now
		return recordJobAction(ctx, tx, w.Job, ev, audit.JobSuspend, now)
	})
	if err != nil {
		return job.Job{}, translate(err, what)
	}
	return out.Job, nil
}

// JobResume resumes a job: a SUSPENDED job is QUEUED again, waiting for
// admission (its restarts unchanged); a job still being suspended keeps
// running (its worker requeues it if its pods are already going). Any
// other unfinished job is returned unchanged; a final job is
// ErrFailedPrecondition.
func (s *Store) JobResume(ctx context.Context, tenantID, name string) (job.Job, error) {
	what := jobWhat(tenantID, name)
	var out WorkerJob
	err := s.inTx(ctx, func(tx *txn) error {
		w, _, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs j
			WHERE j.tenant_id = $1 AND j.name = $2 AND NOT j.deleted FOR UPDATE`, tenantID, name))
		if err != nil {
			return err
		}
		out = w
		st := w.Job.Status
		switch {
		case st.State.Final():
			return fmt.Errorf("%w: job %q is %s; only a suspended job can be resumed", ErrFailedPrecondition, name, st.State)
		case !st.SuspendRequested && st.State != job.Suspended:
			return nil
		}
		now := s.timestamp()
		ev := job.Event{Type: job.EventNormal, Reason: job.ReasonResumed,
			Message: "resumed by a user; suspension withdrawn", State: st.State}
		st.SuspendRequested = false
		if st.State == job.Suspended {
			st.State, st.Reason, st.Message = job.Queued, job.ReasonResumed, "resumed by a user; waiting for admission"
			st.Conditions = conditionSet(st.Conditions, job.Condition{
				Type: job.CondSuspended, Status: false, Reason: job.ReasonResumed, LastTransitionTime: now})
			st.Conditions = conditionSet(st.Conditions, job.Condition{
				Type: job.CondQueued, Status: true, Reason: job.ReasonResumed, Message: st.Message, LastTransitionTime: now})
			ev = job.Event{Type: job.EventNormal, Reason: job.ReasonResumed, Message: st.Message, State: job.Queued}
			// Waiting again as a requeued job waits: unowned, unclaimable
			// until admitted, queued from now.
			err = tx.QueryRow(ctx, `
				UPDATE jobs SET state = 'QUEUED', status = $3, suspend_requested = false, update_time = $4,
				                queued_at = $4, worker_id = NULL, claim_after = 'infinity', active = true,
				                version = version + 1
				WHERE tenant_id = $1 AND uid = $2 RETURNING version`,
				tenantID, w.Job.UID, st, now).Scan(&out.Version)
			if err == nil {
				tx.notify(ChannelSchedule, tenantID)
			}
		} else {
			err = tx.QueryRow(ctx, `
				UPDATE jobs SET suspend_requested = false, update_time = $3, version = version + 1
				WHERE tenant_id = $1 AND uid = $2 RETURNING version`,
				tenantID, w.Job.UID, now).Scan(&out.Version)
		}
		if err != nil {
			return err
		}
		out.Job.Status, out.Job.UpdateTime = st, now
		return recordJobAction(ctx, tx, w.Job, ev, audit.JobResume, now)
	})
	if err != nil {
		return job.Job{}, translate(err, what)
	}
	return out.Job, nil
}

// recordJobAction writes what a caller's action on job j (cancel, suspend,
// resume) did, in the action's transaction: its event, its audit record
// (j is the job as it was), and the wake-up of j's watchers.
func recordJobAction(ctx context.Context, tx *txn, j job.Job, ev job.Event, action audit.Action, now time.Time) error {
	ev.CreateTime = now
	if err := eventsInsert(ctx, tx, j, []job.Event{ev}, now); err != nil {
		return err
	}
	if err := auditInsert(ctx, tx, j.Tenant, action, resname.Job.Format(j.Tenant, j.Name),
		map[string]any{"uid": j.UID, "state": string(j.Status.State)}); err != nil {
		return err
	}
	tx.notify(ChannelJobs, j.Tenant+"/"+j.UID)
	return nil
}
