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

// GPU utilisation per job (issue 44; migration 000017): the figures the
// GPU poller (internal/gpuutil, on the process holding the scheduler
// lease) reads from Prometheus, kept per replica so that they outlive
// Prometheus's retention.
//
//	GPUJobsRunning ──► the poller reads (sampled_to, t] of each job's pods
//	GPUFiguresRecord ─► adds the window's sums to job_gpu_replicas and its
//	                    GPU-seconds used and held idle to usage_hourly, and
//	                    moves sampled_to to t, fenced on the sampled_to it read;
//	                    sets or clears the IdleGPUs condition (an event, a
//	                    new version: the job's worker reloads it)
//	GPUFiguresGet ────► GetJob's figures

// GPUJob is a running job whose GPU figures the poller reads.
type GPUJob struct {
	Tenant, UID, Name, Namespace string
	Spec                         job.Spec
	// Scheduling is the tenant's (its idle settings).
	Scheduling tenant.Scheduling
	// StartTime is when the job started running (its pods were created);
	// the poller reads from there the first time.
	StartTime time.Time
	// SampledTo: samples up to it are counted; zero before the first poll.
	SampledTo time.Time
	// IdleSince is set while the IdleGPUs condition holds.
	IdleSince time.Time
	// Replicas are the figures so far.
	Replicas []job.GPUFigures
}

