package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/cluster"
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

// sqlLeaseCheck locks the lease row and says whether ($1, $2) is still
// the live lease.
const sqlLeaseCheck = `SELECT holder = $1 AND epoch = $2 AND expires_at > now() FROM scheduler_lease WHERE id = 1 FOR UPDATE`

// leaseCheck locks the lease row and fails with ErrLeaseLost unless l is
// still the live lease. Held to commit, the lock keeps anyone from taking
// the lease over while a cycle writes.
func leaseCheck(ctx context.Context, tx pgx.Tx, l SchedulerLease) error {
	var ok bool
	err := tx.QueryRow(ctx, sqlLeaseCheck, l.Holder, l.Epoch).Scan(&ok)
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
	Sharing    tenant.Sharing
	// Clusters are the clusters the tenant is allowed (empty: all).
	Clusters []string
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
	// PreemptFor, PreemptedBy: job uids ("" when unset), of
	// PreemptorTenant (the job's own tenant when "").
	PreemptFor      string
	PreemptedBy     string
	PreemptorTenant string
	// GPUType is the GPU model the job was counted against at admission.
	GPUType string
	// Cluster is the cluster the job was admitted to.
	Cluster    string
	WaitReason job.WaitReason
	Version    int64
	// Spec is the job's spec when SchedulerRead was asked for it.
	Spec *job.Spec
	// AdmittedBefore: the job was admitted once (migration 000012): a
	// requeued dependent is not held by its dependencies again.
	AdmittedBefore bool
}

// SchedulerRead is what a scheduling cycle reads of Postgres.
type SchedulerRead struct {
	// Tenants are the active tenants.
	Tenants []SchedTenant
	// Jobs are every unfinished job the scheduler decides on or counts.
	Jobs []SchedJob
	// Cohorts are the cohorts' own pools (Name, Nominal and GPUTypes).
	Cohorts []tenant.Cohort
}

// SchedulerRead reads the active tenants and every unfinished job the
// scheduler decides on or counts — the pending ones and the admitted ones,
// of every tenant, from jobs_unfinished_idx — in one round trip. Jobs carry
// no status, and their spec only when their seq is above specsAfter (the
// scheduler keeps each job's shape while the job lives, and asks for the
// specs of the jobs submitted since it last read; JobSpecs reads any other
// it lacks).
func (s *Store) SchedulerRead(ctx context.Context, specsAfter int64) (SchedulerRead, error) {
	var out SchedulerRead
	b := &pgx.Batch{}
	b.Queue(`SELECT id, quota, scheduling, sharing, clusters FROM tenants WHERE state = 'ACTIVE' ORDER BY id`).Query(func(rows pgx.Rows) error {
		var err error
		out.Tenants, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (SchedTenant, error) {
			var t SchedTenant
			err := r.Scan(&t.ID, &t.Quota, &t.Scheduling, &t.Sharing, &t.Clusters)
			return t, err
		})
		return err
	})
	b.Queue(`SELECT name, nominal, gpu_types FROM cohorts ORDER BY name`).Query(func(rows pgx.Rows) error {
		var err error
		out.Cohorts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (tenant.Cohort, error) {
			var c tenant.Cohort
			err := r.Scan(&c.Name, &c.Nominal, &c.GPUTypes)
			return c, err
		})
		return err
	})
	b.Queue(sqlSchedulerJobs, specsAfter).Query(func(rows pgx.Rows) error {
		var err error
		out.Jobs, err = pgx.CollectRows(rows, scanSchedJob)
		return err
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return SchedulerRead{}, translate(err, "scheduler read")
	}
	return out, nil
}

const sqlSchedulerJobs = `
	SELECT tenant_id, uid::text, name, priority, seq, admitted, state, queued_at,
	       start_time, not_before,
	       coalesce(preempt_for::text, ''), coalesce(preempted_by::text, ''), coalesce(preemptor_tenant, ''), admitted_model, wait_reason, version,
	       CASE WHEN seq > $1 THEN spec END, admitted_before, cluster
	FROM jobs
	WHERE active AND NOT deleted AND ` + sqlUnfinished + `
	  AND (admitted OR NOT cancel_requested)`

