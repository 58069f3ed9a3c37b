package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Admission: a tenant's QUEUED jobs against its quota, in its admission
// order, and the wake-ups that let its next job in line be claimed again
// (doc.go, "Admission").

// AdmitParams is a worker's attempt to admit a QUEUED job (JobAdmitWait).
type AdmitParams struct {
	WorkerID string
	Tenant   string
	UID      string
	// Version is the version the worker read: the fence, as for JobSave.
	Version int64
	// Quota is the tenant's quota in admission units (zero fields: no limit).
	Quota job.Demand
	// Wait, when set, is called inside the transaction when the job is not
	// admitted, with the result so far. It returns the status and events to
	// record (a nil status keeps the stored one) and how long the job stays
	// unclaimable. The job is then released in the same transaction: no
	// worker holds a lease on a job that waits (it would take a slot of a
	// worker's MaxOwnedJobs and a renewal every few seconds for nothing).
	// Wait must not block: it runs under the tenant's admission lock.
	Wait func(AdmitResult) (status *job.Status, events []job.Event, retryAfter time.Duration)
}

// AdmitResult is the outcome of JobAdmit and JobAdmitWait.
type AdmitResult struct {
	Admitted bool
	// Used is what the tenant's other admitted, unfinished jobs use.
	Used job.Demand
	// Behind names the tenant's job that comes before this one in admission
	// order and is not admitted yet: this one waits for it, whether or not
	// it would fit ("" when nothing comes before it).
	Behind string
	// Released: not admitted, and released by Wait until its retry time.
	Released bool
	// Version is the job's version after the call.
	Version int64
}

// JobAdmit admits a job against its tenant's quota (see JobAdmitWait); a
// job that is not admitted stays owned and unchanged.
func (s *Store) JobAdmit(ctx context.Context, workerID, tenantID, uid string, version int64, quota job.Demand) (AdmitResult, error) {
	return s.JobAdmitWait(ctx, AdmitParams{WorkerID: workerID, Tenant: tenantID, UID: uid, Version: version, Quota: quota})
}

