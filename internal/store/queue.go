package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
	// Version is the fence for JobSave and JobAdmit.
	Version int64
	// Admitted: counted against the tenant's quota.
	Admitted bool
	// Deleted by the user: remove what is left in Kubernetes, then JobPurge.
	Deleted bool
	// Active: the job needs a worker.
	Active bool
	// WorkerID owns the job ("" when nobody does).
	WorkerID string
	Demand   job.Demand
}

// JobSaveParams is a worker's write of a job's status.
type JobSaveParams struct {
	WorkerID string
	Tenant   string
	UID      string
	// Version is the version the worker read (JobLoad, JobAdmit or the
	// previous JobSave).
	Version int64
	// Status is stored as given; Status.State sets the state column, and a
	// final state sets the finish time. Status.CancelRequested is ignored.
	Status job.Status
	// Events are appended in order. Empty Type means Normal, empty State the
	// new Status.State, zero CreateTime now.
	Events []job.Event
	// Admitted, when set, changes the admission flag (e.g. false to give the
	// quota back).
	Admitted *bool
	// Done: the job needs no more work. It becomes inactive and unowned.
	Done bool
}

// AdmitResult is the outcome of JobAdmit.
type AdmitResult struct {
	Admitted bool
	// Used is what the tenant's other admitted, unfinished jobs use.
	Used job.Demand
	// Version is the job's version after the call.
	Version int64
}

func microseconds(d time.Duration) int64 { return d.Microseconds() }

// sqlJobClaim walks jobs_claim_idx (active rows in priority DESC, seq
// order), skips rows owned under a live lease and rows other claimers hold
// locked, and takes the first $2. Its cost grows with the number of running
// (owned) jobs, which cluster capacity bounds, never with history: finished
// jobs are not in the index.
const sqlJobClaim = `
	WITH next AS (
		SELECT tenant_id, uid FROM jobs
		WHERE active AND (worker_id IS NULL OR lease_expires_at < now())
		ORDER BY priority DESC, seq
		LIMIT $2
		FOR UPDATE SKIP LOCKED
	)
	UPDATE jobs j SET worker_id = $1, lease_expires_at = now() + $3 * interval '1 microsecond',
	                  version = j.version + 1
	FROM next WHERE j.tenant_id = next.tenant_id AND j.uid = next.uid
	RETURNING j.tenant_id, j.uid::text`

// JobClaim gives workerID up to limit jobs that need a worker and have no
// live owner, highest priority first, then oldest, leased for ttl. Concurrent
// claimers skip each other's rows and never get the same job.
func (s *Store) JobClaim(ctx context.Context, workerID string, limit int, ttl time.Duration) ([]JobKey, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, sqlJobClaim, workerID, limit, microseconds(ttl))
	if err != nil {
		return nil, translate(err, "job claim")
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[JobKey])
	return keys, translate(err, "job claim")
}

// JobLeaseRenew extends workerID's live leases by ttl and returns the jobs
// it still owns. A job missing from the result is lost: its lease expired
// (it may be claimed again, by anyone), it was released or it needs no
// worker any more. Renewal does not change versions.
func (s *Store) JobLeaseRenew(ctx context.Context, workerID string, ttl time.Duration) ([]JobKey, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE jobs SET lease_expires_at = now() + $2 * interval '1 microsecond'
		WHERE worker_id = $1 AND active AND lease_expires_at > now()
		RETURNING tenant_id, uid::text`, workerID, microseconds(ttl))
	if err != nil {
		return nil, translate(err, "lease renewal")
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[JobKey])
	return keys, translate(err, "lease renewal")
}

// JobRelease gives up workerID's ownership of keys, so any worker may claim
// them at once (a job that still needs work) or nobody needs to.
func (s *Store) JobRelease(ctx context.Context, workerID string, keys ...JobKey) error {
	if len(keys) == 0 {
		return nil
	}
	tenants, uids := make([]string, 0, len(keys)), make([]string, 0, len(keys))
	for _, k := range keys {
		if _, err := uuid.Parse(k.UID); err != nil {
			continue
		}
		tenants, uids = append(tenants, k.Tenant), append(uids, k.UID)
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE jobs j SET worker_id = NULL, lease_expires_at = NULL, version = j.version + 1
		FROM unnest($2::text[], $3::uuid[]) AS k(tenant_id, uid)
		WHERE j.tenant_id = k.tenant_id AND j.uid = k.uid AND j.worker_id = $1`,
		workerID, tenants, uids)
	return translate(err, "job release")
}