// scanSchedJob scans a row of sqlSchedulerJobs.
func scanSchedJob(r pgx.CollectableRow) (SchedJob, error) {
	var (
		j                    SchedJob
		state                string
		startTime, notBefore *time.Time
	)
	err := r.Scan(&j.Key.Tenant, &j.Key.UID, &j.Name, &j.Priority, &j.Seq, &j.Admitted, &state, &j.QueuedAt,
		&startTime, &notBefore, &j.PreemptFor, &j.PreemptedBy, &j.PreemptorTenant, &j.GPUType, &j.WaitReason, &j.Version, &j.Spec, &j.AdmittedBefore, &j.Cluster)
	j.State = job.State(state)
	if startTime != nil {
		j.StartTime = *startTime
	}
	if notBefore != nil {
		j.NotBefore = *notBefore
	}
	return j, err
}

// sqlSchedulerWaiting finds a job waiting for admission: created or
// requeued jobs, unowned with claim_after 'infinity' until admitted, at the
// far end of jobs_claim_idx (a cancel-requested one counts too; the
// snapshot sorts it out). A SUSPENDED job is unowned with claim_after
// 'infinity' too, but waits for a resume, not for the scheduler.
const sqlSchedulerWaiting = `
	SELECT EXISTS (SELECT FROM jobs WHERE active AND worker_id IS NULL AND claim_after = 'infinity'
	                                  AND state <> 'SUSPENDED')`

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

// DefaultCluster names the cluster of an installation that registered no
// other: a job admitted without a cluster is admitted there. It is the
// clusters row migration 000016 creates (cluster.Default).
const DefaultCluster = cluster.Default

// SchedulerCommitParams are the decisions of one scheduling cycle.
type SchedulerCommitParams struct {
	Lease SchedulerLease
	// Admit lists jobs to admit. A job that is no longer QUEUED, pending
	// and uncancelled (a cancel committed since the snapshot) is skipped.
	Admit []JobKey
	// GPUTypes is the GPU model an admitted job was counted against, for
	// jobs of any model of tenants with quotas per model.
	GPUTypes map[JobKey]string
	// Clusters is the cluster each admitted job was placed in; a job not
	// in it goes to DefaultCluster.
	Clusters map[JobKey]string
	// Preempt lists running jobs to preempt.
	Preempt []PreemptWrite
	// Waits records wait reasons that changed since the snapshot.
	Waits []WaitWrite
	// DependencyFailed ends pending jobs a dependency of which can never
	// be met (skipped: admitted, cancelled or gone since the snapshot).
	DependencyFailed []DependencyFailWrite
	// Dependencies are the dependencies of the jobs in Admit: their
	// results (job.ResultOf) go into the admitted jobs' statuses.
	Dependencies []JobKey
}

// DependencyFailWrite ends a pending job whose dependency can never be met.
type DependencyFailWrite struct {
	Key JobKey
	// Cancel: CANCELLED (onDependencyFailure CANCEL), else FAILED.
	Cancel  bool
	Message string
}

// PreemptWrite asks a running job's worker to stop it and requeue it.
type PreemptWrite struct {
	Victim JobKey
	// For is the uid of the pending job it makes room for, of ForTenant
	// ("": the victim's tenant; another one for reclaim and fair share).
	For       string
	ForTenant string
	// Message says who preempted it and why, with the figures, for its
	// Preempting event and, once requeued, its Preempted condition.
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
	// DependencyFailed are the jobs ended for a dependency.
	DependencyFailed []JobKey
}

// AdmittedJob is a job a commit admitted.
type AdmittedJob struct {
	Key      JobKey
	QueuedAt time.Time
}

