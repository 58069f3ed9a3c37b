//go:build integration

package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

func TestJobClaimConcurrentWorkers(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	const n = 60
	var keys []JobKey
	for i := range n {
		keys = append(keys, keyOf(b.jobCreate(t, []string{"a", "b"}[i%2], fmt.Sprintf("job-%02d", i), 0)))
	}
	b.admit(t, keys...)

	// Rounds in which both workers claim at the same moment, until the
	// queue is empty.
	owner := map[JobKey]string{}
	workers := []string{"w1", "w2"}
	for round := 0; ; round++ {
		require.Less(t, round, n, "the queue drains")
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			got   = make([][]JobKey, len(workers))
			errs  = make([]error, len(workers))
		)
		for i, worker := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], errs[i] = claimKeys(b.store.JobClaim(b.ctx, worker, 3, time.Hour))
			}()
		}
		close(start)
		wg.Wait()
		empty := true
		for i, worker := range workers {
			require.NoError(t, errs[i])
			for _, k := range got[i] {
				prev, taken := owner[k]
				require.False(t, taken, "job %s claimed by %s and %s", k, prev, worker)
				owner[k] = worker
				empty = false
			}
		}
		if empty {
			break
		}
	}
	require.Len(t, owner, n)
	perWorker := map[string]int{}
	for k, w := range owner {
		perWorker[w]++
		loaded, err := b.store.JobLoad(b.ctx, k.Tenant, k.UID)
		require.NoError(t, err)
		require.Equal(t, w, loaded.WorkerID)
	}
	require.Len(t, perWorker, 2, "both workers got jobs: %v", perWorker)

	// Nothing is left to claim while the leases live.
	keys, err := claimKeys(b.store.JobClaim(b.ctx, "w3", 10, time.Hour))
	require.NoError(t, err)
	require.Empty(t, keys)
}

func TestJobClaimSubmissionOrder(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	low1 := b.jobCreate(t, "a", "low-1", 0)
	_, _, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: "high",
		Spec: func() job.Spec { s := testSpec(); s.Priority = 10; return s }()}})
	require.NoError(t, err)
	low2 := b.jobCreate(t, "a", "low-2", 0)
	high, err := b.store.JobGet(b.ctx, "a", "high")
	require.NoError(t, err)
	b.admit(t, keyOf(low2), keyOf(high), keyOf(low1))
	finished := b.jobInState(t, "a", "done", job.Succeeded, true)
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "setup-worker", Tenant: "a", UID: finished.Job.UID,
		Version: finished.Version, Status: finished.Job.Status, Done: true})
	require.NoError(t, err)

	var names []string
	for {
		claimed, err := b.store.JobClaim(b.ctx, "w", 1, time.Hour)
		require.NoError(t, err)
		if len(claimed) == 0 {
			break
		}
		w, err := b.store.JobLoad(b.ctx, claimed[0].Job.Tenant, claimed[0].Job.UID)
		require.NoError(t, err)
		require.Equal(t, w, claimed[0], "a claim returns the job as a load after it reads it")
		names = append(names, w.Job.Name)
	}
	require.Equal(t, []string{"low-1", "high", "low-2"}, names,
		"admitted jobs in submission order (priority orders admission, not claims); inactive jobs never")

	// Renewal returns what the worker owns; release hands jobs back.
	owned, err := b.store.JobLeaseRenew(b.ctx, "w", time.Hour)
	require.NoError(t, err)
	require.Len(t, owned, 3)
	require.NoError(t, b.store.JobRelease(b.ctx, "w", keyOf(low1)))
	require.NoError(t, b.store.JobRelease(b.ctx, "other", keyOf(low2)), "releasing what one does not own is a no-op")
	owned, err = b.store.JobLeaseRenew(b.ctx, "w", time.Hour)
	require.NoError(t, err)
	require.Len(t, owned, 2)
	keys, err := claimKeys(b.store.JobClaim(b.ctx, "w2", 10, time.Hour))
	require.NoError(t, err)
	require.Equal(t, []JobKey{keyOf(low1)}, keys)
	require.NoError(t, b.store.JobReleaseAll(b.ctx, "w"))
	owned, err = b.store.JobLeaseRenew(b.ctx, "w", time.Hour)
	require.NoError(t, err)
	require.Empty(t, owned)
}

