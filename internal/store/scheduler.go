package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// The scheduler's side (doc.go, "Scheduling"): one lease, the snapshot it
// decides on, the fenced commit of a cycle's decisions, and the queue view
// it publishes. Like the claim, these queries span tenants by design.

// SchedulerLease is a held scheduler lease.
type SchedulerLease struct {
	Holder string
	// Epoch fences every write of the holder's cycles: it changes whenever
	// the lease is taken by someone (or taken again after it expired).
	Epoch int64
}

// SchedulerLeaseAcquire takes the scheduler lease for holder for ttl, or
// extends it if holder has it. ok is false while someone else holds a
// live lease.
func (s *Store) SchedulerLeaseAcquire(ctx context.Context, holder string, ttl time.Duration) (SchedulerLease, bool, error) {
	var epoch int64
	err := s.pool.QueryRow(ctx, `
		UPDATE scheduler_lease SET
		    epoch = CASE WHEN holder = $1 AND expires_at > now() THEN epoch ELSE epoch + 1 END,
		    holder = $1, expires_at = now() + $2 * interval '1 microsecond'
		WHERE id = 1 AND (holder = $1 OR holder IS NULL OR expires_at <= now())
		RETURNING epoch`, holder, microseconds(ttl)).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return SchedulerLease{}, false, nil
	}
	if err != nil {
		return SchedulerLease{}, false, translate(err, "scheduler lease")
	}
	return SchedulerLease{Holder: holder, Epoch: epoch}, true, nil
}

// SchedulerLeaseRelease gives the lease up (at shutdown), so that another
// process takes over without waiting for it to expire.
func (s *Store) SchedulerLeaseRelease(ctx context.Context, l SchedulerLease) error {
	_, err := s.pool.Exec(ctx, `UPDATE scheduler_lease SET expires_at = '-infinity'
		WHERE id = 1 AND holder = $1 AND epoch = $2`, l.Holder, l.Epoch)
	return translate(err, "scheduler lease")
}

// leaseCheck locks the lease row and fails with ErrLeaseLost unless l is
// still the live lease. Held to commit, the lock keeps anyone from taking
// the lease over while a cycle writes.
func leaseCheck(ctx context.Context, tx pgx.Tx, l SchedulerLease) error {
	var ok bool
	err := tx.QueryRow(ctx, `SELECT holder = $1 AND epoch = $2 AND expires_at > now()
		FROM scheduler_lease WHERE id = 1 FOR UPDATE`, l.Holder, l.Epoch).Scan(&ok)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: the scheduler lease of %s at epoch %d", ErrLeaseLost, l.Holder, l.Epoch)
	}
	return nil
}

// SchedTenant is an active tenant as the scheduler reads it.
type SchedTenant struct {
	ID         string
	Quota      tenant.Quota
	Scheduling tenant.Scheduling
}

// SchedJob is an unfinished job as the scheduler reads it: pending
// (QUEUED, not admitted, not cancelled) or admitted.
type SchedJob struct {
	Key      JobKey
	Name     string
	Priority int32
	Seq      int64
	Admitted bool
	State    job.State
	QueuedAt time.Time
	// StartTime, NotBefore: zero when unset.
	StartTime time.Time
	NotBefore time.Time
	// PreemptFor, PreemptedBy: job uids ("" when unset).
	PreemptFor  string
	PreemptedBy string
	WaitReason  job.WaitReason
	Version     int64
}