// SchedulerCommit writes one cycle's decisions in one transaction, fenced
// by the lease: ErrLeaseLost when p.Lease is no longer the live lease, and
// then nothing is written. Admitted jobs become claimable at once, STARTING
// (admitted); a NOTIFY per tenant with admitted jobs and one per preempted
// job wake the workers (sent after commit).
//
// It takes two round trips (pipelined), as an admission is on every job's
// way to its pods: first the lease's row and the rows to write are locked
// and read — the lease first, then jobs in one order (tenant, uid) within
// each kind, so that a commit does not deadlock with a cancel or a
// worker's save — then the writes the decisions make of what was read, the
// events last, and COMMIT.
func (s *Store) SchedulerCommit(ctx context.Context, p SchedulerCommitParams) (SchedulerCommitResult, error) {
	var (
		res      SchedulerCommitResult
		leaseOK  bool
		admits   []job.Job
		queuedAt = map[JobKey]time.Time{}
		waiting  = map[JobKey]job.Job{}
		victims  = map[JobKey]job.Job{}
		failing  = map[JobKey]job.Job{}
		deps     = map[JobKey]job.Job{}
	)
	reads := &pgx.Batch{}
	reads.Queue(sqlCustomPlans)
	reads.Queue(sqlLeaseCheck, p.Lease.Holder, p.Lease.Epoch).QueryRow(func(r pgx.Row) error { return r.Scan(&leaseOK) })
	if len(p.Admit) > 0 {
		tenants, uids := keyArrays(p.Admit)
		reads.Queue(`
			SELECT j.tenant_id, j.uid::text, j.name, j.spec, j.status, j.queued_at
			FROM unnest($1::text[], $2::uuid[]) AS k(tenant_id, uid)
			JOIN jobs j ON j.tenant_id = k.tenant_id AND j.uid = k.uid
			WHERE j.state = 'QUEUED' AND NOT j.admitted AND NOT j.cancel_requested AND NOT j.deleted AND j.active
			ORDER BY j.tenant_id, j.uid
			FOR UPDATE OF j`, tenants, uids).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var (
					j  job.Job
					at time.Time
				)
				if err := rows.Scan(&j.Tenant, &j.UID, &j.Name, &j.Spec, &j.Status, &at); err != nil {
					return err
				}
				admits = append(admits, j)
				queuedAt[JobKey{Tenant: j.Tenant, UID: j.UID}] = at
			}
			return rows.Err()
		})
	}
	if len(p.Waits) > 0 {
		keys := make([]JobKey, len(p.Waits))
		for i, w := range p.Waits {
			keys[i] = w.Key
		}
		queueLocking(reads, keys, `j.state = 'QUEUED' AND NOT j.admitted AND NOT j.cancel_requested AND NOT j.deleted`, waiting)
	}
	if len(p.Preempt) > 0 {
		keys := make([]JobKey, len(p.Preempt))
		for i, pw := range p.Preempt {
			keys[i] = pw.Victim
		}
		queueLocking(reads, keys, `j.admitted AND j.preempt_for IS NULL AND NOT j.deleted
			AND j.`+sqlUnfinished, victims)
	}
	if len(p.DependencyFailed) > 0 {
		keys := make([]JobKey, len(p.DependencyFailed))
		for i, f := range p.DependencyFailed {
			keys[i] = f.Key
		}
		queueLocking(reads, keys, `j.state = 'QUEUED' AND NOT j.admitted AND NOT j.cancel_requested AND NOT j.deleted`, failing)
	}
	if len(p.Dependencies) > 0 {
		// Not locked: a result is what the dependency was at admission.
		tenants, uids := keyArrays(p.Dependencies)
		reads.Queue(`
			SELECT j.tenant_id, j.uid::text, j.name, j.status
			FROM unnest($1::text[], $2::uuid[]) AS k(tenant_id, uid)
			JOIN jobs j ON j.tenant_id = k.tenant_id AND j.uid = k.uid
			WHERE NOT j.deleted`, tenants, uids).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var j job.Job
				if err := rows.Scan(&j.Tenant, &j.UID, &j.Name, &j.Status); err != nil {
					return err
				}
				deps[JobKey{Tenant: j.Tenant, UID: j.UID}] = j
			}
			return rows.Err()
		})
	}
	err := s.pipelined(ctx, reads, func(b *pgx.Batch, tx *txn) error {
		res = SchedulerCommitResult{}
		if !leaseOK {
			return fmt.Errorf("%w: the scheduler lease of %s at epoch %d", ErrLeaseLost, p.Lease.Holder, p.Lease.Epoch)
		}
		now := s.timestamp()
		jobs := map[JobKey]job.Job{}
		events := map[JobKey][]job.Event{}
		withResults(admits, deps)
		res.Admitted = admitted(b, admits, queuedAt, p.GPUTypes, p.Clusters, now, jobs, events)
		for _, a := range res.Admitted {
			// Nobody owns an admitted job yet: one wake-up per tenant and
			// cluster for that cluster's claimers, not one per job.
			tx.notify(ChannelJobs, AdmittedPayload(a.Key.Tenant, cmp.Or(p.Clusters[a.Key], DefaultCluster)))
		}
		res.Preempted = preempted(b, p.Preempt, victims, now, jobs, events)
		for _, k := range res.Preempted {
			tx.notify(ChannelJobs, k.String())
		}
		waited(b, p.Waits, waiting, now, jobs, events)
		res.DependencyFailed = dependencyFailed(b, p.DependencyFailed, failing, now, jobs, events)
		for _, k := range res.DependencyFailed {
			tx.notify(ChannelJobs, k.String())
			// Its own dependents look again.
			tx.notify(ChannelFreed, k.Tenant)
		}
		// Events last, in one statement.
		sql, args, tenants, err := eventsStatement(jobs, events, now)
		if err != nil {
			return err
		}
		if sql != "" {
			b.Queue(sql, args...)
		}
		for _, t := range tenants {
			tx.notify(ChannelEvents, t)
		}
		return nil
	})
	if err != nil {
		return SchedulerCommitResult{}, translate(err, "scheduler commit")
	}
	return res, nil
}