func TestJobLeaseExpiryTakeover(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	j := b.jobCreate(t, "a", "j", 0)
	b.admit(t, keyOf(j))

	keys, err := claimKeys(b.store.JobClaim(b.ctx, "w1", 10, 2*time.Second))
	require.NoError(t, err)
	require.Equal(t, []JobKey{keyOf(j)}, keys)
	w1, err := b.store.JobLoad(b.ctx, "a", j.UID)
	require.NoError(t, err)

	// w1 stops renewing (it died); once the lease expires w2 takes over.
	require.Eventually(t, func() bool {
		keys, err := claimKeys(b.store.JobClaim(b.ctx, "w2", 10, time.Hour))
		require.NoError(t, err)
		return len(keys) == 1 && keys[0] == keyOf(j)
	}, 15*time.Second, 20*time.Millisecond)

	owned, err := b.store.JobLeaseRenew(b.ctx, "w1", time.Hour)
	require.NoError(t, err)
	require.Empty(t, owned, "w1 learns it lost the job")
	st := w1.Job.Status
	st.State = job.Starting
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w1", Tenant: "a", UID: j.UID, Version: w1.Version, Status: st})
	require.ErrorIs(t, err, ErrLeaseLost)

	w2, err := b.store.JobLoad(b.ctx, "a", j.UID)
	require.NoError(t, err)
	require.Equal(t, "w2", w2.WorkerID)
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w2", Tenant: "a", UID: j.UID, Version: w2.Version, Status: st})
	require.NoError(t, err)
}