// GPUJobsRunning lists the running jobs (RUNNING or RESTARTING, admitted,
// not deleted) of every tenant with their figures so far, in tenant and
// uid order.
func (s *Store) GPUJobsRunning(ctx context.Context) ([]GPUJob, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT j.tenant_id, j.uid::text, j.name, t.namespace, j.spec, t.scheduling,
		       coalesce((j.status->>'startTime')::timestamptz, j.update_time),
		       g.sampled_to, g.idle_since
		FROM jobs j
		JOIN tenants t ON t.id = j.tenant_id
		LEFT JOIN job_gpu g ON g.tenant_id = j.tenant_id AND g.job_uid = j.uid
		WHERE j.state IN ('RUNNING', 'RESTARTING') AND j.admitted AND NOT j.deleted
		ORDER BY j.tenant_id, j.uid`)
	if err != nil {
		return nil, translate(err, "running jobs")
	}
	var (
		out  []GPUJob
		byID = map[JobKey]int{}
	)
	for rows.Next() {
		var (
			j                 GPUJob
			sampled, idleFrom *time.Time
		)
		if err := rows.Scan(&j.Tenant, &j.UID, &j.Name, &j.Namespace, &j.Spec, &j.Scheduling, &j.StartTime, &sampled, &idleFrom); err != nil {
			rows.Close()
			return nil, translate(err, "running jobs")
		}
		if sampled != nil {
			j.SampledTo = sampled.UTC()
		}
		if idleFrom != nil {
			j.IdleSince = idleFrom.UTC()
		}
		j.StartTime = j.StartTime.UTC()
		byID[JobKey{Tenant: j.Tenant, UID: j.UID}] = len(out)
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "running jobs")
	}
	if len(out) == 0 {
		return out, nil
	}
	figs, err := s.gpuFigures(ctx, `
		SELECT `+gpuReplicaCols+` FROM job_gpu_replicas r
		JOIN jobs j ON j.tenant_id = r.tenant_id AND j.uid = r.job_uid
		WHERE j.state IN ('RUNNING', 'RESTARTING') AND j.admitted AND NOT j.deleted
		ORDER BY r.tenant_id, r.job_uid, r.replica`)
	if err != nil {
		return nil, err
	}
	for k, f := range figs {
		if i, ok := byID[k]; ok {
			out[i].Replicas = f
		}
	}
	return out, nil
}

const gpuReplicaCols = `r.tenant_id, r.job_uid::text, r.replica, r.gpu_uuids, r.samples, r.util_sum, r.util_hist,
	r.fb_samples, r.fb_sum, r.fb_max, r.first_sample, r.last_sample, r.last_busy`

func (s *Store) gpuFigures(ctx context.Context, sql string, args ...any) (map[JobKey][]job.GPUFigures, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err, "GPU figures")
	}
	defer rows.Close()
	out := map[JobKey][]job.GPUFigures{}
	for rows.Next() {
		var (
			k           JobKey
			f           job.GPUFigures
			hist        []int64
			first, last *time.Time
			busy        *time.Time
		)
		if err := rows.Scan(&k.Tenant, &k.UID, &f.Replica, &f.GPUs, &f.Samples, &f.UtilSum, &hist,
			&f.FBSamples, &f.FBSum, &f.FBMax, &first, &last, &busy); err != nil {
			return nil, translate(err, "GPU figures")
		}
		copy(f.UtilHist[:], hist)
		for dst, src := range map[*time.Time]*time.Time{&f.FirstSample: first, &f.LastSample: last, &f.LastBusy: busy} {
			if src != nil {
				*dst = src.UTC()
			}
		}
		out[k] = append(out[k], f)
	}
	return out, translate(rows.Err(), "GPU figures")
}

// GPUFiguresGet returns the figures of the tenant's job uid, by replica
// name (none before the first samples).
func (s *Store) GPUFiguresGet(ctx context.Context, tenantID, uid string) ([]job.GPUFigures, error) {
	if _, err := uuid.Parse(uid); err != nil {
		return nil, nil
	}
	figs, err := s.gpuFigures(ctx, `SELECT `+gpuReplicaCols+` FROM job_gpu_replicas r
		WHERE r.tenant_id = $1 AND r.job_uid = $2 ORDER BY r.replica`, tenantID, uid)
	if err != nil {
		return nil, err
	}
	return figs[JobKey{Tenant: tenantID, UID: uid}], nil
}

// GPURecord is what one poll read of one job.
type GPURecord struct {
	Tenant, UID string
	// From is the SampledTo the poll read (zero: none yet); To is where
	// the window ends. Replicas hold the samples of (Start, To], where
	// Start is From or, the first time, the job's start.
	From, Start, To time.Time
	Replicas        []job.GPUFigures
	// Idle is the idle rule's verdict at To: a condition and an event when
	// it differs from the job's IdleSince.
	Idle GPUIdle
	// Measured says the window's GPU-seconds used are known: its GPUs
	// times its seconds times UsedPercent go to the usage ledger.
	Measured    bool
	UsedPercent float64
}

// GPUIdle is the idle rule's verdict.
type GPUIdle struct {
	Idle bool
	// Since: when the job's GPUs were last busy (Idle only).
	Since time.Time
	// Message for the condition and the event.
	Message string
}

// ErrGPUWindowMoved: another poll counted the window first (GPUFiguresRecord's fence).
var ErrGPUWindowMoved = errors.New("the job's GPU samples were counted by another poll")

// GPUFiguresRecord adds a poll's window to the job's figures and moves
// its sampled_to to r.To, in one transaction fenced on r.From: a window
// is counted once. When the idle verdict changes, the job (if still
// running) gets the IdleGPUs condition set or cleared and an event
// (IdleGPUs, a webhook topic; GPUsActive); changed is true then.
func (s *Store) GPUFiguresRecord(ctx context.Context, r GPURecord) (changed bool, err error) {
	what := fmt.Sprintf("GPU figures of job %s in tenant %q", r.UID, r.Tenant)
	now := s.timestamp()
	err = s.inTx(ctx, func(tx *txn) error {
		changed = false
		var prevIdle *time.Time
		var tag string
		if r.From.IsZero() {
			err := tx.QueryRow(ctx, `
				INSERT INTO job_gpu (tenant_id, job_uid, sampled_to, update_time) VALUES ($1, $2, $3, $4)
				ON CONFLICT DO NOTHING RETURNING 'inserted'`, r.Tenant, r.UID, r.To, now).Scan(&tag)
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrGPUWindowMoved
			}
			if err != nil {
				return err
			}
		} else {
			var at time.Time
			err := tx.QueryRow(ctx, `SELECT sampled_to, idle_since FROM job_gpu WHERE tenant_id = $1 AND job_uid = $2 FOR UPDATE`,
				r.Tenant, r.UID).Scan(&at, &prevIdle)
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && !at.Equal(r.From)) {
				return ErrGPUWindowMoved
			}
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE job_gpu SET sampled_to = $3, update_time = $4 WHERE tenant_id = $1 AND job_uid = $2`,
				r.Tenant, r.UID, r.To, now); err != nil {
				return err
			}
		}
		for _, f := range r.Replicas {
			if err := gpuReplicaAdd(ctx, tx, r.Tenant, r.UID, f, now); err != nil {
				return err
			}
		}
		if err := gpuLedgerAdd(ctx, tx, r, prevIdle != nil); err != nil {
			return err
		}
		if r.Idle.Idle == (prevIdle != nil) {
			return nil
		}
		var since any
		if r.Idle.Idle {
			since = r.Idle.Since
		}
		if _, err := tx.Exec(ctx, `UPDATE job_gpu SET idle_since = $3 WHERE tenant_id = $1 AND job_uid = $2`,
			r.Tenant, r.UID, since); err != nil {
			return err
		}
		c, err := gpuIdleCondition(ctx, tx, r, now)
		changed = c
		return err
	})
	if err != nil {
		if errors.Is(err, ErrGPUWindowMoved) {
			return false, err
		}
		return false, translate(err, what)
	}
	return changed, nil
}