// sqlCustomPlans makes the transaction's statements plan for their
// arguments. A connection's prepared statement gets a generic plan from
// its sixth run on, made for ten keys; a commit of thousands of admissions
// took 2.2 s with it instead of 0.35 s (TestSchedulerCommitStaysLinear),
// and a scheduler's connections run its statements thousands of times.
// Planning each costs a cycle well under a millisecond.
const sqlCustomPlans = `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`

// queueLocking queues on b the read of the jobs of keys that meet where
// (a condition on j), locked in key order, into into by key.
func queueLocking(b *pgx.Batch, keys []JobKey, where string, into map[JobKey]job.Job) {
	tenants, uids := keyArrays(keys)
	b.Queue(`
		SELECT j.tenant_id, j.uid::text, j.name, j.status
		FROM unnest($1::text[], $2::uuid[]) AS k(tenant_id, uid)
		JOIN jobs j ON j.tenant_id = k.tenant_id AND j.uid = k.uid
		WHERE `+where+`
		ORDER BY j.tenant_id, j.uid
		FOR UPDATE OF j`, tenants, uids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var j job.Job
			if err := rows.Scan(&j.Tenant, &j.UID, &j.Name, &j.Status); err != nil {
				return err
			}
			into[JobKey{Tenant: j.Tenant, UID: j.UID}] = j
		}
		return rows.Err()
	})
}

