package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trainyard/trainyard/internal/job"
)

// The worker side: claiming, leases and fenced writes. These queries are the
// only ones that are not scoped to one tenant (JobClaim, JobLeaseRenew and
// JobReleaseAll work across tenants by design); everything that reads or
// writes one job still names its tenant.

// JobKey identifies a job for a worker.
type JobKey struct {
	Tenant string
	UID    string
}

func (k JobKey) String() string { return k.Tenant + "/" + k.UID }

// WorkerJob is a job with the bookkeeping a worker needs.
type WorkerJob struct {
	Job job.Job
	// Version is the fence for JobSave.
	Version int64
	// Admitted by the scheduler: the job may run; it counts against its
	// tenant's quota until it ends or is requeued.
	Admitted bool
	// Deleted by the user: remove what is left in Kubernetes, then JobPurge.
	Deleted bool
	// Active: the job needs a worker.
	Active bool
	// WorkerID owns the job ("" when nobody does).
	WorkerID string
	// PreemptFor is set when the scheduler preempts the job: the uid of
	// the job of its tenant it makes room for, and PreemptMessage why.
	PreemptFor     string
	PreemptMessage string
	// WaitReason is the wait reason last recorded for a QUEUED job.
	WaitReason job.WaitReason
}

// JobSaveParams is a worker's write of a job's status.
type JobSaveParams struct {
	WorkerID string
	Tenant   string
	UID      string
	// Version is the version the worker read (JobLoad or the previous
	// JobSave).
	Version int64
	// Status is stored as given; Status.State sets the state column, and a
	// final state sets the finish time. Status.CancelRequested is ignored.
	Status job.Status
	// Events are appended in order. Empty Type means Normal, empty State the
	// new Status.State, zero CreateTime now.
	Events []job.Event
	// Requeue, when set, sends the job back to the scheduler's queue (its
	// Status must be QUEUED), or holds it suspended (SUSPENDED): it is no longer admitted, nobody owns it, and
	// workers can not claim it until it is admitted again.
	Requeue *Requeue
	// Done: the job needs no more work. It becomes inactive and unowned.
	Done bool
	// Park, when positive: the job needs nothing before this long has
	// passed (a finished job waiting for its TTL), and is let go as JobPark
	// lets it go, in the same statement: a finished job's last save and
	// its park were two.
	Park time.Duration
}

// Requeue is how a job goes back to the queue.
type Requeue struct {
	// After: the scheduler does not admit it again before this long (a
	// backoff after unschedulable pods; 0 for none).
	After time.Duration
	// PreemptedBy is the uid of the job that preempted it ("" when it was
	// not preempted).
	PreemptedBy string
}

func microseconds(d time.Duration) int64 { return d.Microseconds() }

// Leases are per worker (migration 000007): worker_leases holds each
// worker's expiry, and a job is owned while its worker_id names a worker
// whose lease is live. Renewing is one row however many jobs a worker owns.
// A claimer takes a dead worker's jobs under a share lock of that worker's
// lease row, and the owner renews with an update of that row, so the two
// exclude each other: a renewal waits for a takeover under way and then
// finds those jobs gone, and a takeover skips a worker whose renewal is
// under way, or whose lease it finds renewed.

// sqlLeaseUpsert starts or extends worker $1's lease by $2 microseconds.
const sqlLeaseUpsert = `
	INSERT INTO worker_leases (worker_id, expires_at) VALUES ($1, now() + $2 * interval '1 microsecond')
	ON CONFLICT (worker_id) DO UPDATE SET expires_at = EXCLUDED.expires_at`

// sqlLeaseForget removes the leases of workers gone for an hour that own
// nothing (their jobs were taken over): worker ids are often pod names,
// new with every rollout. A worker back after longer starts a new lease.
const sqlLeaseForget = `
	DELETE FROM worker_leases l
	WHERE expires_at < now() - interval '1 hour'
	  AND NOT EXISTS (SELECT FROM jobs j WHERE j.worker_id = l.worker_id)`

