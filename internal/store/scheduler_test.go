//go:build integration

package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

func TestSchedulerLease(t *testing.T) {
	b := setup(t)
	l1, ok, err := b.store.SchedulerLeaseAcquire(b.ctx, "s1", 2*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	_, ok, err = b.store.SchedulerLeaseAcquire(b.ctx, "s2", time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "held by s1")

	again, ok, err := b.store.SchedulerLeaseAcquire(b.ctx, "s1", 2*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, l1.Epoch, again.Epoch, "a renewal keeps the epoch")

	// s1 stops renewing; s2 takes over with a new epoch, and s1's writes fail.
	var l2 SchedulerLease
	require.Eventually(t, func() bool {
		l2, ok, err = b.store.SchedulerLeaseAcquire(b.ctx, "s2", time.Minute)
		require.NoError(t, err)
		return ok
	}, 10*time.Second, 50*time.Millisecond)
	require.Greater(t, l2.Epoch, l1.Epoch)
	_, err = b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: l1})
	require.ErrorIs(t, err, ErrLeaseLost)
	// The stale commit read and locked its job before finding the lease
	// lost (one round trip, Store.pipelined): it rolled back, admitted
	// nothing, and left neither the row locked nor a connection inside a
	// transaction.
	b.tenantCreate(t, "a")
	stale := b.jobCreate(t, "a", "stale", 1)
	_, err = b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: l1, Admit: []JobKey{keyOf(stale)}})
	require.ErrorIs(t, err, ErrLeaseLost)
	w, err := b.store.JobLoad(b.ctx, "a", stale.UID)
	require.NoError(t, err)
	require.False(t, w.Admitted)
	require.Zero(t, b.count(t, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state LIKE 'idle in transaction%'`))
	locked, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	_, err = b.store.JobCancel(locked, "a", "stale")
	require.NoError(t, err, "the row is not locked")
	require.ErrorIs(t, b.store.QueuePublish(b.ctx, l1, map[string]map[string]job.QueueInfo{"a": {}}), ErrLeaseLost)
	_, err = b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: l2})
	require.NoError(t, err)

	// A release lets another take over at once.
	require.NoError(t, b.store.SchedulerLeaseRelease(b.ctx, l2))
	l3, ok, err := b.store.SchedulerLeaseAcquire(b.ctx, "s1", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, l3.Epoch, l2.Epoch)
}

func TestSchedulerCommit(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	pending := b.jobCreate(t, "a", "pending", 1)
	cancelled := b.jobCreate(t, "a", "cancelled", 1)
	running := b.jobInState(t, "a", "running", job.Running, true)
	urgent := b.jobCreate(t, "a", "urgent", 1)

	read, err := b.store.SchedulerRead(b.ctx, 0)
	require.NoError(t, err)
	require.Len(t, read.Jobs, 4)
	for _, j := range read.Jobs {
		require.NotNil(t, j.Spec, "every job's spec above seq 0")
	}
	specs, err := b.store.JobSpecs(b.ctx, []JobKey{keyOf(pending)})
	require.NoError(t, err)
	require.Equal(t, int32(1), specs[keyOf(pending)].Replicas[0].Resources.GPU)
	read, err = b.store.SchedulerRead(b.ctx, read.Jobs[2].Seq)
	require.NoError(t, err)
	for _, j := range read.Jobs {
		require.Equal(t, j.Seq > read.Jobs[2].Seq, j.Spec != nil, "specs only above the seq asked for")
	}

	// A cancel commits between the snapshot and the commit.
	_, err = b.store.JobCancel(b.ctx, "a", "cancelled")
	require.NoError(t, err)

	lease := b.lease(t)
	res, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{
		Lease: lease,
		Admit: []JobKey{keyOf(pending), keyOf(cancelled)},
		Preempt: []PreemptWrite{{Victim: keyOf(running.Job), For: urgent.UID,
			Message: `preempted by job "urgent" (priority 900)`}},
		Waits: []WaitWrite{{Key: keyOf(urgent), Reason: job.WaitCapacity, Message: "needs 8 GPUs, 0 free"}},
	})
	require.NoError(t, err)
	require.Len(t, res.Admitted, 1, "the cancelled job is not admitted")
	require.Equal(t, keyOf(pending), res.Admitted[0].Key)
	require.Equal(t, []JobKey{keyOf(running.Job)}, res.Preempted)

	w, err := b.store.JobLoad(b.ctx, "a", pending.UID)
	require.NoError(t, err)
	require.True(t, w.Admitted)
	// Admission writes the status the job starts with (job.Admit) and its
	// Admitted event, in the state and start_time columns too.
	require.Equal(t, job.Starting, w.Job.Status.State)
	require.NotNil(t, w.Job.Status.StartTime)
	require.Len(t, w.Job.Status.Replicas, 2, "a Pending entry per replica")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE uid = $1 AND state = 'STARTING' AND start_time IS NOT NULL`, pending.UID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM job_events WHERE job_uid = $1 AND reason = 'Admitted' AND state = 'STARTING'`, pending.UID))
	require.Equal(t, []string{"pending"}, b.claimAll(t, "w"), "admitted jobs are claimable")

	v, err := b.store.JobLoad(b.ctx, "a", running.Job.UID)
	require.NoError(t, err)
	require.Equal(t, urgent.UID, v.PreemptFor)
	require.Equal(t, `preempted by job "urgent" (priority 900)`, v.PreemptMessage)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM job_events WHERE job_uid = $1 AND reason = 'Preempting'`, running.Job.UID))

	u, err := b.store.JobLoad(b.ctx, "a", urgent.UID)
	require.NoError(t, err)
	require.Equal(t, job.WaitCapacity, u.WaitReason)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM job_events WHERE job_uid = $1 AND reason = 'Waiting'`, urgent.UID))

	// The same reason again: the message moves, no event.
	_, err = b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: lease,
		Waits: []WaitWrite{{Key: keyOf(urgent), Reason: job.WaitCapacity, Message: "needs 8 GPUs, 2 free"}}})
	require.NoError(t, err)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM job_events WHERE job_uid = $1 AND reason = 'Waiting'`, urgent.UID))

	// A job already stopping is not preempted twice.
	res, err = b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: lease,
		Preempt: []PreemptWrite{{Victim: keyOf(running.Job), For: pending.UID, Message: "again"}}})
	require.NoError(t, err)
	require.Empty(t, res.Preempted)
}