func gpuReplicaAdd(ctx context.Context, tx *txn, tenantID, uid string, f job.GPUFigures, now time.Time) error {
	if f.GPUs == nil {
		f.GPUs = []string{}
	}
	opt := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO job_gpu_replicas AS r (tenant_id, job_uid, replica, gpu_uuids, samples, util_sum, util_hist,
		                                   fb_samples, fb_sum, fb_max, first_sample, last_sample, last_busy, update_time)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT (tenant_id, job_uid, replica) DO UPDATE SET
		    gpu_uuids = ARRAY(SELECT DISTINCT u FROM unnest(r.gpu_uuids || excluded.gpu_uuids) u ORDER BY u),
		    samples = r.samples + excluded.samples,
		    util_sum = r.util_sum + excluded.util_sum,
		    util_hist = ARRAY(SELECT a + b FROM unnest(r.util_hist, excluded.util_hist) AS h(a, b)),
		    fb_samples = r.fb_samples + excluded.fb_samples,
		    fb_sum = r.fb_sum + excluded.fb_sum,
		    fb_max = greatest(r.fb_max, excluded.fb_max),
		    first_sample = least(r.first_sample, excluded.first_sample),
		    last_sample = greatest(r.last_sample, excluded.last_sample),
		    last_busy = greatest(r.last_busy, excluded.last_busy),
		    update_time = excluded.update_time`,
		tenantID, uid, f.Replica, f.GPUs, f.Samples, f.UtilSum, f.UtilHist[:],
		f.FBSamples, f.FBSum, f.FBMax, opt(f.FirstSample), opt(f.LastSample), opt(f.LastBusy), now)
	return err
}

// gpuLedgerAdd adds the window's GPU-seconds used and held idle to the
// usage ledger's hours (usage_hourly.gpu_used_seconds and
// gpu_idle_seconds): the job's GPUs, as its open span counts them, times
// the window's seconds since the span opened (a job requeued and admitted
// again counts none of its wait) split at UTC hours; used times
// r.UsedPercent when the window is Measured, idle in full when the job
// was flagged idle as the window began (flagged: the verdict, judged at
// window ends, held the whole window).
func gpuLedgerAdd(ctx context.Context, tx *txn, r GPURecord, flagged bool) error {
	usedPercent := 0.0
	if r.Measured {
		usedPercent = r.UsedPercent
	}
	idle := 0.0
	if flagged {
		idle = 1
	}
	if (usedPercent == 0 && idle == 0) || !r.To.After(r.Start) {
		return nil
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO usage_hourly AS u (tenant_id, hour, creator, labels, gpu_used_seconds, gpu_idle_seconds)
		SELECT v.tenant_id, s.hour, v.creator, v.labels, v.ledger_gpus * s.seconds * $5 / 100, v.ledger_gpus * s.seconds * $6
		FROM jobs v, trainyard_usage_hours(greatest($3, v.ledger_since), $4) s
		WHERE v.tenant_id = $1 AND v.uid = $2 AND v.ledger_since IS NOT NULL AND v.ledger_gpus > 0
		ORDER BY 1, 2, 3, 4
		ON CONFLICT (tenant_id, hour, creator, labels) DO UPDATE SET
		    gpu_used_seconds = u.gpu_used_seconds + excluded.gpu_used_seconds,
		    gpu_idle_seconds = u.gpu_idle_seconds + excluded.gpu_idle_seconds`,
		r.Tenant, r.UID, r.Start, r.To, usedPercent, idle)
	return err
}