// SchedulerTenants returns the active tenants.
func (s *Store) SchedulerTenants(ctx context.Context) ([]SchedTenant, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, quota, scheduling FROM tenants WHERE state = 'ACTIVE' ORDER BY id`)
	if err != nil {
		return nil, translate(err, "tenants")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SchedTenant, error) {
		var t SchedTenant
		err := r.Scan(&t.ID, &t.Quota, &t.Scheduling)
		return t, err
	})
	return out, translate(err, "tenants")
}

const sqlSchedulerJobs = `
	SELECT tenant_id, uid::text, name, priority, seq, admitted, state, queued_at,
	       start_time, not_before,
	       coalesce(preempt_for::text, ''), coalesce(preempted_by::text, ''), wait_reason, version
	FROM jobs
	WHERE active AND NOT deleted AND state IN ('QUEUED', 'STARTING', 'RUNNING', 'RESTARTING')
	  AND (admitted OR NOT cancel_requested)`

// SchedulerJobs returns every unfinished job the scheduler decides on or
// counts: the pending ones and the admitted ones, of every tenant, from
// jobs_unfinished_idx. It reads no spec or status: the scheduler keeps
// each job's shape (JobSpecs) while the job lives.
func (s *Store) SchedulerJobs(ctx context.Context) ([]SchedJob, error) {
	rows, err := s.pool.Query(ctx, sqlSchedulerJobs)
	if err != nil {
		return nil, translate(err, "jobs")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SchedJob, error) {
		var (
			j                    SchedJob
			state                string
			startTime, notBefore *time.Time
		)
		err := r.Scan(&j.Key.Tenant, &j.Key.UID, &j.Name, &j.Priority, &j.Seq, &j.Admitted, &state, &j.QueuedAt,
			&startTime, &notBefore, &j.PreemptFor, &j.PreemptedBy, &j.WaitReason, &j.Version)
		j.State = job.State(state)
		if startTime != nil {
			j.StartTime = *startTime
		}
		if notBefore != nil {
			j.NotBefore = *notBefore
		}
		return j, err
	})
	return out, translate(err, "jobs")
}

// sqlSchedulerWaiting finds a job waiting for admission: created or
// requeued jobs, unowned with claim_after 'infinity' until admitted, at the
// far end of jobs_claim_idx (a cancel-requested one counts too; the
// snapshot sorts it out).
const sqlSchedulerWaiting = `
	SELECT EXISTS (SELECT FROM jobs WHERE active AND worker_id IS NULL AND claim_after = 'infinity')`

// SchedulerWaiting reports whether any job may wait for admission: an
// index probe, where SchedulerJobs reads every unfinished job.
func (s *Store) SchedulerWaiting(ctx context.Context) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, sqlSchedulerWaiting).Scan(&ok)
	return ok, translate(err, "jobs")
}

// JobSpecs returns the specs of the given jobs by key, for the scheduler's
// shape cache; keys without a row are left out.
func (s *Store) JobSpecs(ctx context.Context, keys []JobKey) (map[JobKey]job.Spec, error) {
	tenants, uids := keyArrays(keys)
	out := make(map[JobKey]job.Spec, len(uids))
	if len(uids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT j.tenant_id, j.uid::text, j.spec
		FROM unnest($1::text[], $2::uuid[]) AS k(tenant_id, uid)
		JOIN jobs j ON j.tenant_id = k.tenant_id AND j.uid = k.uid`, tenants, uids)
	if err != nil {
		return nil, translate(err, "jobs")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			k    JobKey
			spec job.Spec
		)
		if err := rows.Scan(&k.Tenant, &k.UID, &spec); err != nil {
			return nil, translate(err, "jobs")
		}
		out[k] = spec
	}
	return out, translate(rows.Err(), "jobs")
}

