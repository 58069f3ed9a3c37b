//go:build integration

package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/webhook"
)

// TestGPUFiguresRecord: a window is counted once (the sampled_to fence),
// sums add in place, GPU-seconds used reach the ledger, and an idle
// verdict sets the IdleGPUs condition with an event that the webhook
// outbox carries (job.idle_gpus); the worker's stale save then fails and
// its reload keeps the condition.
func TestGPUFiguresRecord(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.webhookCreate(t, "a", "idle", []string{webhook.TopicJobIdleGPUs}, nil)
	w := b.jobInState(t, "a", "j", job.Running, true)
	b.exec(t, `UPDATE jobs SET status = status || jsonb_build_object('startTime', now() - interval '1 hour') WHERE uid = $1`, w.Job.UID)
	// Admitted an hour ago too (the ledger's span).
	b.exec(t, `UPDATE jobs SET ledger_since = (status->>'startTime')::timestamptz, ledger_rolled = NULL WHERE uid = $1`, w.Job.UID)

	jobs, err := b.store.GPUJobsRunning(b.ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, "ty-a", jobs[0].Namespace)
	require.True(t, jobs[0].SampledTo.IsZero())
	start := jobs[0].StartTime
	t1, t2 := start.Add(30*time.Minute), start.Add(60*time.Minute)

	var f job.GPUFigures
	f.Replica = "worker-0"
	f.AddGPU("GPU-a")
	f.AddUtil(50, t1.Add(-time.Second), true)
	f.AddUtil(0, t1, false)
	f.AddFB(100, t1)
	rec := GPURecord{Tenant: "a", UID: w.Job.UID, Start: start, To: t1, Replicas: []job.GPUFigures{f}, Measured: true, UsedPercent: 25}
	changed, err := b.store.GPUFiguresRecord(b.ctx, rec)
	require.NoError(t, err)
	require.False(t, changed)
	_, err = b.store.GPUFiguresRecord(b.ctx, rec)
	require.ErrorIs(t, err, ErrGPUWindowMoved, "the same first window again")

	// The next window, idle: the condition, its event, the outbox.
	var g job.GPUFigures
	g.Replica = "worker-0"
	g.AddGPU("GPU-a")
	g.AddUtil(0, t2, false)
	rec2 := GPURecord{Tenant: "a", UID: w.Job.UID, From: t1, Start: t1, To: t2, Replicas: []job.GPUFigures{g},
		Idle: GPUIdle{Idle: true, Since: t1.Add(-time.Second), Message: "idle"}, Measured: true, UsedPercent: 0}
	changed, err = b.store.GPUFiguresRecord(b.ctx, rec2)
	require.NoError(t, err)
	require.True(t, changed)
	_, err = b.store.GPUFiguresRecord(b.ctx, rec2)
	require.ErrorIs(t, err, ErrGPUWindowMoved, "a second leader's late write of the same window")

	figs, err := b.store.GPUFiguresGet(b.ctx, "a", w.Job.UID)
	require.NoError(t, err)
	require.Len(t, figs, 1)
	require.EqualValues(t, 3, figs[0].Samples, "each window counted once")
	require.InDelta(t, 50.0/3, figs[0].MeanUtil(), 1e-9)
	require.Equal(t, []string{"GPU-a"}, figs[0].GPUs)
	require.Equal(t, t1.Add(-time.Second), figs[0].LastBusy)

	j, err := b.store.JobGet(b.ctx, "a", "j")
	require.NoError(t, err)
	var cond *job.Condition
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == job.CondIdleGPUs {
			cond = &j.Status.Conditions[i]
		}
	}
	require.NotNil(t, cond)
	require.True(t, cond.Status)
	require.Equal(t, []string{"job.idle_gpus j"}, b.outbox(t, "a", "idle"))

	// The worker's save from before the condition fails; reloaded, it keeps it.
	require.ErrorIs(t, b.save(t, &w, job.Running, "JobRunning"), ErrConflict)
	w, err = b.store.JobLoad(b.ctx, "a", w.Job.UID)
	require.NoError(t, err)
	require.NoError(t, b.save(t, &w, job.Running, "JobRunning"))
	j, err = b.store.JobGet(b.ctx, "a", "j")
	require.NoError(t, err)
	require.Contains(t, j.Status.Conditions, *cond)

	// The ledger: 2 GPUs (2 workers) × 30 min × 25 % = 900 GPU-seconds used, then none.
	rows, err := b.store.UsageQuery(b.ctx, UsageQueryParams{Tenant: "a", Start: start.Truncate(time.Hour), End: t2.Add(time.Hour), Step: StepHour})
	require.NoError(t, err)
	used := 0.0
	for _, r := range rows {
		used += r.GPUUsedSeconds
	}
	require.InDelta(t, 900, used, 1e-6)
}