// JobAdmitWait admits a QUEUED job against its tenant's quota, in the
// tenant's admission order: priority DESC, then submission. For every
// non-zero field of the quota, what the tenant's admitted, unfinished,
// undeleted jobs use, plus the demand of every job before this one in
// admission order that is not admitted yet, plus this job's demand must
// stay within it. That is strict order: a job never takes room that an
// earlier job waits for, so a big job is not starved by smaller ones
// admitted past it; AdmitResult.Behind then names the earlier job it waits
// behind. Earlier jobs that fit are merely not admitted yet (their worker
// is on its way); their room is kept, and the next pass admits after them.
// A job that needs more than the tenant's whole quota (the quota was
// lowered after it was accepted) reserves nothing and holds nobody up.
//
// Admissions of one tenant are serialized by a lock on the tenant row, so
// concurrent workers never over-admit nor admit out of order. A job
// admitted now wakes the next one in line (JobWakeNext), so a queue drains
// as fast as it fits, one claim per job. A job already admitted is
// reported admitted. A job not admitted is released when p.Wait is set.
// Fenced like JobSave; the version changes only when the job is admitted
// or released.
func (s *Store) JobAdmitWait(ctx context.Context, p AdmitParams) (AdmitResult, error) {
	what := fmt.Sprintf("job %s in tenant %q", p.UID, p.Tenant)
	if _, err := uuid.Parse(p.UID); err != nil {
		return AdmitResult{}, fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	var res AdmitResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// NO KEY UPDATE conflicts with itself (other admissions, job ends)
		// but not with the key-share locks of job inserts.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE`, p.Tenant); err != nil {
			return err
		}
		var (
			f        fence
			j        = job.Job{Tenant: p.Tenant, UID: p.UID}
			admitted bool
			final    bool
			deleted  bool
			priority int32
			seq      int64
			demand   job.Demand
		)
		err := tx.QueryRow(ctx, `
			SELECT coalesce(worker_id, ''), coalesce(lease_expires_at > now(), false), version,
			       admitted, state IN ('SUCCEEDED', 'FAILED', 'CANCELLED'), deleted, name, state, priority, seq,
			       demand_gpu, demand_cpu_milli, demand_memory_bytes, demand_pods
			FROM jobs WHERE tenant_id = $1 AND uid = $2 FOR UPDATE`, p.Tenant, p.UID).
			Scan(&f.workerID, &f.live, &f.version, &admitted, &final, &deleted, &j.Name, &j.Status.State, &priority, &seq,
				&demand.GPU, &demand.CPUMilli, &demand.MemoryBytes, &demand.Pods)
		if err := f.verdict(err, p.WorkerID, p.Version, p.UID); err != nil {
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
			p.Tenant, p.UID).Scan(&res.Used.GPU, &res.Used.CPUMilli, &res.Used.MemoryBytes, &res.Used.Pods)
		if err != nil {
			return err
		}
		res.Version = p.Version
		if admitted {
			res.Admitted = true
			return nil
		}
		if fits(job.Demand{}, demand, p.Quota) {
			// Strict order: the jobs before this one are admitted first, so
			// their demand is reserved; a job that could never fit reserves
			// nothing (and waits itself).
			if res.Behind, err = admissionBlocker(ctx, tx, p.Tenant, priority, seq, res.Used, demand, p.Quota); err != nil {
				return err
			}
		}
		if res.Behind == "" && fits(res.Used, demand, p.Quota) {
			res.Admitted = true
			err := tx.QueryRow(ctx, `UPDATE jobs SET admitted = true, version = version + 1, update_time = $3
				WHERE tenant_id = $1 AND uid = $2 RETURNING version`, p.Tenant, p.UID, s.timestamp()).Scan(&res.Version)
			if err != nil {
				return err
			}
			return wakeNext(ctx, tx, p.Tenant, p.Quota)
		}
		if p.Wait == nil {
			return nil
		}
		st, events, after := p.Wait(res)
		now := s.timestamp()
		err = tx.QueryRow(ctx, `
			UPDATE jobs SET status = coalesce($3, status), update_time = $4, version = version + 1,
			                worker_id = NULL, lease_expires_at = NULL,
			                claim_after = now() + $5 * interval '1 microsecond'
			WHERE tenant_id = $1 AND uid = $2 RETURNING version`,
			p.Tenant, p.UID, st, now, microseconds(max(after, 0))).Scan(&res.Version)
		if err != nil {
			return err
		}
		res.Released = true
		if st != nil {
			j.Status = *st
		}
		return eventsInsert(ctx, tx, j, events, now)
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

// inLine is a job waiting to be admitted.
type inLine struct{ uid, name string }

const sqlNextInLine = `
	SELECT uid::text, name FROM jobs
	WHERE tenant_id = $1 AND active AND NOT admitted AND state = 'QUEUED'
	  AND ($2 = 0 OR demand_gpu <= $2) AND ($3 = 0 OR demand_cpu_milli <= $3)
	  AND ($4 = 0 OR demand_memory_bytes <= $4) AND ($5 = 0 OR demand_pods <= $5)
	ORDER BY -priority, seq
	LIMIT 1`

// sqlAdmissionBlocker walks the tenant's jobs waiting before job ($2, $3)
// in admission order, adding up their demand, and returns the first at
// which what is in use ($4..$7), the demand so far and the job's own
// ($8..$11) exceed a limit ($12..$15). The window aggregate streams, so the
// scan stops there: its cost is bounded by how many jobs fit in the quota,
// not by how many wait.
const sqlAdmissionBlocker = `
	SELECT name FROM (
		SELECT name,
		       sum(demand_gpu) OVER w AS gpu, sum(demand_cpu_milli) OVER w AS cpu,
		       sum(demand_memory_bytes) OVER w AS mem, sum(demand_pods) OVER w AS pods
		FROM jobs
		WHERE tenant_id = $1 AND active AND NOT admitted AND state = 'QUEUED'
		  AND (-priority, seq) < (-$2::int, $3::bigint)
		  AND ($12 = 0 OR demand_gpu <= $12) AND ($13 = 0 OR demand_cpu_milli <= $13)
		  AND ($14 = 0 OR demand_memory_bytes <= $14) AND ($15 = 0 OR demand_pods <= $15)
		WINDOW w AS (ORDER BY -priority, seq ROWS UNBOUNDED PRECEDING)
		ORDER BY -priority, seq
	) before
	WHERE ($12 > 0 AND $4 + gpu + $8 > $12) OR ($13 > 0 AND $5 + cpu + $9 > $13)
	   OR ($14 > 0 AND $6 + mem + $10 > $14) OR ($15 > 0 AND $7 + pods + $11 > $15)
	LIMIT 1`

// admissionBlocker names the job that a job with this priority, seq and
// demand waits behind ("" when none): the first of the tenant's jobs
// before it in admission order whose demand, with the demand of the jobs
// before it and of used, leaves no room for demand.
func admissionBlocker(ctx context.Context, tx pgx.Tx, tenantID string, priority int32, seq int64, used, demand, quota job.Demand) (string, error) {
	var name string
	err := tx.QueryRow(ctx, sqlAdmissionBlocker, tenantID, priority, seq,
		used.GPU, used.CPUMilli, used.MemoryBytes, used.Pods,
		demand.GPU, demand.CPUMilli, demand.MemoryBytes, demand.Pods,
		quota.GPU, quota.CPUMilli, quota.MemoryBytes, quota.Pods).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return name, err
}

// nextInLine returns the tenant's first job in admission order (priority
// DESC, then submission) that waits to be admitted and could fit the whole
// quota (one that cannot never holds the others up). One probe of
// jobs_admission_idx.
func nextInLine(ctx context.Context, tx pgx.Tx, tenantID string, quota job.Demand) (inLine, bool, error) {
	var q inLine
	err := tx.QueryRow(ctx, sqlNextInLine, tenantID, quota.GPU, quota.CPUMilli, quota.MemoryBytes, quota.Pods).Scan(&q.uid, &q.name)
	if errors.Is(err, pgx.ErrNoRows) {
		return inLine{}, false, nil
	}
	return q, err == nil, err
}

// wakeNext makes the tenant's next job in line claimable at once if it was
// released to wait, and tells the workers (NOTIFY on commit). The caller
// holds the tenant's admission lock. Only the next job is woken, not every
// waiting one: under strict order nothing behind it can be admitted before
// it, and its admission wakes the one after it. So the end of a job costs
// one claim, however many jobs the tenant has queued.
func wakeNext(ctx context.Context, tx pgx.Tx, tenantID string, quota job.Demand) error {
	head, ok, err := nextInLine(ctx, tx, tenantID, quota)
	if err != nil || !ok {
		return err
	}
	tag, err := tx.Exec(ctx, `UPDATE jobs SET claim_after = '-infinity'
		WHERE tenant_id = $1 AND uid = $2 AND claim_after > now()`, tenantID, head.uid)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	return notify(ctx, tx, ChannelJobs, tenantID+"/"+head.uid)
}

// tenantLockLimits takes the tenant's admission lock and returns its quota
// in admission units; ok is false when the tenant does not exist.
func tenantLockLimits(ctx context.Context, tx pgx.Tx, tenantID string) (job.Demand, bool, error) {
	var q tenant.Quota
	err := tx.QueryRow(ctx, `SELECT quota FROM tenants WHERE id = $1 FOR NO KEY UPDATE`, tenantID).Scan(&q)
	if errors.Is(err, pgx.ErrNoRows) {
		return job.Demand{}, false, nil
	}
	if err != nil {
		return job.Demand{}, false, err
	}
	limits, err := q.Limits()
	if err != nil {
		return job.Demand{}, false, fmt.Errorf("tenant %q: %w", tenantID, err)
	}
	return job.DemandOf(limits), true, nil
}

// JobWakeNext makes the tenant's next job in admission order claimable at
// once if it waits released (JobAdmitWait), for when its quota changed.
// Job ends and admissions do this themselves.
func (s *Store) JobWakeNext(ctx context.Context, tenantID string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		limits, ok, err := tenantLockLimits(ctx, tx, tenantID)
		if err != nil || !ok {
			return err
		}
		return wakeNext(ctx, tx, tenantID, limits)
	})
	return translate(err, fmt.Sprintf("tenant %q", tenantID))
}