// TenantRunTimes returns, per tenant, the median run time of its most
// recent successful jobs (up to the last 50 of the last 7 days), and how
// many that is. Tenants without such jobs are left out.
func (s *Store) TenantRunTimes(ctx context.Context) (map[string]RunTime, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT t.id, r.median, r.n
		FROM tenants t, LATERAL (
			SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finish_time - start_time)) AS median,
			       count(*) AS n
			FROM (SELECT finish_time, start_time FROM jobs
			      WHERE tenant_id = t.id AND state = 'SUCCEEDED' AND start_time IS NOT NULL
			        AND finish_time > now() - interval '7 days'
			      ORDER BY finish_time DESC LIMIT 50) recent
		) r
		WHERE t.state = 'ACTIVE' AND r.n > 0`)
	if err != nil {
		return nil, translate(err, "run times")
	}
	defer rows.Close()
	out := map[string]RunTime{}
	for rows.Next() {
		var (
			id     string
			median float64
			n      int
		)
		if err := rows.Scan(&id, &median, &n); err != nil {
			return nil, translate(err, "run times")
		}
		out[id] = RunTime{Median: time.Duration(median * float64(time.Second)), Jobs: n}
	}
	return out, translate(rows.Err(), "run times")
}

// RunTime is a tenant's typical job run time.
type RunTime struct {
	Median time.Duration
	Jobs   int
}

// SchedulerCommitParams are the decisions of one scheduling cycle.
type SchedulerCommitParams struct {
	Lease SchedulerLease
	// Admit lists jobs to admit. A job that is no longer QUEUED, pending
	// and uncancelled (a cancel committed since the snapshot) is skipped.
	Admit []JobKey
	// Preempt lists running jobs to preempt.
	Preempt []PreemptWrite
	// Waits records wait reasons that changed since the snapshot.
	Waits []WaitWrite
}

// PreemptWrite asks a running job's worker to stop it and requeue it.
type PreemptWrite struct {
	Victim JobKey
	// For is the uid of the pending job of the same tenant it makes room for.
	For     string
	Message string
}

// WaitWrite records why a pending job waits (the Admitted condition, a
// Waiting event) when the reason changed.
type WaitWrite struct {
	Key    JobKey
	Reason job.WaitReason
	// Message is the event's and the condition's text.
	Message string
}

// SchedulerCommitResult says what a commit did.
type SchedulerCommitResult struct {
	// Admitted are the jobs admitted (Admit less the skipped ones), with
	// when each entered the queue, for the admission latency.
	Admitted []AdmittedJob
	// Preempted are the victims marked (skipped: finished or already
	// stopping).
	Preempted []JobKey
}

// AdmittedJob is a job a commit admitted.
type AdmittedJob struct {
	Key      JobKey
	QueuedAt time.Time
}

// SchedulerCommit writes one cycle's decisions in one transaction, fenced
// by the lease: ErrLeaseLost when p.Lease is no longer the live lease, and
// then nothing is written. Admitted jobs become claimable at once, STARTING
// (admitWrite); a NOTIFY per tenant with admitted jobs and one per
// preempted job wake the workers (sent after commit).
//
// Rows are locked (the updates) before events are written, tenant by
// tenant and job by job in one order, so a commit does not deadlock with
// a cancel or a worker's save.
func (s *Store) SchedulerCommit(ctx context.Context, p SchedulerCommitParams) (SchedulerCommitResult, error) {
	var res SchedulerCommitResult
	err := s.inTx(ctx, func(tx *txn) error {
		res = SchedulerCommitResult{}
		if err := leaseCheck(ctx, tx, p.Lease); err != nil {
			return err
		}
		now := s.timestamp()
		events := map[JobKey][]job.Event{}
		jobs := map[JobKey]job.Job{}
		var notifies []string

		if len(p.Admit) > 0 {
			admitted, err := admitWrite(ctx, tx, p.Admit, now, jobs, events)
			if err != nil {
				return err
			}
			res.Admitted = admitted
			// Nobody owns an admitted job yet: one wake-up per tenant
			// for the claimers, not one per job.
			for _, a := range res.Admitted {
				notifies = append(notifies, a.Key.Tenant+"/")
			}
		}

		for _, pw := range p.Preempt {
			var j job.Job
			err := tx.QueryRow(ctx, `
				UPDATE jobs SET preempt_for = $3, preempt_message = $4, version = version + 1, update_time = $5
				WHERE tenant_id = $1 AND uid = $2 AND admitted AND preempt_for IS NULL AND NOT deleted
				  AND state IN ('QUEUED', 'STARTING', 'RUNNING', 'RESTARTING')
				RETURNING name, state`, pw.Victim.Tenant, pw.Victim.UID, pw.For, pw.Message, now).
				Scan(&j.Name, &j.Status.State)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // ended or stopping meanwhile
			}
			if err != nil {
				return err
			}
			j.Tenant, j.UID = pw.Victim.Tenant, pw.Victim.UID
			jobs[pw.Victim] = j
			events[pw.Victim] = append(events[pw.Victim], job.Event{
				Type: job.EventWarning, Reason: job.ReasonPreempting, Message: pw.Message})
			res.Preempted = append(res.Preempted, pw.Victim)
			notifies = append(notifies, pw.Victim.String())
		}

		if err := waitsWrite(ctx, tx, p.Waits, now, jobs, events); err != nil {
			return err
		}

		// Events last, in one statement.
		if err := eventsInsertMany(ctx, tx, jobs, events, now); err != nil {
			return err
		}
		for _, n := range notifies {
			tx.notify(ChannelJobs, n)
		}
		return nil
	})
	if err != nil {
		return SchedulerCommitResult{}, translate(err, "scheduler commit")
	}
	return res, nil
}

// admitWrite admits the jobs of keys that are still QUEUED, pending and
// uncancelled (others are skipped), and queues their events. An admitted
// job gets the status its start gives it (job.Admit: STARTING, its start
// time, the Admitted condition), written here in the same row update, so
// that its worker's first pass only creates the pods: a job's row is
// written once fewer before its pods exist. Rows are locked in key order.
func admitWrite(ctx context.Context, tx pgx.Tx, keys []JobKey, now time.Time, jobs map[JobKey]job.Job, events map[JobKey][]job.Event) ([]AdmittedJob, error) {
	tenants, uids := keyArrays(keys)
	rows, err := tx.Query(ctx, `
		SELECT j.tenant_id, j.uid, j.name, j.spec, j.status, j.queued_at
		FROM unnest($1::text[], $2::uuid[]) AS k(tenant_id, uid)
		JOIN jobs j ON j.tenant_id = k.tenant_id AND j.uid = k.uid
		WHERE j.state = 'QUEUED' AND NOT j.admitted AND NOT j.cancel_requested AND NOT j.deleted AND j.active
		ORDER BY j.tenant_id, j.uid
		FOR UPDATE OF j`, tenants, uids)
	if err != nil {
		return nil, err
	}
	var (
		admitted  []AdmittedJob
		aTenants  []string
		aUIDs     []uuid.UUID
		aStatuses []job.Status
		aStates   []string
		aStarts   []*time.Time
	)
	for rows.Next() {
		var (
			j        job.Job
			uid      uuid.UUID
			queuedAt time.Time
		)
		if err := rows.Scan(&j.Tenant, &uid, &j.Name, &j.Spec, &j.Status, &queuedAt); err != nil {
			rows.Close()
			return nil, err
		}
		j.UID = uid.String()
		k := JobKey{Tenant: j.Tenant, UID: j.UID}
		st, drafts, ok := job.Admit(j, now)
		if ok {
			j.Status = st
			jobs[k] = j
			for _, d := range drafts {
				events[k] = append(events[k], job.Event{Type: d.Type, Reason: d.Reason, Message: d.Message})
			}
		} else {
			// A decision on a replica's recorded end is pending: the
			// worker's first pass takes it, in a fenced save. The row is
			// admitted as it is.
			st = j.Status
		}
		admitted = append(admitted, AdmittedJob{Key: k, QueuedAt: queuedAt})
		aTenants, aUIDs = append(aTenants, j.Tenant), append(aUIDs, uid)
		aStatuses, aStates, aStarts = append(aStatuses, st), append(aStates, string(st.State)), append(aStarts, st.StartTime)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(admitted) == 0 {
		return nil, nil
	}
	_, err = tx.Exec(ctx, `
		UPDATE jobs j SET admitted = true, claim_after = '-infinity', not_before = NULL,
		                  status = k.status, state = k.state, start_time = k.start_time,
		                  version = j.version + 1, update_time = $6
		FROM unnest($1::text[], $2::uuid[], $3::jsonb[], $4::text[], $5::timestamptz[]) AS k(tenant_id, uid, status, state, start_time)
		WHERE j.tenant_id = k.tenant_id AND j.uid = k.uid`, aTenants, aUIDs, aStatuses, aStates, aStarts, now)
	return admitted, err
}

// waitsWrite records changed wait reasons in the jobs' statuses (the
// Admitted condition) and queues a Waiting event for each.
func waitsWrite(ctx context.Context, tx pgx.Tx, waits []WaitWrite, now time.Time, jobs map[JobKey]job.Job, events map[JobKey][]job.Event) error {
	if len(waits) == 0 {
		return nil
	}
	keys := make([]JobKey, len(waits))
	for i, w := range waits {
		keys[i] = w.Key
	}
	tenants, uids := keyArrays(keys)
	rows, err := tx.Query(ctx, `
		SELECT j.tenant_id, j.uid::text, j.name, j.status
		FROM unnest($1::text[], $2::uuid[]) AS k(tenant_id, uid)
		JOIN jobs j ON j.tenant_id = k.tenant_id AND j.uid = k.uid
		WHERE j.state = 'QUEUED' AND NOT j.admitted AND NOT j.cancel_requested AND NOT j.deleted
		FOR UPDATE OF j`, tenants, uids)
	if err != nil {
		return err
	}
	current := map[JobKey]job.Job{}
	for rows.Next() {
		var j job.Job
		if err := rows.Scan(&j.Tenant, &j.UID, &j.Name, &j.Status); err != nil {
			rows.Close()
			return err
		}
		current[JobKey{Tenant: j.Tenant, UID: j.UID}] = j
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var (
		wTenants, wReasons []string
		wUIDs              []uuid.UUID
		wStatuses          []job.Status
	)
	for _, w := range waits {
		j, ok := current[w.Key]
		u, err := uuid.Parse(w.Key.UID) // current's keys come from rows: valid
		if !ok || err != nil {
			continue // admitted, cancelled or gone meanwhile
		}
		st, drafts := job.Wait(j.Status, w.Reason, w.Message, now)
		j.Status = st
		jobs[w.Key] = j
		for _, d := range drafts {
			events[w.Key] = append(events[w.Key], job.Event{Type: d.Type, Reason: d.Reason, Message: d.Message})
		}
		wTenants, wUIDs = append(wTenants, w.Key.Tenant), append(wUIDs, u)
		wReasons, wStatuses = append(wReasons, string(w.Reason)), append(wStatuses, st)
	}
	if len(wUIDs) == 0 {
		return nil
	}
	_, err = tx.Exec(ctx, `
		UPDATE jobs j SET wait_reason = k.reason, status = k.status, version = j.version + 1, update_time = $5
		FROM unnest($1::text[], $2::uuid[], $3::text[], $4::jsonb[]) AS k(tenant_id, uid, reason, status)
		WHERE j.tenant_id = k.tenant_id AND j.uid = k.uid`, wTenants, wUIDs, wReasons, wStatuses, now)
	return err
}

// keyArrays are keys as the parameters of unnest($1::text[], $2::uuid[]),
// without a key whose uid is no UUID (no job has it). The uids go as
// UUIDs: pgx sends a []string for uuid[] only as text, after failing to
// encode it as binary (an error built and dropped per statement).
func keyArrays(keys []JobKey) (tenants []string, uids []uuid.UUID) {
	tenants, uids = make([]string, 0, len(keys)), make([]uuid.UUID, 0, len(keys))
	for _, k := range keys {
		if u, err := uuid.Parse(k.UID); err == nil {
			tenants, uids = append(tenants, k.Tenant), append(uids, u)
		}
	}
	return tenants, uids
}

// QueuePublish writes the queue view of the tenants in entries (a tenant
// with an empty map has no waiting job: its row goes), fenced by the lease
// like SchedulerCommit. Only tenants whose view changed need be passed.
func (s *Store) QueuePublish(ctx context.Context, l SchedulerLease, entries map[string]map[string]job.QueueInfo) error {
	if len(entries) == 0 {
		return nil
	}
	ids := make([]string, 0, len(entries))
	for id := range entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var (
		upTenants []string
		upEntries [][]byte
		gone      []string
	)
	for _, id := range ids {
		if len(entries[id]) == 0 {
			gone = append(gone, id)
			continue
		}
		b, err := json.Marshal(entries[id])
		if err != nil {
			return fmt.Errorf("store: queue of tenant %q: %w", id, err)
		}
		upTenants, upEntries = append(upTenants, id), append(upEntries, b)
	}
	err := s.inTx(ctx, func(tx *txn) error {
		if err := leaseCheck(ctx, tx, l); err != nil {
			return err
		}
		now := s.timestamp()
		if len(gone) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM tenant_queues WHERE tenant_id = ANY($1)`, gone); err != nil {
				return err
			}
		}
		if len(upTenants) > 0 {
			// Tenants deleted meanwhile are skipped (the join), not an error.
			_, err := tx.Exec(ctx, `
				INSERT INTO tenant_queues (tenant_id, update_time, entries)
				SELECT k.tenant_id, $3, k.entries
				FROM unnest($1::text[], $2::jsonb[]) AS k(tenant_id, entries)
				JOIN tenants t ON t.id = k.tenant_id
				ON CONFLICT (tenant_id) DO UPDATE SET update_time = excluded.update_time, entries = excluded.entries`,
				upTenants, upEntries, now)
			return err
		}
		return nil
	})
	return translate(err, "queue publish")
}

// QueueGet returns where the tenant's waiting jobs stood at the scheduler's
// last published cycle, by job uid, and when that was (zero: nothing
// published).
func (s *Store) QueueGet(ctx context.Context, tenantID string) (map[string]job.QueueInfo, time.Time, error) {
	var (
		at      time.Time
		entries map[string]job.QueueInfo
	)
	err := s.pool.QueryRow(ctx, `SELECT update_time, entries FROM tenant_queues WHERE tenant_id = $1`, tenantID).
		Scan(&at, &entries)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, translate(err, fmt.Sprintf("queue of tenant %q", tenantID))
	}
	return entries, at, nil
}