// A worker's requeue makes the job pending again: unadmitted, unowned, not
// claimable, its preemption cleared and who preempted it recorded.
// A job requeued right after a replica's end was recorded (before a pass
// decided on it) is admitted as it is: the restart or end that admission
// would bring is the worker's decision, in a fenced save (job.Admit).
func TestSchedulerCommitLeavesAPendingDecisionToTheWorker(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	j := b.jobCreate(t, "a", "ended", 1)
	_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET status = jsonb_set(status, '{replicas}',
		'[{"type": "worker", "index": 0, "pod": "ended-worker-0", "state": "FAILED", "restarts": 0,
		   "lastTermination": {"attempt": 0, "exitCode": 137, "reason": "OOMKilled", "finishTime": "2026-12-05T00:00:00Z"}}]')
		WHERE uid = $1`, j.UID)
	require.NoError(t, err)

	res, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: b.lease(t), Admit: []JobKey{keyOf(j)}})
	require.NoError(t, err)
	require.Len(t, res.Admitted, 1)
	w, err := b.store.JobLoad(b.ctx, "a", j.UID)
	require.NoError(t, err)
	require.True(t, w.Admitted)
	require.Equal(t, job.Queued, w.Job.Status.State, "admitted as it is")
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM job_events WHERE job_uid = $1 AND reason = 'Admitted'`, j.UID))
	require.Equal(t, []string{"ended"}, b.claimAll(t, "w"), "claimable")
}

func TestJobSaveRequeue(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	running := b.jobInState(t, "a", "running", job.Running, true)
	urgent := b.jobCreate(t, "a", "urgent", 1)
	st := running.Job.Status
	st.State = job.Queued
	_, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "setup-worker", Tenant: "a", UID: running.Job.UID,
		Version: running.Version, Status: st, Requeue: &Requeue{PreemptedBy: urgent.UID},
		Events: []job.Event{{Type: job.EventWarning, Reason: job.ReasonPreempted}}})
	require.NoError(t, err)
	w, err := b.store.JobLoad(b.ctx, "a", running.Job.UID)
	require.NoError(t, err)
	require.False(t, w.Admitted)
	require.Empty(t, w.WorkerID)
	require.True(t, w.Active)
	require.Empty(t, b.claimAll(t, "w"))
	read, err := b.store.SchedulerRead(b.ctx, 0)
	require.NoError(t, err)
	for _, j := range read.Jobs {
		if j.Key.UID == running.Job.UID {
			require.Equal(t, urgent.UID, j.PreemptedBy)
			require.False(t, j.Admitted)
			require.True(t, j.NotBefore.IsZero())
		}
	}

	// An unschedulable requeue backs off.
	b.admit(t, keyOf(running.Job))
	w = b.own(t, "w2", keyOf(running.Job))
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w2", Tenant: "a", UID: running.Job.UID,
		Version: w.Version, Status: st, Requeue: &Requeue{After: time.Hour}})
	require.NoError(t, err)
	read, err = b.store.SchedulerRead(b.ctx, 0)
	require.NoError(t, err)
	for _, j := range read.Jobs {
		if j.Key.UID == running.Job.UID {
			require.WithinDuration(t, time.Now().Add(time.Hour), j.NotBefore, time.Minute)
			require.Empty(t, j.PreemptedBy)
		}
	}
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w2", Tenant: "a", UID: running.Job.UID,
		Version: w.Version + 1, Status: job.Status{State: job.Running}, Requeue: &Requeue{}})
	require.ErrorIs(t, err, ErrFailedPrecondition, "a requeued job is QUEUED")
}