// sqlJobClaim takes up to $2 jobs that need a worker and have no live
// owner, in one statement, from two index range scans that stop at the
// limit:
//
//   - expired: jobs of workers whose lease ran out (they died or stalled),
//     through the few expired leases (worker_leases_expiry_idx) and, for
//     each, jobs_worker_idx (a LATERAL, so that the leases drive it and no
//     plan reads the jobs of live workers);
//   - due: unowned jobs whose claim_after has come, on jobs_claim_idx in
//     (claim_after, seq) order. Claimable jobs carry '-infinity', so they
//     go in submission order; parked jobs (finished, waiting for a TTL)
//     follow once due; jobs waiting for admission carry 'infinity'.
//
// Both must be index scans that stop at the limit, and the UPDATE must
// find the taken rows by key. A connection keeps the statement's generic
// plan, made with the table's size of the day: made at the start of a
// burst of submissions, it read every due job and sorted them (6,800
// rows, 18 ms a claim in the admission bench), and on a table grown from
// one job to 40,000 it read all of them (TestJobClaimReadsWhatItTakes).
// So the claim's transaction turns off the plans that read a table whole
// (sqlClaimSettings): the cost of a claim then depends on its limit and
// on nothing else.
//
// Neither scan visits jobs that are owned under a live lease or released
// into the future, so a claim costs the same with ten thousand jobs running
// or waiting for quota as with none. Rows other claimers hold are skipped
// (SKIP LOCKED), and only as many rows are locked as are taken. The
// claimer's own lease is extended first, in the same transaction.
const sqlJobClaim = `
	WITH expired AS (
		SELECT j.tenant_id, j.uid
		FROM (SELECT worker_id FROM worker_leases
		      WHERE expires_at < now() AND worker_id <> $1
		      FOR SHARE SKIP LOCKED) l,
		     LATERAL (SELECT tenant_id, uid FROM jobs
		              WHERE jobs.worker_id = l.worker_id AND active AND cluster = $3
		              LIMIT $2 FOR UPDATE SKIP LOCKED) j
		LIMIT $2
	), due AS (
		SELECT tenant_id, uid FROM jobs
		WHERE active AND worker_id IS NULL AND cluster = $3 AND claim_after <= now()
		ORDER BY claim_after, seq
		LIMIT $2
		FOR UPDATE SKIP LOCKED
	), next AS (
		(SELECT tenant_id, uid FROM expired)
		UNION ALL
		(SELECT tenant_id, uid FROM due LIMIT greatest($2 - (SELECT count(*) FROM expired), 0))
	)
	UPDATE jobs j SET worker_id = $1, version = j.version + 1
	FROM next WHERE j.tenant_id = next.tenant_id AND j.uid = next.uid
	RETURNING ` + jobCols

// sqlClaimSettings are the claim's planner settings, for its transaction:
// no sequential or bitmap scans and no hash or merge joins, which all read
// a table or an index whole (see sqlJobClaim).
const sqlClaimSettings = `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
	set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`

// JobClaim gives workerID up to limit jobs that need a worker and have no
// live owner, and extends its lease by ttl: jobs of dead workers first, then
// claimable jobs in submission order. Jobs the scheduler has not admitted
// are never claimable; admission makes them so, in admission order.
// Concurrent claimers skip each other's rows and never get the same job.
// It returns the jobs as the claim left them, as JobLoad would: a worker's
// first pass over a job it just claimed need not read it again.
func (s *Store) JobClaim(ctx context.Context, workerID string, limit int, ttl time.Duration) ([]WorkerJob, error) {
	if limit <= 0 {
		return nil, nil
	}
	// One batch, one round trip: its statements run in one implicit
	// transaction (the lease's extension, the cleanup, the planner
	// settings, the claim), committed at its end. A claim is on every
	// job's way to its pods, and on a busy machine each round trip of the
	// five a BEGIN ... COMMIT took cost the job about half a millisecond.
	var jobs []WorkerJob
	b := &pgx.Batch{}
	b.Queue(sqlLeaseUpsert, workerID, microseconds(ttl))
	b.Queue(sqlLeaseForget)
	b.Queue(sqlClaimSettings)
	b.Queue(sqlJobClaim, workerID, limit, s.cluster).Query(func(rows pgx.Rows) error {
		var err error
		jobs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (WorkerJob, error) {
			w, _, err := scanJob(row)
			return w, err
		})
		return err
	})
	err := s.pool.SendBatch(ctx, b).Close()
	if err != nil {
		jobs = nil
	}
	return jobs, translate(err, "job claim")
}

// Key is the job's key.
func (w WorkerJob) Key() JobKey { return JobKey{Tenant: w.Job.Tenant, UID: w.Job.UID} }

// KeysOf is the keys of jobs, in their order.
func KeysOf(jobs []WorkerJob) []JobKey {
	keys := make([]JobKey, len(jobs))
	for i, w := range jobs {
		keys[i] = w.Key()
	}
	return keys
}