// admitted queues the admission of the jobs read (still QUEUED, pending
// and uncancelled; the others were skipped) and their events. An admitted
// job gets the status its start gives it (job.Admit: STARTING, its start
// time, the Admitted condition), written in the same row update, so that
// its worker's first pass only creates the pods: a job's row is written
// once fewer before its pods exist.
func admitted(b *pgx.Batch, read []job.Job, queuedAt map[JobKey]time.Time, gpuTypes, clusters map[JobKey]string, now time.Time, jobs map[JobKey]job.Job, events map[JobKey][]job.Event) []AdmittedJob {
	if len(read) == 0 {
		return nil
	}
	var (
		out       []AdmittedJob
		aKeys     []JobKey
		aStatuses []job.Status
		aStates   []string
		aStarts   []*time.Time
		aModels   []string
		aClusters []string
		aDemands  [job.NumResources][]int64
	)
	for _, j := range read {
		k := JobKey{Tenant: j.Tenant, UID: j.UID}
		j.Status.GPUType = gpuTypes[k]
		j.Status.Cluster = cmp.Or(clusters[k], DefaultCluster)
		st, drafts, ok := job.Admit(j, now)
		if ok {
			st.Dependencies = j.Status.Dependencies
			j.Status = st
			jobs[k] = j
			events[k] = append(events[k], eventsOf(drafts)...)
		} else {
			// A decision on a replica's recorded end is pending: the
			// worker's first pass takes it, in a fenced save. The row is
			// admitted as it is.
			st = j.Status
		}
		out = append(out, AdmittedJob{Key: k, QueuedAt: queuedAt[k]})
		aKeys = append(aKeys, k)
		aStatuses, aStates, aStarts = append(aStatuses, st), append(aStates, string(st.State)), append(aStarts, st.StartTime)
		aModels = append(aModels, gpuTypes[k])
		aClusters = append(aClusters, j.Status.Cluster)
		d := demandOf(j.Spec)
		for r := range aDemands {
			aDemands[r] = append(aDemands[r], d[r])
		}
	}
	tenants, uids := keyArrays(aKeys)
	// The admission opens the job's span in the usage ledger (ledger.go)
	// in the row it updates: its start and the demand it counts. A job
	// already holding an open span (a replay) keeps it.
	b.Queue(`
		UPDATE jobs j SET admitted = true, admitted_before = true, claim_after = '-infinity', not_before = NULL,
		                  status = k.status, state = k.state, start_time = k.start_time,
		                  admitted_model = k.model, cluster = k.cluster, version = j.version + 1, update_time = $6,
		                  ledger_since = coalesce(j.ledger_since, $6),
		                  ledger_gpus = CASE WHEN j.ledger_since IS NULL THEN k.gpus ELSE j.ledger_gpus END,
		                  ledger_cpu_millis = CASE WHEN j.ledger_since IS NULL THEN k.cpu ELSE j.ledger_cpu_millis END,
		                  ledger_memory_bytes = CASE WHEN j.ledger_since IS NULL THEN k.mem ELSE j.ledger_memory_bytes END,
		                  ledger_pods = CASE WHEN j.ledger_since IS NULL THEN k.pods ELSE j.ledger_pods END
		FROM unnest($1::text[], $2::uuid[], $3::jsonb[], $4::text[], $5::timestamptz[], $7::text[],
		            $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::text[])
		     AS k(tenant_id, uid, status, state, start_time, model, gpus, cpu, mem, pods, cluster)
		WHERE j.tenant_id = k.tenant_id AND j.uid = k.uid`,
		tenants, uids, aStatuses, aStates, aStarts, now, aModels,
		aDemands[job.GPU], aDemands[job.CPU], aDemands[job.Memory], aDemands[job.Pods], aClusters)
	return out
}

// withResults puts the results of the jobs' dependencies (read: by key;
// a dependency not there was deleted) into their statuses.
func withResults(jobs []job.Job, read map[JobKey]job.Job) {
	for i := range jobs {
		j := &jobs[i]
		if len(j.Spec.DependsOn) == 0 {
			continue
		}
		j.Status.Dependencies = make([]job.DependencyResult, 0, len(j.Spec.DependsOn))
		for _, d := range j.Spec.DependsOn {
			dep, ok := read[JobKey{Tenant: j.Tenant, UID: d.UID}]
			if !ok {
				dep = job.Job{Status: job.Status{Reason: job.ReasonDeleted}}
			}
			j.Status.Dependencies = append(j.Status.Dependencies, job.ResultOf(d, dep))
		}
	}
}

// dependencyFailed queues the ends of the jobs read (still QUEUED,
// pending and uncancelled) a dependency of which can never be met, and
// their events.
func dependencyFailed(b *pgx.Batch, writes []DependencyFailWrite, read map[JobKey]job.Job, now time.Time, jobs map[JobKey]job.Job, events map[JobKey][]job.Event) []JobKey {
	var (
		out              []JobKey
		fTenants, states []string
		fUIDs            []uuid.UUID
		statuses         []job.Status
	)
	for _, f := range writes {
		j, ok := read[f.Key]
		u, err := uuid.Parse(f.Key.UID)
		if !ok || err != nil || slices.Contains(out, f.Key) {
			continue
		}
		st, drafts := job.FailDependency(j.Status, f.Cancel, f.Message, now)
		j.Status = st
		jobs[f.Key] = j
		events[f.Key] = append(events[f.Key], eventsOf(drafts)...)
		out = append(out, f.Key)
		fTenants, fUIDs = append(fTenants, f.Key.Tenant), append(fUIDs, u)
		states, statuses = append(states, string(st.State)), append(statuses, st)
	}
	if len(out) > 0 {
		// As a cancel of a job that never started: final and inactive at once.
		b.Queue(`
			UPDATE jobs j SET state = k.state, status = k.status, finish_time = $5, update_time = $5,
			                  active = false, version = j.version + 1
			FROM unnest($1::text[], $2::uuid[], $3::text[], $4::jsonb[]) AS k(tenant_id, uid, state, status)
			WHERE j.tenant_id = k.tenant_id AND j.uid = k.uid`, fTenants, fUIDs, states, statuses, now)
	}
	return out
}

