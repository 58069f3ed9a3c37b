//go:build integration

package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// dependent creates a job of tenantID that depends on deps (uids already
// resolved, as the API does).
func (b *testBundle) dependent(t *testing.T, tenantID, name string, cancel bool, deps ...job.Dependency) job.Job {
	t.Helper()
	spec := testSpec()
	spec.DependsOn = deps
	if cancel {
		spec.OnDependencyFailure = job.DependencyCancel
	}
	j, created, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: tenantID, Name: name, Spec: spec}})
	require.NoError(t, err)
	require.True(t, created)
	return j
}

func TestJobUIDsByName(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	prep := b.jobCreate(t, "a", "prep", 0)
	b.jobCreate(t, "b", "theirs", 0)
	gone := b.jobInState(t, "a", "gone", job.Succeeded, true)
	require.NoError(t, b.store.JobDelete(b.ctx, "a", "gone"))

	got, err := b.store.JobUIDsByName(b.ctx, "a", []string{"prep", "theirs", "gone", "nothing"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"prep": prep.UID}, got, "live jobs of the tenant only")
	_ = gone
}

func TestDependencyObserve(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	queued := b.jobCreate(t, "a", "queued", 0)
	running := b.jobInState(t, "a", "running", job.Running, true)
	deleted := b.jobInState(t, "a", "deleted", job.Failed, true)
	require.NoError(t, b.store.JobDelete(b.ctx, "a", "deleted"))
	purged := JobKey{Tenant: "a", UID: "0190e0c1-0000-7000-8000-000000000001"}
	otherTenant := JobKey{Tenant: "b", UID: queued.UID}

	got, err := b.store.DependencyObserve(b.ctx, []JobKey{keyOf(queued), keyOf(running.Job), keyOf(deleted.Job), purged, otherTenant})
	require.NoError(t, err)
	require.Equal(t, map[JobKey]job.DependencyObserved{
		keyOf(queued):      {State: job.Queued},
		keyOf(running.Job): {State: job.Running, Started: true},
		keyOf(deleted.Job): {State: job.Failed, Started: true, Gone: true},
		purged:             {Gone: true},
		otherTenant:        {Gone: true},
	}, got)
}

// The commit ends a job whose dependency can never be met (FAILED or
// CANCELLED, DependencyFailed, inactive, an event), skips one admitted or
// cancelled since, and copies the dependencies' results into a job it
// admits.
func TestSchedulerCommitDependencies(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	_, subs, _ := listenerStart(t, b, ChannelFreed)
	prep := b.jobInState(t, "a", "prep", job.Running, true)
	st := prep.Job.Status
	st.State, st.Reason = job.Succeeded, job.ReasonSucceeded
	st.Replicas = []job.ReplicaStatus{{Type: job.Worker, Index: 0, State: job.ReplicaSucceeded,
		LastTermination: &job.Termination{ExitCode: 0, Message: "dataset=gs://d/7\nrows=1000", FinishTime: time.Now()}}}
	_, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "setup-worker", Tenant: "a", UID: prep.Job.UID, Version: prep.Version, Status: st,
		Events: []job.Event{{Reason: job.ReasonSucceeded}}})
	require.NoError(t, err)
	waitFor(t, subs[ChannelFreed], "a job's end wakes the scheduler")

	failedDep := b.jobInState(t, "a", "failed", job.Failed, true)
	dep := func(j job.Job, c job.DependencyCondition) job.Dependency {
		return job.Dependency{Job: j.Name, UID: j.UID, Condition: c}
	}
	train := b.dependent(t, "a", "train", false, dep(prep.Job, ""))
	doomed := b.dependent(t, "a", "doomed", false, dep(failedDep.Job, ""))
	dropped := b.dependent(t, "a", "dropped", true, dep(failedDep.Job, job.DependsSucceeded))
	late := b.dependent(t, "a", "late", false, dep(failedDep.Job, ""))
	_, err = b.store.JobCancel(b.ctx, "a", "late")
	require.NoError(t, err)

	res, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{
		Lease: b.lease(t),
		Admit: []JobKey{keyOf(train)}, Dependencies: []JobKey{keyOf(prep.Job)},
		DependencyFailed: []DependencyFailWrite{
			{Key: keyOf(doomed), Message: "dependency failed ended FAILED; it can no longer succeed"},
			{Key: keyOf(dropped), Cancel: true, Message: "dependency failed ended FAILED; it can no longer succeed"},
			{Key: keyOf(late), Message: "skipped"},
		},
	})
	require.NoError(t, err)
	require.Equal(t, []JobKey{keyOf(doomed), keyOf(dropped)}, res.DependencyFailed)
	waitFor(t, subs[ChannelFreed], "an end for a dependency wakes the scheduler for its own dependents")

	d, err := b.store.JobLoad(b.ctx, "a", doomed.UID)
	require.NoError(t, err)
	require.Equal(t, job.Failed, d.Job.Status.State)
	require.Equal(t, job.ReasonDependencyFailed, d.Job.Status.Reason)
	require.Contains(t, d.Job.Status.Message, "dependency failed")
	require.False(t, d.Active)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE uid = $1 AND state = 'FAILED' AND finish_time IS NOT NULL`, doomed.UID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM job_events WHERE job_uid = $1 AND reason = 'DependencyFailed' AND state = 'FAILED'`, doomed.UID))
	c, err := b.store.JobLoad(b.ctx, "a", dropped.UID)
	require.NoError(t, err)
	require.Equal(t, job.Cancelled, c.Job.Status.State)
	require.Equal(t, job.ReasonDependencyFailed, c.Job.Status.Reason)
	l, err := b.store.JobLoad(b.ctx, "a", late.UID)
	require.NoError(t, err)
	require.Equal(t, "Cancelled", l.Job.Status.Reason, "a cancel since the snapshot wins")

	tr, err := b.store.JobLoad(b.ctx, "a", train.UID)
	require.NoError(t, err)
	require.True(t, tr.Admitted)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE uid = $1 AND admitted_before`, train.UID),
		"requeued, its dependencies do not hold it again")
	require.Equal(t, []job.DependencyResult{{
		Job: "prep", UID: prep.Job.UID, Condition: job.DependsSucceeded, State: job.Succeeded, Reason: job.ReasonSucceeded,
		ExitCodes: map[string]int32{"worker-0": 0}, Outputs: map[string]string{"dataset": "gs://d/7", "rows": "1000"},
	}}, tr.Job.Status.Dependencies)

	drain := func() {
		for {
			select {
			case <-subs[ChannelFreed]:
			default:
				return
			}
		}
	}
	running := b.jobInState(t, "a", "starting", job.Starting, true)
	drain()
	// Entering RUNNING wakes the scheduler too (STARTED dependents), and
	// so does a delete.
	st = running.Job.Status
	st.State = job.Running
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "setup-worker", Tenant: "a", UID: running.Job.UID, Version: running.Version, Status: st,
		Events: []job.Event{{Reason: job.ReasonRunning}}})
	require.NoError(t, err)
	waitFor(t, subs[ChannelFreed], "RUNNING wakes the scheduler")
	drain()
	require.NoError(t, b.store.JobDelete(b.ctx, "a", "failed"))
	waitFor(t, subs[ChannelFreed], "a delete wakes the scheduler")
}