// JobReleaseAll gives up everything workerID owns (at shutdown).
func (s *Store) JobReleaseAll(ctx context.Context, workerID string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE jobs SET worker_id = NULL, lease_expires_at = NULL, version = version + 1
		WHERE worker_id = $1`, workerID)
	return translate(err, "job release")
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
func fenceCheck(ctx context.Context, tx pgx.Tx, workerID, tenantID, uid string, version int64) error {
	var f fence
	err := tx.QueryRow(ctx, `SELECT coalesce(worker_id, ''), coalesce(lease_expires_at > now(), false), version
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
// optionally admission and "done". It succeeds only while workerID holds a
// live lease (else ErrLeaseLost) and the job is still at p.Version (else
// ErrConflict); it returns the new version. It never touches
// cancel_requested.
func (s *Store) JobSave(ctx context.Context, p JobSaveParams) (int64, error) {
	what := fmt.Sprintf("job %s in tenant %q", p.UID, p.Tenant)
	if _, err := uuid.Parse(p.UID); err != nil {
		return 0, fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	if p.Status.State == "" {
		return 0, fmt.Errorf("%w: %s: status has no state", ErrFailedPrecondition, what)
	}
	status := p.Status
	status.CancelRequested = false // the column is the truth
	now := s.timestamp()
	var finish *time.Time
	if status.State.Final() {
		finish = &now
		if status.CompletionTime != nil {
			finish = status.CompletionTime
		}
	}
	var version int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var j job.Job
		err := tx.QueryRow(ctx, `
			UPDATE jobs SET status = $5, state = $6, update_time = $7, version = version + 1,
			                finish_time = CASE WHEN $8::timestamptz IS NULL THEN NULL
			                                   ELSE coalesce(finish_time, $8) END,
			                admitted = coalesce($9, admitted),
			                active = active AND NOT $10,
			                worker_id = CASE WHEN $10 THEN NULL ELSE worker_id END,
			                lease_expires_at = CASE WHEN $10 THEN NULL ELSE lease_expires_at END
			WHERE tenant_id = $1 AND uid = $2 AND worker_id = $3 AND lease_expires_at > now() AND version = $4
			RETURNING version, name`,
			p.Tenant, p.UID, p.WorkerID, p.Version, status, string(status.State), now, finish, p.Admitted, p.Done,
		).Scan(&version, &j.Name)
		if errors.Is(err, pgx.ErrNoRows) {
			return fenceCheck(ctx, tx, p.WorkerID, p.Tenant, p.UID, p.Version)
		}
		if err != nil {
			return err
		}
		j.Tenant, j.UID, j.Status = p.Tenant, p.UID, status
		return eventsInsert(ctx, tx, j, p.Events, now)
	})
	if err != nil {
		return 0, translate(err, what)
	}
	return version, nil
}