// preempted queues the preemption marks of the victims read (the others
// ended or are stopping meanwhile) and their Preempting events.
func preempted(b *pgx.Batch, writes []PreemptWrite, read map[JobKey]job.Job, now time.Time, jobs map[JobKey]job.Job, events map[JobKey][]job.Event) []JobKey {
	var (
		out            []JobKey
		fors, messages []string
		pTenants       []string
		forTenants     []string
		pUIDs          []uuid.UUID
	)
	for _, pw := range writes {
		j, ok := read[pw.Victim]
		u, err := uuid.Parse(pw.Victim.UID) // read's keys come from rows: valid
		if !ok || err != nil || slices.Contains(out, pw.Victim) {
			continue
		}
		jobs[pw.Victim] = j
		events[pw.Victim] = append(events[pw.Victim], job.Event{Type: job.EventWarning, Reason: job.ReasonPreempting, Message: pw.Message})
		out = append(out, pw.Victim)
		pTenants, pUIDs = append(pTenants, pw.Victim.Tenant), append(pUIDs, u)
		fors, messages = append(fors, pw.For), append(messages, pw.Message)
		forTenants = append(forTenants, cmp.Or(pw.ForTenant, pw.Victim.Tenant))
	}
	if len(out) > 0 {
		b.Queue(`
			UPDATE jobs j SET preempt_for = k.preempt_for::uuid, preemptor_tenant = k.preemptor_tenant, preempt_message = k.message,
			                  version = j.version + 1, update_time = $5
			FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $6::text[]) AS k(tenant_id, uid, preempt_for, message, preemptor_tenant)
			WHERE j.tenant_id = k.tenant_id AND j.uid = k.uid`, pTenants, pUIDs, fors, messages, now, forTenants)
	}
	return out
}

// waited queues the wait reasons that changed, in the jobs' statuses (the
// Admitted condition), and a Waiting event for each; jobs admitted,
// cancelled or gone meanwhile (not read) are skipped.
func waited(b *pgx.Batch, waits []WaitWrite, read map[JobKey]job.Job, now time.Time, jobs map[JobKey]job.Job, events map[JobKey][]job.Event) {
	var (
		wTenants, wReasons []string
		wUIDs              []uuid.UUID
		wStatuses          []job.Status
	)
	for _, w := range waits {
		j, ok := read[w.Key]
		u, err := uuid.Parse(w.Key.UID) // read's keys come from rows: valid
		if !ok || err != nil {
			continue
		}
		st, drafts := job.Wait(j.Status, w.Reason, w.Message, now)
		j.Status = st
		jobs[w.Key] = j
		events[w.Key] = append(events[w.Key], eventsOf(drafts)...)
		wTenants, wUIDs = append(wTenants, w.Key.Tenant), append(wUIDs, u)
		wReasons, wStatuses = append(wReasons, string(w.Reason)), append(wStatuses, st)
	}
	if len(wUIDs) == 0 {
		return
	}
	b.Queue(`
		UPDATE jobs j SET wait_reason = k.reason, status = k.status, version = j.version + 1, update_time = $5
		FROM unnest($1::text[], $2::uuid[], $3::text[], $4::jsonb[]) AS k(tenant_id, uid, reason, status)
		WHERE j.tenant_id = k.tenant_id AND j.uid = k.uid`, wTenants, wUIDs, wReasons, wStatuses, now)
}

// eventsOf are drafts as events to write.
func eventsOf(drafts []job.EventDraft) []job.Event {
	out := make([]job.Event, len(drafts))
	for i, d := range drafts {
		out[i] = job.Event{Type: d.Type, Reason: d.Reason, Message: d.Message}
	}
	return out
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