// TestGPUIdleSeconds: the GPU-seconds a job holds while flagged IdleGPUs
// reach the ledger (usage_hourly.gpu_idle_seconds, migration 000026), from
// the window after the poll that set the flag through the window whose
// poll cleared it; a busy job's none. A window is counted once (a second
// leader's late write adds nothing), and a new leader that knows only what
// the store says continues where the last one stopped. By hour and by day
// (usage_daily has no idle column: the hours add it) the sums agree.
func TestGPUIdleSeconds(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	idle := b.jobInState(t, "a", "idle", job.Running, true)
	busy := b.jobInState(t, "a", "busy", job.Running, true)
	for _, uid := range []string{idle.Job.UID, busy.Job.UID} {
		b.exec(t, `UPDATE jobs SET status = status || jsonb_build_object('startTime', date_trunc('hour', now()) - interval '2 hours'),
			ledger_since = date_trunc('hour', now()) - interval '2 hours', ledger_rolled = NULL, labels = jsonb_build_object('name', name)
			WHERE uid = $1`, uid)
	}
	var (
		gpus    float64
		started time.Time
	)
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT ledger_gpus, ledger_since FROM jobs WHERE uid = $1`, idle.Job.UID).Scan(&gpus, &started))
	started = started.UTC()
	require.Positive(t, gpus)

	// record writes the next window of each job as the poller does, from
	// what the store says (GPUJobsRunning: a leader's view after a
	// fail-over is the same), with the verdict at its end.
	record := func(to time.Time, idleVerdict map[string]bool) {
		t.Helper()
		jobs, err := b.store.GPUJobsRunning(b.ctx)
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		for _, j := range jobs {
			start := j.SampledTo
			if start.IsZero() {
				start = j.StartTime
			}
			var f job.GPUFigures
			f.Replica = "worker-0"
			f.AddUtil(0, to, false)
			rec := GPURecord{Tenant: j.Tenant, UID: j.UID, From: j.SampledTo, Start: start, To: to, Replicas: []job.GPUFigures{f},
				Measured: true, UsedPercent: 1}
			if idleVerdict[j.Name] {
				rec.Idle = GPUIdle{Idle: true, Since: j.StartTime, Message: "idle"}
			}
			_, err := b.store.GPUFiguresRecord(b.ctx, rec)
			require.NoError(t, err)
			_, err = b.store.GPUFiguresRecord(b.ctx, rec)
			require.ErrorIs(t, err, ErrGPUWindowMoved, "a second leader's late write of the same window")
		}
	}
	t1, t2, t3, t4 := started.Add(10*time.Minute), started.Add(50*time.Minute), started.Add(75*time.Minute), started.Add(85*time.Minute)
	record(t1, map[string]bool{"idle": true}) // flagged at t1: (start, t1] was not
	record(t2, map[string]bool{"idle": true}) // (t1, t2] was
	record(t3, nil)                           // (t2, t3] was, across the hour; cleared at t3
	record(t4, nil)                           // (t3, t4] was not

	sums := func(step UsageStep, from, to time.Time) (idleSeconds, usedSeconds map[string]float64) {
		t.Helper()
		rows, err := b.store.UsageQuery(b.ctx, UsageQueryParams{Tenant: "a", Start: from, End: to, Step: step, ByLabels: []string{"name"}})
		require.NoError(t, err)
		idleSeconds, usedSeconds = map[string]float64{}, map[string]float64{}
		for _, r := range rows {
			idleSeconds[r.Labels[0]] += r.GPUIdleSeconds
			usedSeconds[r.Labels[0]] += r.GPUUsedSeconds
		}
		return idleSeconds, usedSeconds
	}
	want := gpus * t3.Sub(t1).Seconds()
	byHour, used := sums(StepHour, started, started.Add(3*time.Hour))
	require.InDelta(t, want, byHour["idle"], 1e-6, "the flagged windows' GPU-seconds, once")
	require.Zero(t, byHour["busy"], "a busy job holds no GPUs idle")
	require.InDelta(t, gpus*t4.Sub(started).Seconds()/100, used["idle"], 1e-6, "used counts every window, idle or not")
	byDay, _ := sums(StepDay, started.Truncate(24*time.Hour), started.Truncate(24*time.Hour).Add(48*time.Hour))
	require.InDelta(t, want, byDay["idle"], 1e-6)
	require.Zero(t, byDay["busy"])
}