// JobLeaseRenew extends workerID's lease by ttl and returns the jobs it
// owns. A job missing from the result is lost: another worker took it over
// while the lease had run out, it was released, or it needs no worker any
// more. A lease that had run out is started again: the jobs nobody took
// over meanwhile are returned, owned again (nobody else can have acted on
// them: taking a job over is the only way to write it). Renewal does not
// change versions.
func (s *Store) JobLeaseRenew(ctx context.Context, workerID string, ttl time.Duration) ([]JobKey, error) {
	var keys []JobKey
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The update waits for a takeover holding the lease row; the read
		// after it, a statement of its own, then sees what it took.
		if _, err := tx.Exec(ctx, sqlLeaseUpsert, workerID, microseconds(ttl)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT tenant_id, uid::text FROM jobs WHERE worker_id = $1 AND active`, workerID)
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(rows, pgx.RowToStructByPos[JobKey])
		return err
	})
	return keys, translate(err, "lease renewal")
}

// JobLeaseExtend extends workerID's lease by ttl if it is still live, and
// says whether it was. A lease that has not run out since it was last
// extended had none of its jobs taken over, so the worker owns what it
// claimed and has not let go, and need not list it: JobLeaseRenew reads
// every owned job, 15,000 rows every three seconds for a worker that runs
// 15,000. A lease found run out (or gone) is left alone: JobLeaseRenew
// starts it again and says which jobs are still owned.
//
// Live is judged once the row is locked, by a statement of its own: a
// takeover that judged the lease run out holds the row (FOR SHARE) until
// it commits, and a renewal that waited for it must then find the lease
// run out too (the clock of that moment, not the transaction's).
func (s *Store) JobLeaseExtend(ctx context.Context, workerID string, ttl time.Duration) (bool, error) {
	var live bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT FROM worker_leases WHERE worker_id = $1 FOR UPDATE`, workerID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			UPDATE worker_leases SET expires_at = clock_timestamp() + $2 * interval '1 microsecond'
			WHERE worker_id = $1 AND expires_at > clock_timestamp()`, workerID, microseconds(ttl))
		live = tag.RowsAffected() == 1
		return err
	})
	return live, translate(err, "lease renewal")
}

// JobRelease gives up workerID's ownership of keys, so any worker may claim
// them at once (a job that still needs work) or nobody needs to.
func (s *Store) JobRelease(ctx context.Context, workerID string, keys ...JobKey) error {
	if len(keys) == 0 {
		return nil
	}
	tenants, uids := keyArrays(keys)
	_, err := s.pool.Exec(ctx, `
		UPDATE jobs j SET worker_id = NULL, version = j.version + 1
		FROM unnest($2::text[], $3::uuid[]) AS k(tenant_id, uid)
		WHERE j.tenant_id = k.tenant_id AND j.uid = k.uid AND coalesce(j.worker_id, '') = $1`, // see sqlOwnedBy
		workerID, tenants, uids)
	return translate(err, "job release")
}

// JobPark gives up workerID's ownership of a job that needs nothing before
// after has passed (a finished job waiting for its TTL): it stays active
// and becomes claimable again then, holding no lease and no worker slot
// meanwhile. Fenced like JobSave. A delete of the job makes it claimable at
// once (JobDelete).
func (s *Store) JobPark(ctx context.Context, workerID, tenantID, uid string, version int64, after time.Duration) error {
	err := s.inTx(ctx, func(tx *txn) error {
		tag, err := tx.Exec(ctx, `
			UPDATE jobs SET worker_id = NULL, version = version + 1,
			                claim_after = now() + $5 * interval '1 microsecond'
			WHERE tenant_id = $1 AND uid = $2 AND `+sqlOwnedBy("$3")+` AND version = $4`,
			tenantID, uid, workerID, version, microseconds(max(after, 0)))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fenceCheck(ctx, tx, workerID, tenantID, uid, version)
		}
		return nil
	})
	return translate(err, "job park")
}

// JobReleaseAll gives up everything workerID owns, and its lease (at
// shutdown).
func (s *Store) JobReleaseAll(ctx context.Context, workerID string) error {
	_, err := s.pool.Exec(ctx, `
		WITH l AS (DELETE FROM worker_leases WHERE worker_id = $1)
		UPDATE jobs SET worker_id = NULL, version = version + 1
		WHERE worker_id = $1`, workerID)
	return translate(err, "job release")
}

// sqlLeaseLive is true for a row of jobs whose worker's lease is live.
const sqlLeaseLive = `EXISTS (SELECT FROM worker_leases l WHERE l.worker_id = jobs.worker_id AND l.expires_at > now())`

// sqlOwnedBy is true for a row of jobs that worker (a parameter or a
// column) owns under a live lease, in the WHERE of a write that finds the
// row by its key.
//
// It says nothing the planner can use about jobs.worker_id: not "=", nor
// a lease join on the column, which imply the predicate of jobs_worker_idx
// (worker_id IS NOT NULL). When the statistics date from before the jobs
// were claimed (after a burst of submissions, say) that index looks empty,
// and the planner then read all of it for the one row: a save read every
// job its worker owned, 4,999 rows for one at 5,000 (BenchmarkJobSave: 3 ms
// a save at 32 callers).
func sqlOwnedBy(worker string) string {
	return `coalesce(jobs.worker_id, '') = ` + worker +
		` AND EXISTS (SELECT FROM worker_leases l WHERE l.worker_id = ` + worker + ` AND l.expires_at > now())`
}

// JobLoad returns a job for a worker, deleted or not.
func (s *Store) JobLoad(ctx context.Context, tenantID, uid string) (WorkerJob, error) {
	what := fmt.Sprintf("job %s in tenant %q", uid, tenantID)
	if _, err := uuid.Parse(uid); err != nil {
		return WorkerJob{}, fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	w, _, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs j
		WHERE j.tenant_id = $1 AND j.uid = $2`, tenantID, uid))
	return w, translate(err, what)
}