func TestQueuePublish(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	lease := b.lease(t)
	eta := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	info := job.QueueInfo{Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 2, WaitingFor: []string{"nvidia.com/gpu"},
		EstimatedStart: &eta, EstimateBasis: job.ETARunTimes}
	require.NoError(t, b.store.QueuePublish(b.ctx, lease, map[string]map[string]job.QueueInfo{
		"a": {"uid-1": info}, "gone": {"uid-2": info},
	}))
	got, at, err := b.store.QueueGet(b.ctx, "a")
	require.NoError(t, err)
	require.False(t, at.IsZero())
	require.Equal(t, map[string]job.QueueInfo{"uid-1": info}, got)
	got, _, err = b.store.QueueGet(b.ctx, "b")
	require.NoError(t, err)
	require.Empty(t, got, "another tenant's queue is its own")

	require.NoError(t, b.store.QueuePublish(b.ctx, lease, map[string]map[string]job.QueueInfo{"a": {}}))
	got, at, err = b.store.QueueGet(b.ctx, "a")
	require.NoError(t, err)
	require.Empty(t, got)
	require.True(t, at.IsZero())
}

func TestTenantRunTimes(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	for i, minutes := range []int{10, 20, 60} {
		j := b.jobCreate(t, "a", "j"+string(rune('0'+i)), 0)
		_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET state = 'SUCCEEDED', active = false,
			start_time = now() - $2 * interval '1 minute', finish_time = now() WHERE uid = $1`, j.UID, minutes)
		require.NoError(t, err)
	}
	got, err := b.store.TenantRunTimes(b.ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]RunTime{"a": {Median: 20 * time.Minute, Jobs: 3}}, got)
}

// Resources are compared in one place, the scheduler (job.Vector, listed
// once in internal/job): the schema keeps no per-resource column, index or
// predicate that would have to agree with that list. The usage ledger's
// open span (ledger_*, migration 000025) is the exception that proves it:
// the ledger's own fixed resources (usage_intervals has the same columns),
// a record of what an admission counted, compared by nothing.
func TestNoResourceColumnsOrPredicates(t *testing.T) {
	b := setup(t)
	require.Zero(t, b.count(t, `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'jobs' AND column_name NOT LIKE 'ledger\_%'
		  AND (column_name LIKE 'demand%' OR column_name LIKE '%gpu%' OR column_name LIKE '%cpu%' OR column_name LIKE '%memory%')`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM pg_indexes
		WHERE schemaname = current_schema() AND tablename = 'jobs' AND (indexdef ILIKE '%demand%' OR indexdef ILIKE '%gpu%')`))
	for _, src := range []string{sqlJobClaim, sqlSchedulerJobs} {
		for _, word := range []string{"demand", "gpu", "cpu", "memory"} {
			require.NotContains(t, strings.ToLower(src), word)
		}
	}
}

// A scheduler's connection runs its commit's statements thousands of
// times, and from a prepared statement's sixth run on Postgres may plan it
// generically, for ten keys: a commit of 5,000 admissions then took 2.2 s
// where it took 0.35 (sqlCustomPlans). Here every connection plans
// generically from the first run, and a commit costs what it costs on a
// connection that plans for its arguments.
func TestSchedulerCommitStaysLinear(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "acme")
	cfg, err := pgxpool.ParseConfig(b.url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	genericPool, err := pgxpool.NewWithConfig(b.ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(genericPool.Close)
	lease := b.lease(t)

	const n = 5000
	commit := func(st *Store, batch int) time.Duration {
		t.Helper()
		rows, err := b.pool.Query(b.ctx, `
			INSERT INTO jobs (tenant_id, uid, name, spec, status, state, active, claim_after, queued_at, create_time, update_time)
			SELECT 'acme', gen_random_uuid(), 'b' || $1::int || '-' || g,
			       '{"replicas":[{"type":"WORKER","count":1,"image":"x"}],"runPolicy":{"backoffLimit":3}}',
			       '{"state":"QUEUED"}', 'QUEUED', true, 'infinity', now(), now(), now()
			FROM generate_series(1, $2::int) g
			RETURNING tenant_id, uid::text`, batch, n)
		require.NoError(t, err)
		keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[JobKey])
		require.NoError(t, err)
		start := time.Now()
		res, err := st.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: lease, Admit: keys})
		took := time.Since(start)
		require.NoError(t, err)
		require.Len(t, res.Admitted, n)
		return took
	}
	custom := commit(b.store, 0)
	generic := commit(New(genericPool), 1)
	t.Logf("%d admissions: %s planned for them, %s on connections that plan generically", n, custom, generic)
	require.Less(t, generic, 3*custom, "the commit's cost does not depend on how its connection plans")
}