// JobAdmit admits a job against its tenant's quota: it fits when, for every
// non-zero field of quota, the demand of the tenant's admitted, unfinished,
// undeleted jobs plus this job's stays within it. Admissions of one tenant
// are serialized by a lock on the tenant row, so concurrent workers never
// over-admit. A job already admitted is reported admitted. Fenced like
// JobSave; the version changes only when the job is admitted now.
func (s *Store) JobAdmit(ctx context.Context, workerID, tenantID, uid string, version int64, quota job.Demand) (AdmitResult, error) {
	what := fmt.Sprintf("job %s in tenant %q", uid, tenantID)
	if _, err := uuid.Parse(uid); err != nil {
		return AdmitResult{}, fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	var res AdmitResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// NO KEY UPDATE conflicts with itself (other admissions) but not with
		// the key-share locks of job inserts.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE`, tenantID); err != nil {
			return err
		}
		var (
			f        fence
			admitted bool
			final    bool
			deleted  bool
			demand   job.Demand
		)
		err := tx.QueryRow(ctx, `
			SELECT coalesce(worker_id, ''), coalesce(lease_expires_at > now(), false), version,
			       admitted, state IN ('SUCCEEDED', 'FAILED', 'CANCELLED'), deleted,
			       demand_gpu, demand_cpu_milli, demand_memory_bytes, demand_pods
			FROM jobs WHERE tenant_id = $1 AND uid = $2 FOR UPDATE`, tenantID, uid).
			Scan(&f.workerID, &f.live, &f.version, &admitted, &final, &deleted,
				&demand.GPU, &demand.CPUMilli, &demand.MemoryBytes, &demand.Pods)
		if err := f.verdict(err, workerID, version, uid); err != nil {
			return err
		}
		if final || deleted {
			return fmt.Errorf("%w: %s is finished or deleted", ErrFailedPrecondition, what)
		}
		err = tx.QueryRow(ctx, `
			SELECT coalesce(sum(demand_gpu), 0), coalesce(sum(demand_cpu_milli), 0),
			       coalesce(sum(demand_memory_bytes), 0), coalesce(sum(demand_pods), 0)
			FROM jobs
			WHERE tenant_id = $1 AND uid <> $2
			  AND admitted AND NOT deleted AND state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`,
			tenantID, uid).Scan(&res.Used.GPU, &res.Used.CPUMilli, &res.Used.MemoryBytes, &res.Used.Pods)
		if err != nil {
			return err
		}
		res.Version = version
		if admitted {
			res.Admitted = true
			return nil
		}
		if !fits(res.Used, demand, quota) {
			return nil
		}
		res.Admitted = true
		return tx.QueryRow(ctx, `UPDATE jobs SET admitted = true, version = version + 1, update_time = $3
			WHERE tenant_id = $1 AND uid = $2 RETURNING version`, tenantID, uid, s.timestamp()).Scan(&res.Version)
	})
	if err != nil {
		return AdmitResult{}, translate(err, what)
	}
	return res, nil
}

// fits reports whether used+demand stays within every non-zero limit.
func fits(used, demand, quota job.Demand) bool {
	within := func(used, demand, limit int64) bool { return limit == 0 || used+demand <= limit }
	return within(used.GPU, demand.GPU, quota.GPU) &&
		within(used.CPUMilli, demand.CPUMilli, quota.CPUMilli) &&
		within(used.MemoryBytes, demand.MemoryBytes, quota.MemoryBytes) &&
		within(used.Pods, demand.Pods, quota.Pods)
}

// JobPurge removes a deleted job's row, its events and idempotency keys,
// once its worker has removed what was left in Kubernetes. Only the job's
// owner may purge it (else ErrLeaseLost); a job that is not deleted is
// ErrFailedPrecondition.
func (s *Store) JobPurge(ctx context.Context, workerID, tenantID, uid string) error {
	what := fmt.Sprintf("job %s in tenant %q", uid, tenantID)
	if _, err := uuid.Parse(uid); err != nil {
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var f fence
		var deleted bool
		err := tx.QueryRow(ctx, `SELECT coalesce(worker_id, ''), coalesce(lease_expires_at > now(), false),
			version, deleted FROM jobs WHERE tenant_id = $1 AND uid = $2 FOR UPDATE`, tenantID, uid).
			Scan(&f.workerID, &f.live, &f.version, &deleted)
		if err := f.verdict(err, workerID, f.version, uid); err != nil {
			return err
		}
		if !deleted {
			return fmt.Errorf("%w: %s is not deleted", ErrFailedPrecondition, what)
		}
		_, err = tx.Exec(ctx, `DELETE FROM jobs WHERE tenant_id = $1 AND uid = $2`, tenantID, uid)
		return err
	})
	return translate(err, what)
}