// A lease is extended without listing its jobs only while it is live; a
// renewal that waits for a takeover under way finds it run out.
func TestJobLeaseExtend(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	j := b.jobCreate(t, "a", "j", 0)
	b.own(t, "w1", keyOf(j))
	expiry := func() (e time.Time) {
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT expires_at FROM worker_leases WHERE worker_id = 'w1'`).Scan(&e))
		return e
	}
	before := expiry()
	live, err := b.store.JobLeaseExtend(b.ctx, "w1", 2*time.Hour)
	require.NoError(t, err)
	require.True(t, live)
	require.True(t, expiry().After(before))

	live, err = b.store.JobLeaseExtend(b.ctx, "nobody", time.Hour)
	require.NoError(t, err)
	require.False(t, live, "no lease")

	// The lease has run out; a takeover locks it; the extension waits for
	// it and then finds the lease run out, and leaves it so.
	_, err = b.pool.Exec(b.ctx, `UPDATE worker_leases SET expires_at = now() - interval '1 second' WHERE worker_id = 'w1'`)
	require.NoError(t, err)
	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(b.ctx, `SELECT FROM worker_leases WHERE worker_id = 'w1' AND expires_at < now() FOR SHARE`)
	require.NoError(t, err)
	type outcome struct {
		live bool
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		live, err := b.store.JobLeaseExtend(b.ctx, "w1", time.Hour)
		done <- outcome{live, err}
	}()
	select {
	case o := <-done:
		t.Fatalf("the extension did not wait for the takeover: %+v", o)
	case <-time.After(200 * time.Millisecond):
	}
	_, err = tx.Exec(b.ctx, `UPDATE jobs SET worker_id = 'w2' WHERE uid = $1`, j.UID)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(b.ctx))
	o := <-done
	require.NoError(t, o.err)
	require.False(t, o.live)
	require.True(t, expiry().Before(time.Now()), "a lease found run out is left so")
	owned, err := b.store.JobLeaseRenew(b.ctx, "w1", time.Hour)
	require.NoError(t, err)
	require.Empty(t, owned, "the renewal that lists finds the job gone")
}

func TestJobSaveFencing(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	j := b.jobCreate(t, "a", "j", 0)
	w := b.own(t, "w1", keyOf(j))

	st := w.Job.Status
	st.State = job.Running
	now := time.Now().UTC().Truncate(time.Microsecond)
	st.StartTime = &now
	st.Replicas = []job.ReplicaStatus{{Type: job.Worker, Index: 0, Pod: "j-worker-0", State: job.ReplicaRunning}}
	v2, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w1", Tenant: "a", UID: j.UID, Version: w.Version,
		Status: st, Events: []job.Event{{Reason: "Started", Message: "pods running"}}})
	require.NoError(t, err)
	require.Greater(t, v2, w.Version)

	got, err := b.store.JobGet(b.ctx, "a", "j")
	require.NoError(t, err)
	require.Equal(t, job.Running, got.Status.State)
	require.Equal(t, st.Replicas, got.Status.Replicas)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE state = 'RUNNING'`), "state column follows the status")

	// A refused save writes none of its events (checked at the end).
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w1", Tenant: "a", UID: j.UID, Version: w.Version, Status: st,
		Events: []job.Event{{Reason: "Stale"}}})
	require.ErrorIs(t, err, ErrConflict, "stale version")
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w2", Tenant: "a", UID: j.UID, Version: v2, Status: st,
		Events: []job.Event{{Reason: "NotMine"}}})
	require.ErrorIs(t, err, ErrLeaseLost, "not the owner")
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w1", Tenant: "b", UID: j.UID, Version: v2, Status: st})
	require.ErrorIs(t, err, ErrNotFound, "wrong tenant")

	// A user's cancel request bumps the version: the worker re-reads.
	_, err = b.store.JobCancel(b.ctx, "a", "j")
	require.NoError(t, err)
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w1", Tenant: "a", UID: j.UID, Version: v2, Status: st})
	require.ErrorIs(t, err, ErrConflict)
	w, err = b.store.JobLoad(b.ctx, "a", j.UID)
	require.NoError(t, err)
	require.True(t, w.Job.Status.CancelRequested)
	require.Equal(t, "w1", w.WorkerID, "a cancel request keeps the owner")

	// Saving never clears cancel_requested.
	st = w.Job.Status
	st.State = job.Cancelled
	st.CancelRequested = false
	v3, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w1", Tenant: "a", UID: j.UID, Version: w.Version, Status: st,
		Events: []job.Event{{Reason: "Cancelled", Message: "pods deleted"}, {Reason: "CleanedUp"}}})
	require.NoError(t, err)
	got, err = b.store.JobGet(b.ctx, "a", "j")
	require.NoError(t, err)
	require.True(t, got.Status.CancelRequested)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE finish_time IS NOT NULL`))

	// Done: no more work, nobody owns it, it cannot be claimed.
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w1", Tenant: "a", UID: j.UID, Version: v3, Status: st, Done: true})
	require.NoError(t, err)
	w, err = b.store.JobLoad(b.ctx, "a", j.UID)
	require.NoError(t, err)
	require.False(t, w.Active)
	require.Empty(t, w.WorkerID)
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w1", Tenant: "a", UID: j.UID, Version: w.Version, Status: st})
	require.ErrorIs(t, err, ErrLeaseLost)
	keys, err := claimKeys(b.store.JobClaim(b.ctx, "w9", 10, time.Hour))
	require.NoError(t, err)
	require.Empty(t, keys)

	events, err := b.store.EventList(b.ctx, "a", "j", 0, 0)
	require.NoError(t, err)
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason)
	}
	require.Equal(t, []string{"Queued", "Started", "CancelRequested", "Cancelled", "CleanedUp"}, reasons, "a save's events in their order")
	require.Equal(t, job.Running, events[1].State, "event state defaults to the saved state")
}

func TestJobCancel(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	cases := []struct {
		state    job.State
		admitted bool
		// want
		final         job.State
		requested     bool
		noop          bool
		wantActive    bool
		wantCondition string
	}{
		{state: job.Queued, final: job.Cancelled, wantCondition: job.CondCancelled},
		// Admission starts the job (STARTING, job.Admit): a worker stops it.
		{state: job.Queued, admitted: true, final: job.Starting, requested: true, wantActive: true},
		{state: job.Starting, admitted: true, final: job.Starting, requested: true, wantActive: true},
		{state: job.Running, admitted: true, final: job.Running, requested: true, wantActive: true},
		{state: job.Restarting, admitted: true, final: job.Restarting, requested: true, wantActive: true},
		{state: job.Succeeded, admitted: true, final: job.Succeeded, noop: true, wantActive: true},
		{state: job.Failed, admitted: true, final: job.Failed, noop: true, wantActive: true},
		{state: job.Cancelled, admitted: true, final: job.Cancelled, noop: true, wantActive: true},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%s-admitted-%t", tc.state, tc.admitted)
		t.Run(name, func(t *testing.T) {
			before := b.jobInState(t, "a", stringsLower(name), tc.state, tc.admitted)
			eventsBefore := b.count(t, `SELECT count(*) FROM job_events WHERE job_uid = $1`, before.Job.UID)

			got, err := b.store.JobCancel(b.ctx, "a", before.Job.Name)
			require.NoError(t, err)
			require.Equal(t, tc.final, got.Status.State)
			require.Equal(t, tc.requested, got.Status.CancelRequested)

			after, err := b.store.JobLoad(b.ctx, "a", before.Job.UID)
			require.NoError(t, err)
			require.Equal(t, got.Status, after.Job.Status, "the returned job is what is stored")
			require.Equal(t, tc.wantActive, after.Active)
			eventsAfter := b.count(t, `SELECT count(*) FROM job_events WHERE job_uid = $1`, before.Job.UID)
			if tc.noop {
				require.Equal(t, before.Version, after.Version)
				require.Equal(t, eventsBefore, eventsAfter)
				return
			}
			require.Greater(t, after.Version, before.Version)
			require.Equal(t, eventsBefore+1, eventsAfter)
			if tc.wantCondition != "" {
				require.NotNil(t, after.Job.Status.CompletionTime)
				var found bool
				for _, c := range after.Job.Status.Conditions {
					if c.Type == tc.wantCondition {
						found = c.Status
					}
					if c.Type == job.CondQueued {
						require.False(t, c.Status)
					}
				}
				require.True(t, found)
				// The owner finds out on its next write and re-reads.
				_, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "setup-worker", Tenant: "a",
					UID: before.Job.UID, Version: before.Version, Status: before.Job.Status})
				require.ErrorIs(t, err, ErrConflict)
			}
			// A second cancel changes nothing.
			again, err := b.store.JobCancel(b.ctx, "a", before.Job.Name)
			require.NoError(t, err)
			require.Equal(t, got.Status, again.Status)
			reloaded, err := b.store.JobLoad(b.ctx, "a", before.Job.UID)
			require.NoError(t, err)
			require.Equal(t, after.Version, reloaded.Version)
		})
	}
	_, err := b.store.JobCancel(b.ctx, "a", "missing")
	require.ErrorIs(t, err, ErrNotFound)
}

func stringsLower(s string) string {
	out := []byte(s)
	for i, c := range out {
		if c >= 'A' && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return string(out)
}

func TestJobDeletePurge(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	running := b.jobInState(t, "a", "running", job.Running, true)
	err := b.store.JobDelete(b.ctx, "a", "running")
	require.ErrorIs(t, err, ErrFailedPrecondition)
	require.ErrorContains(t, err, "RUNNING")
	_, err = b.store.JobGet(b.ctx, "a", "running")
	require.NoError(t, err)

	queued := b.jobCreate(t, "a", "queued", 0)
	require.ErrorIs(t, b.store.JobDelete(b.ctx, "a", "queued"), ErrFailedPrecondition)
	_, err = b.store.JobCancel(b.ctx, "a", "queued")
	require.NoError(t, err)
	require.NoError(t, b.store.JobDelete(b.ctx, "a", "queued"), "a cancelled job can be deleted")

	// The deleted job is gone for users, needs a worker, and its name is free.
	_, err = b.store.JobGet(b.ctx, "a", "queued")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, b.store.JobDelete(b.ctx, "a", "queued"), ErrNotFound)
	_, err = b.store.EventList(b.ctx, "a", "queued", 0, 0)
	require.ErrorIs(t, err, ErrNotFound)
	reborn := b.jobCreate(t, "a", "queued", 0)
	require.NotEqual(t, queued.UID, reborn.UID)
	events, err := b.store.EventList(b.ctx, "a", "queued", 0, 0)
	require.NoError(t, err)
	require.Len(t, events, 1, "events of the new job only")

	old, err := b.store.JobLoad(b.ctx, "a", queued.UID)
	require.NoError(t, err)
	require.True(t, old.Deleted)
	require.True(t, old.Active)
	require.Empty(t, old.WorkerID)
	active, err := b.store.JobListActiveByTenant(b.ctx, "a")
	require.NoError(t, err)
	require.ElementsMatch(t, []JobKey{keyOf(running.Job), keyOf(queued), keyOf(reborn)}, active)
	list, err := b.store.JobList(b.ctx, "a", JobListParams{})
	require.NoError(t, err)
	require.Len(t, list.Jobs, 2)

	// Purge: only the owner, only deleted jobs.
	require.ErrorIs(t, b.store.JobPurge(b.ctx, "w", "a", queued.UID), ErrLeaseLost)
	b.own(t, "w", keyOf(queued))
	b.own(t, "w", keyOf(reborn))
	require.ErrorIs(t, b.store.JobPurge(b.ctx, "w", "a", reborn.UID), ErrFailedPrecondition)
	require.NoError(t, b.store.JobPurge(b.ctx, "w", "a", queued.UID))
	_, err = b.store.JobLoad(b.ctx, "a", queued.UID)
	require.ErrorIs(t, err, ErrNotFound)
	// Its events go but the Deleted one: a tenant watch resumed from
	// before the purge still learns that the job went.
	left, err := b.store.EventListByJob(b.ctx, "a", queued.UID, 0, 0)
	require.NoError(t, err)
	require.Len(t, left, 1, "the tombstone")
	require.Equal(t, job.ReasonDeleted, left[0].Reason)
	tenantEvents, err := b.store.EventListTenant(b.ctx, "a", 0, 0)
	require.NoError(t, err)
	require.Contains(t, tenantEvents, left[0])
	require.ErrorIs(t, b.store.JobPurge(b.ctx, "w", "a", queued.UID), ErrNotFound)

	// Deleting a finished job whose worker still holds it (cleanup pending)
	// keeps the owner, who sees the change on its next write.
	fin := b.jobInState(t, "a", "fin", job.Succeeded, true)
	require.NoError(t, b.store.JobDelete(b.ctx, "a", "fin"))
	w, err := b.store.JobLoad(b.ctx, "a", fin.Job.UID)
	require.NoError(t, err)
	require.Equal(t, "setup-worker", w.WorkerID)
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "setup-worker", Tenant: "a", UID: fin.Job.UID,
		Version: fin.Version, Status: fin.Job.Status, Done: true})
	require.ErrorIs(t, err, ErrConflict)
}

func TestJobListActiveByTenantOffboarding(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	ja := b.jobCreate(t, "a", "x", 0)
	b.jobCreate(t, "b", "y", 0)
	_, err := b.store.TenantSetState(b.ctx, "a", tenant.Offboarding)
	require.NoError(t, err)
	keys, err := b.store.JobListActiveByTenant(b.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, []JobKey{keyOf(ja)}, keys)
	_, err = b.store.JobCancel(b.ctx, "a", "x")
	require.NoError(t, err)
	keys, err = b.store.JobListActiveByTenant(b.ctx, "a")
	require.NoError(t, err)
	require.Empty(t, keys)
}

// claimAll claims everything claimable for worker and returns the names,
// in claim order.
func (b *testBundle) claimAll(t testing.TB, worker string) []string {
	t.Helper()
	var names []string
	for {
		keys, err := claimKeys(b.store.JobClaim(b.ctx, worker, 1, time.Hour))
		require.NoError(t, err)
		if len(keys) == 0 {
			return names
		}
		w, err := b.store.JobLoad(b.ctx, keys[0].Tenant, keys[0].UID)
		require.NoError(t, err)
		names = append(names, w.Job.Name)
	}
}

// Jobs waiting for admission are not claimable; admission makes them so,
// in submission order. An expired lease (a dead worker) is taken over
// before admitted jobs.
func TestClaimTakesAdmittedJobsOnly(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	waits := b.jobCreate(t, "a", "waits", 1)
	first := b.jobCreate(t, "b", "first", 1)
	second := b.jobCreate(t, "a", "second", 1)
	require.Empty(t, b.claimAll(t, "w1"), "nothing is admitted")

	b.admit(t, keyOf(second), keyOf(first))
	require.Equal(t, []string{"first", "second"}, b.claimAll(t, "w1"), "admitted jobs, in submission order")

	// A dead worker's jobs come first.
	_, err := b.pool.Exec(b.ctx, `UPDATE worker_leases SET expires_at = now() - interval '1 second' WHERE worker_id = 'w1'`)
	require.NoError(t, err)
	b.admit(t, keyOf(waits))
	keys, err := claimKeys(b.store.JobClaim(b.ctx, "w2", 3, time.Hour))
	require.NoError(t, err)
	require.Len(t, keys, 3)
	require.ElementsMatch(t, []JobKey{keyOf(first), keyOf(second)}, keys[:2], "the expired lease's jobs are taken over first")
	require.Equal(t, keyOf(waits), keys[2])
	owned, err := b.store.JobLeaseRenew(b.ctx, "w1", time.Hour)
	require.NoError(t, err)
	require.Empty(t, owned, "w1, back, owns nothing: its jobs were taken over")
}

// Leases of workers long gone are forgotten once they own nothing.
func TestClaimForgetsLeasesOfWorkersGone(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	j := b.jobCreate(t, "a", "j", 1)
	b.own(t, "holder", keyOf(j))
	_, err := b.pool.Exec(b.ctx, `INSERT INTO worker_leases VALUES ('gone', now() - interval '2 hours'), ('recent', now() - interval '1 minute')`)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `UPDATE worker_leases SET expires_at = now() - interval '2 hours' WHERE worker_id = 'holder'`)
	require.NoError(t, err)
	leases := func() []string {
		rows, err := b.pool.Query(b.ctx, `SELECT worker_id FROM worker_leases ORDER BY worker_id`)
		require.NoError(t, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return ids
	}

	_, err = claimKeys(b.store.JobClaim(b.ctx, "w", 1, time.Minute))
	require.NoError(t, err)
	require.Equal(t, []string{"holder", "recent", "w"}, leases(), "gone is forgotten; holder still owned a job when the claim began")
	owned, err := b.store.JobLeaseRenew(b.ctx, "w", time.Minute)
	require.NoError(t, err)
	require.Equal(t, []JobKey{keyOf(j)}, owned, "holder's job was taken over")
	_, err = claimKeys(b.store.JobClaim(b.ctx, "w", 1, time.Minute))
	require.NoError(t, err)
	require.Equal(t, []string{"recent", "w"}, leases())
}

func TestJobListByKeys(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	active := b.jobCreate(t, "a", "active", 0)
	done := b.jobInState(t, "a", "done", job.Succeeded, true)
	st := done.Job.Status
	st.CleanedUp = true
	_, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "setup-worker", Tenant: "a", UID: done.Job.UID,
		Version: done.Version, Status: st, Done: true})
	require.NoError(t, err)
	gone := JobKey{Tenant: "a", UID: "00000000-0000-0000-0000-000000000009"}

	got, err := b.store.JobListByKeys(b.ctx, []JobKey{keyOf(active), keyOf(done.Job), gone,
		{Tenant: "b", UID: active.UID}, {Tenant: "a", UID: "not-a-uuid"}})
	require.NoError(t, err)
	require.ElementsMatch(t, []JobBrief{
		{Key: keyOf(active), Active: true, State: job.Queued},
		{Key: keyOf(done.Job), CleanedUp: true, State: job.Succeeded},
	}, got)
	got, err = b.store.JobListByKeys(b.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

// claimKeys is the keys of what a claim returned.
func claimKeys(jobs []WorkerJob, err error) ([]JobKey, error) { return KeysOf(jobs), err }

// A finished job's last save can park it (JobSaveParams.Park), as JobPark
// would after it: unowned, still active, claimable when the time is up,
// one version later.
func TestJobSaveParks(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	j := b.jobCreate(t, "a", "j", 0)
	w := b.own(t, "w1", keyOf(j))
	st := w.Job.Status
	st.State = job.Succeeded

	_, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w1", Tenant: "a", UID: j.UID, Version: w.Version, Status: st,
		Done: true, Park: time.Hour})
	require.ErrorIs(t, err, ErrFailedPrecondition, "done and parked at once")

	v, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w1", Tenant: "a", UID: j.UID, Version: w.Version, Status: st,
		Events: []job.Event{{Reason: "Succeeded"}}, Park: time.Hour})
	require.NoError(t, err)
	require.Equal(t, w.Version+1, v, "one write")
	got, err := b.store.JobLoad(b.ctx, "a", j.UID)
	require.NoError(t, err)
	require.Equal(t, job.Succeeded, got.Job.Status.State)
	require.True(t, got.Active, "its kept objects still need a worker at the TTL")
	require.Empty(t, got.WorkerID, "nobody holds it meanwhile")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE claim_after BETWEEN now() + interval '59 minutes' AND now() + interval '61 minutes'`))
	keys, err := claimKeys(b.store.JobClaim(b.ctx, "w2", 10, time.Hour))
	require.NoError(t, err)
	require.Empty(t, keys, "not claimable before the TTL")

	_, err = b.pool.Exec(b.ctx, `UPDATE jobs SET claim_after = now() WHERE uid = $1`, j.UID)
	require.NoError(t, err)
	keys, err = claimKeys(b.store.JobClaim(b.ctx, "w2", 10, time.Hour))
	require.NoError(t, err)
	require.Equal(t, []JobKey{keyOf(j)}, keys, "claimable once due")
}