// JobListActiveByTenant returns the tenant's jobs that need a worker (for
// offboarding: wait until none is left).
func (s *Store) JobListActiveByTenant(ctx context.Context, tenantID string) ([]JobKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, uid::text FROM jobs
		WHERE tenant_id = $1 AND active ORDER BY seq`, tenantID)
	if err != nil {
		return nil, translate(err, "jobs")
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[JobKey])
	return keys, translate(err, "jobs")
}

// fence is a job row's ownership as seen under its row lock.
type fence struct {
	workerID string
	live     bool
	version  int64
}

// fenceCheck reads the row's ownership after a fenced write matched nothing,
// and says why: ErrNotFound, ErrLeaseLost or ErrConflict.
func fenceCheck(ctx context.Context, tx querier, workerID, tenantID, uid string, version int64) error {
	var f fence
	err := tx.QueryRow(ctx, `SELECT coalesce(worker_id, ''), `+sqlLeaseLive+`, version
		FROM jobs WHERE tenant_id = $1 AND uid = $2`, tenantID, uid).Scan(&f.workerID, &f.live, &f.version)
	return f.verdict(err, workerID, version, uid)
}

func (f fence) verdict(err error, workerID string, version int64, uid string) error {
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: job %s", ErrNotFound, uid)
	case err != nil:
		return err
	case f.workerID != workerID || !f.live:
		return fmt.Errorf("%w: job %s is not leased to %s", ErrLeaseLost, uid, workerID)
	case f.version != version:
		return fmt.Errorf("%w: job %s is at version %d, not %d", ErrConflict, uid, f.version, version)
	}
	return nil
}

// JobSave writes a worker's view of a job: status, state, events, and
// optionally a requeue or "done". It succeeds only while workerID holds a
// live lease (else ErrLeaseLost) and the job is still at p.Version (else
// ErrConflict); it returns the new version. It never touches
// cancel_requested.
//
// A save that ends the job, or requeues it, frees quota and capacity: the
// scheduler is told (NOTIFY on commit).
//
// Concurrent saves share statements (shared.go, saveShared): a worker's
// reconcile goroutines save the jobs of a claim at once, and one
// statement of many rows costs Postgres little more than one of a row.
// The outcome is the save's own, and a ctx that ends before the save was
// sent writes nothing.
func (s *Store) JobSave(ctx context.Context, p JobSaveParams) (int64, error) {
	what := fmt.Sprintf("job %s in tenant %q", p.UID, p.Tenant)
	uid, err := uuid.Parse(p.UID)
	if err != nil {
		return 0, fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	if p.Status.State == "" {
		return 0, fmt.Errorf("%w: %s: status has no state", ErrFailedPrecondition, what)
	}
	if p.Requeue != nil && ((p.Status.State != job.Queued && p.Status.State != job.Suspended) || p.Done) {
		return 0, fmt.Errorf("%w: %s: a requeued job is QUEUED or SUSPENDED and not done", ErrFailedPrecondition, what)
	}
	if p.Park > 0 && (p.Done || p.Requeue != nil) {
		return 0, fmt.Errorf("%w: %s: a parked job is neither done nor requeued", ErrFailedPrecondition, what)
	}
	it := saveItem{p: p, uid: uid, now: s.timestamp()}
	it.p.Status.CancelRequested = false // the column is the truth
	it.p.Status.SuspendRequested = false
	version, sent, err := s.saves.call(ctx, it)
	if !sent {
		return 0, translate(err, what)
	}
	return version, err
}

// saveItem is one JobSave in a shared statement.
type saveItem struct {
	p   JobSaveParams
	uid uuid.UUID
	now time.Time
}

// saveBatchMax is the most saves a statement takes. The statement joins
// its updated rows with its events by a nested loop (both sides are
// small): keep it small.
const saveBatchMax = 64

func newSaveQueue(run func(context.Context, []saveItem) ([]int64, []error)) *sharedQueue[saveItem, int64] {
	return &sharedQueue[saveItem, int64]{run: run, max: saveBatchMax,
		// A job's saves are one worker's, one at a time; the key keeps a
		// stray second one out of the statement's UPDATE ... FROM.
		keys: func(it saveItem) []string { return []string{it.p.Tenant + "\x00" + it.p.UID} }}
}

// saveShared runs items — saves of several jobs, workers and callers — as
// one statement and says what became of each. A statement that fails as a
// whole (a deadlock with another statement locking two of its rows in the
// other order, say) is retried one save at a time, so that no save fails
// for another's sake.
func (s *Store) saveShared(ctx context.Context, items []saveItem) ([]int64, []error) {
	versions, errs, err := s.saveJobs(ctx, items)
	if err == nil {
		return versions, errs
	}
	if len(items) == 1 {
		return []int64{0}, []error{translate(err, saveWhat(items[0]))}
	}
	versions, errs = make([]int64, len(items)), make([]error, len(items))
	for i, it := range items {
		v, e := s.saveShared(ctx, []saveItem{it})
		versions[i], errs[i] = v[0], e[0]
	}
	return versions, errs
}

func saveWhat(it saveItem) string {
	return fmt.Sprintf("job %s in tenant %q", it.p.UID, it.p.Tenant)
}

// saveJobs runs the one statement of items and says what became of each:
// its new version, or why the fence did not hold. err is the statement's
// own failure, untranslated.
//
// One statement, so one round trip and its own transaction: the fenced
// UPDATE of every job and the INSERT of the events of those it matched (a
// worker pass saves on every change it sees, so BEGIN, UPDATE, INSERT,
// COMMIT would cost it four).
func (s *Store) saveJobs(ctx context.Context, items []saveItem) ([]int64, []error, error) {
	n := len(items)
	query, args := saveStatement(items)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	out, errs := make([]int64, n), make([]error, n)
	saved := make([]bool, n)
	for rows.Next() {
		var (
			ord     int64
			version int64
		)
		if err := rows.Scan(&ord, &version); err != nil {
			rows.Close()
			return nil, nil, err
		}
		out[ord-1], saved[ord-1] = version, true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	notes := map[note]struct{}{}
	for i, it := range items {
		p := it.p
		if !saved[i] {
			// Why not: the lease, the version or the row. A row that looks
			// right now changed in between; the caller reads it again.
			err := fenceCheck(ctx, s.pool, p.WorkerID, p.Tenant, p.UID, p.Version)
			if err == nil {
				err = fmt.Errorf("%w: job %s changed during the save", ErrConflict, p.UID)
			}
			errs[i] = translate(err, saveWhat(it))
			continue
		}
		if len(p.Events) > 0 {
			notes[note{ChannelEvents, p.Tenant}] = struct{}{}
		}
		switch {
		case p.Requeue != nil:
			notes[note{ChannelSchedule, p.Tenant}] = struct{}{}
		case p.Status.State.Final() || startedRunning(p.Events):
			// A job that ran frees nothing, but a job waiting for it to
			// start (spec.dependsOn STARTED) may go now.
			notes[note{ChannelFreed, p.Tenant}] = struct{}{}
		}
	}
	s.notifier.add(notes)
	return out, errs, nil
}

// startedRunning reports whether events include the job's entering RUNNING.
func startedRunning(events []job.Event) bool {
	for _, e := range events {
		if e.Reason == job.ReasonRunning {
			return true
		}
	}
	return false
}

// saveStatement is saveJobs' statement. Its shape does not depend on the
// items, so one prepared statement serves every batch; its rows are found
// by key (sqlOwnedBy, TestJobSavePlanFindsRowsByKey).
func saveStatement(items []saveItem) (string, []any) {
	n := len(items)
	var (
		tenants, workers, states = make([]string, n), make([]string, n), make([]string, n)
		uids                     = make([]uuid.UUID, n)
		versions, afters, parks  = make([]int64, n), make([]int64, n), make([]int64, n)
		statuses                 = make([]job.Status, n)
		nows                     = make([]time.Time, n)
		finishes, starts         = make([]*time.Time, n), make([]*time.Time, n)
		dones, requeues          = make([]bool, n), make([]bool, n)
		preemptedBy              = make([]pgtype.UUID, n)
		ev                       eventColumns
		evItems                  []int64
	)
	for i, it := range items {
		p := it.p
		tenants[i], workers[i], states[i], uids[i] = p.Tenant, p.WorkerID, string(p.Status.State), it.uid
		versions[i], statuses[i], nows[i], starts[i] = p.Version, p.Status, it.now, p.Status.StartTime
		if p.Status.State.Final() {
			finishes[i] = &nows[i]
			if p.Status.CompletionTime != nil {
				finishes[i] = p.Status.CompletionTime
			}
		}
		dones[i], requeues[i], parks[i] = p.Done, p.Requeue != nil, microseconds(max(p.Park, 0))
		if p.Requeue != nil {
			afters[i] = microseconds(max(p.Requeue.After, 0))
			if by, err := uuid.Parse(p.Requeue.PreemptedBy); err == nil {
				preemptedBy[i] = pgtype.UUID{Bytes: by, Valid: true}
			}
		}
		e := columnsOf(p.Events, p.Status.State, it.now)
		ev.types, ev.reasons, ev.messages = append(ev.types, e.types...), append(ev.reasons, e.reasons...), append(ev.messages, e.messages...)
		ev.states, ev.times = append(ev.states, e.states...), append(ev.times, e.times...)
		for range p.Events {
			evItems = append(evItems, int64(i+1))
		}
	}
	return `
		WITH i AS (
			SELECT * FROM unnest($1::text[], $2::uuid[], $3::text[], $4::bigint[], $5::jsonb[], $6::text[],
			                     $7::timestamptz[], $8::timestamptz[], $9::bool[], $10::bool[], $11::timestamptz[],
			                     $12::bigint[], $13::uuid[], $14::bigint[])
			     WITH ORDINALITY AS i(tenant_id, uid, worker_id, version, status, state, now, finish, done,
			                          requeue, start_time, after, preempted_by, park, ord)
		), o AS (
			-- The job's open span in the usage ledger (ledger.go), locked:
			-- the rollup may have moved its rolled part since the snapshot.
			SELECT j.tenant_id, j.uid, j.ledger_since, coalesce(j.ledger_rolled, j.ledger_since) AS rolled,
			       j.ledger_gpus, j.ledger_cpu_millis, j.ledger_memory_bytes, j.ledger_pods
			FROM jobs j JOIN i ON j.tenant_id = i.tenant_id AND j.uid = i.uid
			WHERE j.version = i.version
			FOR UPDATE OF j
		), u AS (
			UPDATE jobs SET status = i.status, state = i.state, update_time = i.now, version = jobs.version + 1,
			                finish_time = CASE WHEN i.finish IS NULL THEN NULL
			                                   ELSE coalesce(jobs.finish_time, i.finish) END,
			                start_time = i.start_time,
			                active = jobs.active AND NOT i.done,
			                worker_id = CASE WHEN i.done OR i.requeue OR i.park > 0 THEN NULL ELSE jobs.worker_id END,
			                admitted = jobs.admitted AND NOT i.requeue,
			                cluster = CASE WHEN i.requeue THEN '' ELSE jobs.cluster END,
			                claim_after = CASE WHEN i.requeue THEN 'infinity'
			                                   WHEN i.park > 0 THEN now() + i.park * interval '1 microsecond'
			                                   ELSE jobs.claim_after END,
			                queued_at = CASE WHEN i.requeue THEN i.now ELSE jobs.queued_at END,
			                not_before = CASE WHEN i.requeue AND i.after > 0 THEN now() + i.after * interval '1 microsecond'
			                                  WHEN i.requeue THEN NULL ELSE jobs.not_before END,
			                preempt_for = CASE WHEN i.requeue THEN NULL ELSE jobs.preempt_for END,
			                preempt_message = CASE WHEN i.requeue THEN '' ELSE jobs.preempt_message END,
			                preempted_by = CASE WHEN i.requeue THEN i.preempted_by ELSE jobs.preempted_by END,
			                wait_reason = CASE WHEN i.requeue THEN '' ELSE jobs.wait_reason END,
			                ledger_since = CASE WHEN i.requeue OR i.finish IS NOT NULL THEN NULL ELSE jobs.ledger_since END,
			                ledger_rolled = CASE WHEN i.requeue OR i.finish IS NOT NULL THEN NULL ELSE jobs.ledger_rolled END,
			                ledger_gpus = CASE WHEN i.requeue OR i.finish IS NOT NULL THEN NULL ELSE jobs.ledger_gpus END,
			                ledger_cpu_millis = CASE WHEN i.requeue OR i.finish IS NOT NULL THEN NULL ELSE jobs.ledger_cpu_millis END,
			                ledger_memory_bytes = CASE WHEN i.requeue OR i.finish IS NOT NULL THEN NULL ELSE jobs.ledger_memory_bytes END,
			                ledger_pods = CASE WHEN i.requeue OR i.finish IS NOT NULL THEN NULL ELSE jobs.ledger_pods END
			FROM i JOIN o ON o.tenant_id = i.tenant_id AND o.uid = i.uid
			WHERE jobs.tenant_id = i.tenant_id AND jobs.uid = i.uid AND jobs.version = i.version
			  AND ` + sqlOwnedBy("i.worker_id") + `
			RETURNING i.ord, jobs.version, jobs.name, jobs.tenant_id, jobs.uid, i.now,
			          i.requeue OR i.finish IS NOT NULL AS ends, jobs.creator, jobs.labels,
			          o.ledger_since, o.rolled, o.ledger_gpus, o.ledger_cpu_millis, o.ledger_memory_bytes, o.ledger_pods
		), l AS (
			-- A requeue or an end closes the job's open span in the usage
			-- ledger (ledger.go), never before the part rolled up: the span
			-- row it writes, from the locked values (o), in this statement
			-- that clears them from the job's row.
			INSERT INTO usage_intervals (tenant_id, job_uid, creator, labels, gpus, cpu_millis, memory_bytes, pods, start_time, end_time, rolled_to)
			SELECT u.tenant_id, u.uid, u.creator, u.labels, u.ledger_gpus, u.ledger_cpu_millis, u.ledger_memory_bytes, u.ledger_pods,
			       u.ledger_since, greatest(u.now, u.rolled), u.rolled
			FROM u
			WHERE u.ends AND u.ledger_since IS NOT NULL
		), e AS (
			INSERT INTO job_events (tenant_id, job_uid, job_name, type, reason, message, state, create_time)
			SELECT u.tenant_id, u.uid, u.name, x.t, x.r, x.m, x.s, x.c
			FROM unnest($15::bigint[], $16::text[], $17::text[], $18::text[], $19::text[], $20::timestamptz[])
			        WITH ORDINALITY AS x(item, t, r, m, s, c, o)
			JOIN u ON u.ord = x.item
			ORDER BY x.o
		)
		SELECT ord, version FROM u`, []any{
			tenants, uids, workers, versions, statuses, states, nows, finishes, dones, requeues, starts,
			afters, preemptedBy, parks, evItems, ev.types, ev.reasons, ev.messages, ev.states, ev.times}
}

// JobPurge removes a deleted job's row, its idempotency keys and its
// events but the Deleted one, once its worker has removed what was left in Kubernetes. Only the job's
// owner may purge it (else ErrLeaseLost); a job that is not deleted is
// ErrFailedPrecondition.
func (s *Store) JobPurge(ctx context.Context, workerID, tenantID, uid string) error {
	what := fmt.Sprintf("job %s in tenant %q", uid, tenantID)
	if _, err := uuid.Parse(uid); err != nil {
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	err := s.inTx(ctx, func(tx *txn) error {
		var f fence
		var deleted bool
		err := tx.QueryRow(ctx, `SELECT coalesce(worker_id, ''), `+sqlLeaseLive+`,
			version, deleted FROM jobs WHERE tenant_id = $1 AND uid = $2 FOR UPDATE`, tenantID, uid).
			Scan(&f.workerID, &f.live, &f.version, &deleted)
		if err := f.verdict(err, workerID, f.version, uid); err != nil {
			return err
		}
		if !deleted {
			return fmt.Errorf("%w: %s is not deleted", ErrFailedPrecondition, what)
		}
		// Its events have no foreign key to the row (migration 000005: the
		// check cost every event insert a lookup), so they go by hand; every
		// event writer updates the job's row first, and this one holds it.
		// The Deleted event stays, a tombstone, until retention takes it:
		// a watch resumed from before the purge still learns that the job
		// went (with its name and uid; nothing else is left to send).
		_, err = tx.Exec(ctx, `WITH e AS (DELETE FROM job_events WHERE tenant_id = $1 AND job_uid = $2 AND reason <> $3)
			DELETE FROM jobs WHERE tenant_id = $1 AND uid = $2`, tenantID, uid, job.ReasonDeleted)
		return err
	})
	return translate(err, what)
}

// JobBrief is what the orphan sweep needs to know of a job.
type JobBrief struct {
	Key JobKey
	// Active: the job needs a worker (its worker, or the next claimer, takes
	// care of its objects).
	Active bool
	// CleanedUp: the job is final and nothing of it was left in Kubernetes
	// when it was last reconciled.
	CleanedUp bool
	State     job.State
	// Elsewhere: the job is not in this store's cluster (WithCluster):
	// admitted to another, or back in the queue in none. Nothing of it in
	// this cluster is its own any more (it moved, its cluster was lost).
	Elsewhere bool
}

// JobListByKeys returns what the store has of keys; keys without a row (a
// purged job) are left out, and so are keys whose uid is not a UUID. Like
// the claim, it works across tenants: the worker's orphan sweep asks about
// every object it sees at once.
func (s *Store) JobListByKeys(ctx context.Context, keys []JobKey) ([]JobBrief, error) {
	tenants, uids := keyArrays(keys)
	if len(uids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT j.tenant_id, j.uid::text, j.active, coalesce((j.status->>'cleanedUp')::boolean, false), j.state,
		       j.cluster <> $3
		FROM unnest($1::text[], $2::uuid[]) AS k(tenant_id, uid)
		JOIN jobs j ON j.tenant_id = k.tenant_id AND j.uid = k.uid`, tenants, uids, s.cluster)
	if err != nil {
		return nil, translate(err, "jobs")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (JobBrief, error) {
		var b JobBrief
		err := row.Scan(&b.Key.Tenant, &b.Key.UID, &b.Active, &b.CleanedUp, &b.State, &b.Elsewhere)
		return b, err
	})
	return out, translate(err, "jobs")
}

