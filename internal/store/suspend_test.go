//go:build integration

package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// schedulerSees reports whether the scheduler's snapshot holds the job, and
// whether as admitted.
func (b *testBundle) schedulerSees(t *testing.T, uid string) (seen, admitted bool) {
	t.Helper()
	read, err := b.store.SchedulerRead(b.ctx, 0)
	require.NoError(t, err)
	for _, j := range read.Jobs {
		if j.Key.UID == uid {
			return true, j.Admitted
		}
	}
	return false, false
}

func TestJobSuspendResumeRunning(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	w := b.jobInState(t, "a", "train", job.Running, true)
	st := w.Job.Status
	st.Restarts = 2
	_, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "setup-worker", Tenant: "a", UID: w.Job.UID, Version: w.Version, Status: st})
	require.NoError(t, err)
	usage, err := b.store.TenantUsage(b.ctx, "a")
	require.NoError(t, err)
	require.NotEqual(t, job.Vector{}, usage)

	got, err := b.store.JobSuspend(as(b.ctx, "alice"), "a", "train")
	require.NoError(t, err)
	require.Equal(t, job.Running, got.Status.State, "its worker stops the pods first")
	require.True(t, got.Status.SuspendRequested)
	w, err = b.store.JobLoad(b.ctx, "a", w.Job.UID)
	require.NoError(t, err)
	require.True(t, w.Job.Status.SuspendRequested)
	require.True(t, w.Admitted, "its quota is held until its pods are gone")

	again, err := b.store.JobSuspend(as(b.ctx, "alice"), "a", "train")
	require.NoError(t, err)
	require.Equal(t, got.Status, again.Status)
	reloaded, err := b.store.JobLoad(b.ctx, "a", w.Job.UID)
	require.NoError(t, err)
	require.Equal(t, w.Version, reloaded.Version, "a second suspend changes nothing")

	// The worker, its pods gone, saves it SUSPENDED (job.Plan's Requeued).
	st = w.Job.Status
	st.State = job.Suspended
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "setup-worker", Tenant: "a", UID: w.Job.UID, Version: w.Version,
		Status: st, Requeue: &Requeue{}, Events: []job.Event{{Reason: job.ReasonSuspended}}})
	require.NoError(t, err)
	w, err = b.store.JobLoad(b.ctx, "a", w.Job.UID)
	require.NoError(t, err)
	require.Equal(t, job.Suspended, w.Job.Status.State)
	require.False(t, w.Admitted)
	require.Empty(t, w.WorkerID)
	require.EqualValues(t, 2, w.Job.Status.Restarts)
	usage, err = b.store.TenantUsage(b.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, job.Vector{}, usage, "a suspended job holds no quota")
	seen, _ := b.schedulerSees(t, w.Job.UID)
	require.False(t, seen, "the scheduler neither counts nor admits a suspended job")
	waiting, err := b.store.SchedulerWaiting(b.ctx)
	require.NoError(t, err)
	require.False(t, waiting, "a suspended job does not wake the scheduler's full read")
	require.Empty(t, b.claimAll(t, "w2"), "no worker claims a suspended job")

	resumed, err := b.store.JobResume(as(b.ctx, "alice"), "a", "train")
	require.NoError(t, err)
	require.Equal(t, job.Queued, resumed.Status.State)
	require.False(t, resumed.Status.SuspendRequested)
	require.EqualValues(t, 2, resumed.Status.Restarts)
	seen, admitted := b.schedulerSees(t, w.Job.UID)
	require.True(t, seen, "waiting for admission again")
	waiting, err = b.store.SchedulerWaiting(b.ctx)
	require.NoError(t, err)
	require.True(t, waiting)
	require.False(t, admitted)
	w, err = b.store.JobLoad(b.ctx, "a", w.Job.UID)
	require.NoError(t, err)
	_, err = b.store.JobResume(as(b.ctx, "alice"), "a", "train")
	require.NoError(t, err)
	reloaded, err = b.store.JobLoad(b.ctx, "a", w.Job.UID)
	require.NoError(t, err)
	require.Equal(t, w.Version, reloaded.Version, "resuming a queued job changes nothing")

	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM audit_records WHERE tenant_id = 'a' AND action IN ('job.suspend', 'job.resume')`),
		"one record per change, none for a no-op")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM job_events WHERE job_uid = $1 AND reason = 'SuspendRequested'`, w.Job.UID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM job_events WHERE job_uid = $1 AND reason = 'Resumed'`, w.Job.UID))
}

func TestJobSuspendQueued(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	j := b.jobCreate(t, "a", "waiting", 1)
	got, err := b.store.JobSuspend(b.ctx, "a", "waiting")
	require.NoError(t, err)
	require.Equal(t, job.Suspended, got.Status.State, "no pods to stop: suspended at once")
	seen, _ := b.schedulerSees(t, j.UID)
	require.False(t, seen)

	cancelled, err := b.store.JobCancel(b.ctx, "a", "waiting")
	require.NoError(t, err)
	require.Equal(t, job.Cancelled, cancelled.Status.State, "a suspended job is cancelled at once")

	_, err = b.store.JobSuspend(b.ctx, "a", "waiting")
	require.ErrorIs(t, err, ErrFailedPrecondition)
	require.ErrorContains(t, err, "CANCELLED")
	_, err = b.store.JobResume(b.ctx, "a", "waiting")
	require.ErrorIs(t, err, ErrFailedPrecondition)
	require.ErrorContains(t, err, "CANCELLED")
	_, err = b.store.JobSuspend(b.ctx, "a", "missing")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestJobResumeBeforeSuspended(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	w := b.jobInState(t, "a", "train", job.Running, true)
	_, err := b.store.JobSuspend(b.ctx, "a", "train")
	require.NoError(t, err)
	got, err := b.store.JobResume(b.ctx, "a", "train")
	require.NoError(t, err)
	require.Equal(t, job.Running, got.Status.State)
	require.False(t, got.Status.SuspendRequested, "the suspension is withdrawn")
	w2, err := b.store.JobLoad(b.ctx, "a", w.Job.UID)
	require.NoError(t, err)
	require.True(t, w2.Admitted)
}