// Saves of several jobs in one statement: each gets its own outcome (its
// version, or why its fence failed) and only the saved ones' events are
// written, in order; a save that makes the whole statement fail (a NUL in
// its status, which jsonb refuses) fails alone when each is run again.
func TestJobSaveSharedStatement(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	var ws []WorkerJob
	for _, name := range []string{"ok", "stale", "other", "second"} {
		ws = append(ws, b.own(t, "w1", keyOf(b.jobCreate(t, "a", name, 0))))
	}
	item := func(w WorkerJob, worker string, version int64, reasons ...string) saveItem {
		st := w.Job.Status
		st.State = job.Starting
		p := JobSaveParams{WorkerID: worker, Tenant: "a", UID: w.Job.UID, Version: version, Status: st}
		for _, r := range reasons {
			p.Events = append(p.Events, job.Event{Reason: r})
		}
		return saveItem{p: p, uid: uuid.MustParse(w.Job.UID), now: b.store.timestamp()}
	}
	items := []saveItem{
		item(ws[0], "w1", ws[0].Version, "First", "Then"),
		item(ws[1], "w1", ws[1].Version-1, "Stale"),
		item(ws[2], "w2", ws[2].Version, "NotMine"),
		item(ws[3], "w1", ws[3].Version, "Second"),
	}
	versions, errs := b.store.saveShared(b.ctx, items)
	require.NoError(t, errs[0])
	require.Equal(t, ws[0].Version+1, versions[0])
	require.ErrorIs(t, errs[1], ErrConflict)
	require.ErrorIs(t, errs[2], ErrLeaseLost)
	require.NoError(t, errs[3])
	require.Equal(t, ws[3].Version+1, versions[3])
	reasons := func(w WorkerJob) []string {
		var out []string
		rows, err := b.pool.Query(b.ctx, `SELECT reason FROM job_events WHERE job_uid = $1 AND reason <> 'Queued' ORDER BY id`, w.Job.UID)
		require.NoError(t, err)
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	require.Equal(t, []string{"First", "Then"}, reasons(ws[0]))
	require.Empty(t, reasons(ws[1]))
	require.Empty(t, reasons(ws[2]))
	require.Equal(t, []string{"Second"}, reasons(ws[3]))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM jobs WHERE state = 'STARTING'`))

	bad := item(ws[1], "w1", ws[1].Version, "Bad")
	bad.p.Status.Message = "a\x00b"
	versions, errs = b.store.saveShared(b.ctx, []saveItem{bad, item(ws[2], "w1", ws[2].Version, "Fine")})
	require.Error(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, ws[2].Version+1, versions[1])
	require.Equal(t, []string{"Fine"}, reasons(ws[2]))
}

// A worker claims only the jobs admitted to its own cluster, and takes
// over a dead worker's jobs only there: the pods of a job are in the
// cluster it was admitted to.
func TestJobClaimTakesOnlyItsClustersJobs(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	here := keyOf(b.jobCreate(t, "a", "here", 1))
	there := keyOf(b.jobCreate(t, "a", "there", 1))
	_, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: b.lease(t), Admit: []JobKey{here, there},
		Clusters: map[JobKey]string{there: "eu-west"}})
	require.NoError(t, err)
	eu := New(b.pool, WithCluster("eu-west"))

	got, err := b.store.JobClaim(b.ctx, "w-default", 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []JobKey{here}, KeysOf(got))
	got, err = eu.JobClaim(b.ctx, "w-eu-1", 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []JobKey{there}, KeysOf(got))

	// w-eu-1 dies: the default cluster's worker does not take its job over,
	// another of eu-west's does.
	b.exec(t, `UPDATE worker_leases SET expires_at = now() - interval '1 s' WHERE worker_id = 'w-eu-1'`)
	got, err = b.store.JobClaim(b.ctx, "w-default-2", 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, got)
	got, err = eu.JobClaim(b.ctx, "w-eu-2", 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []JobKey{there}, KeysOf(got))
}