// JobCounts counts the unfinished jobs of every tenant by state, and how
// many of the QUEUED ones wait to be admitted. It is the queue seen from
// Postgres, for metrics.
func (s *Store) JobCounts(ctx context.Context) (byState map[job.State]int64, waitingForQuota int64, err error) {
	rows, err := s.pool.Query(ctx, `
		SELECT state, count(*),
		       count(*) FILTER (WHERE NOT admitted AND NOT cancel_requested)
		FROM jobs
		WHERE active AND NOT deleted AND `+sqlUnfinished+`
		GROUP BY state`)
	if err != nil {
		return nil, 0, translate(err, "job counts")
	}
	defer rows.Close()
	byState = map[job.State]int64{}
	for rows.Next() {
		var (
			st      string
			n, wait int64
		)
		if err := rows.Scan(&st, &n, &wait); err != nil {
			return nil, 0, translate(err, "job counts")
		}
		byState[job.State(st)] = n
		waitingForQuota += wait
	}
	return byState, waitingForQuota, translate(rows.Err(), "job counts")
}

// InCluster returns a Store that shares s's pool and queues but works for
// the workers of cluster name (WithCluster): the API server serves each
// remote agent its own cluster's jobs through one (AgentService).
func (s *Store) InCluster(name string) *Store {
	c := *s
	c.cluster = name
	return &c
}

// JobLoadInCluster is JobLoad for a worker of this store's cluster: a job
// admitted elsewhere, or to no cluster, is ErrNotFound, as one that does
// not exist (a remote agent must not read other clusters' jobs).
func (s *Store) JobLoadInCluster(ctx context.Context, tenantID, uid string) (WorkerJob, error) {
	what := fmt.Sprintf("job %s in tenant %q", uid, tenantID)
	if _, err := uuid.Parse(uid); err != nil {
		return WorkerJob{}, fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	w, _, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs j
		WHERE j.tenant_id = $1 AND j.uid = $2 AND j.cluster = $3`, tenantID, uid, s.cluster))
	return w, translate(err, what)
}