// GPUIdleStop cancels a running job for its idle GPUs, as JobCancel
// cancels a running one (its worker stops its pods gracefully and ends
// it CANCELLED), with an IdleGPUsStopped event saying why. A job that has
// ended or is being cancelled already is left alone (false).
func (s *Store) GPUIdleStop(ctx context.Context, tenantID, uid, message string) (bool, error) {
	stopped := false
	err := s.inTx(ctx, func(tx *txn) error {
		w, _, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs j
			WHERE j.tenant_id = $1 AND j.uid = $2 AND NOT j.deleted FOR UPDATE`, tenantID, uid))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		st := w.Job.Status
		if (st.State != job.Running && st.State != job.Restarting) || st.CancelRequested {
			return nil
		}
		now := s.timestamp()
		if _, err := tx.Exec(ctx, `UPDATE jobs SET cancel_requested = true, update_time = $3, version = version + 1
			WHERE tenant_id = $1 AND uid = $2`, tenantID, uid, now); err != nil {
			return err
		}
		w.Job.Status.CancelRequested = true
		ev := job.Event{Type: job.EventWarning, Reason: job.ReasonIdleGPUsStopped, Message: message, State: st.State, CreateTime: now}
		if err := eventsInsert(ctx, tx, w.Job, []job.Event{ev}, now); err != nil {
			return err
		}
		tx.notify(ChannelJobs, tenantID+"/"+uid)
		stopped = true
		return nil
	})
	return stopped, translate(err, fmt.Sprintf("job %s in tenant %q", uid, tenantID))
}

// gpuIdleCondition sets (or clears) the IdleGPUs condition of the job, if
// it is still running, with an event; a new version makes its worker's
// next save reload it.
func gpuIdleCondition(ctx context.Context, tx *txn, r GPURecord, now time.Time) (bool, error) {
	w, _, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs j
		WHERE j.tenant_id = $1 AND j.uid = $2 AND NOT j.deleted FOR UPDATE`, r.Tenant, r.UID))
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	st := w.Job.Status
	if st.State != job.Running && st.State != job.Restarting {
		return false, nil
	}
	c := job.Condition{Type: job.CondIdleGPUs, Status: r.Idle.Idle, Reason: job.ReasonIdleGPUs, Message: r.Idle.Message, LastTransitionTime: now}
	ev := job.Event{Type: job.EventWarning, Reason: job.ReasonIdleGPUs, Message: r.Idle.Message, State: st.State, CreateTime: now}
	if !r.Idle.Idle {
		c.Reason, ev.Type, ev.Reason = job.ReasonGPUsActive, job.EventNormal, job.ReasonGPUsActive
	}
	st.Conditions = conditionSet(st.Conditions, c)
	if _, err := tx.Exec(ctx, `UPDATE jobs SET status = $3, update_time = $4, version = version + 1
		WHERE tenant_id = $1 AND uid = $2`, r.Tenant, r.UID, st, now); err != nil {
		return false, err
	}
	w.Job.Status = st
	if err := eventsInsert(ctx, tx, w.Job, []job.Event{ev}, now); err != nil {
		return false, err
	}
	tx.notify(ChannelJobs, r.Tenant+"/"+r.UID)
	return true, nil
}
