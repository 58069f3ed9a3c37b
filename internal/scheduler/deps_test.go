//go:build integration

package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// submitAfter submits a one-worker job that depends on deps (by key).
func (b *bundle) submitAfter(t *testing.T, tenantID, name string, cancel bool, deps map[string]store.JobKey) store.JobKey {
	t.Helper()
	spec := job.Spec{Replicas: []job.ReplicaSpec{{Type: job.Worker, Count: 1, Image: "tf", Resources: job.Resources{GPU: 1}}}}
	for n, k := range deps {
		spec.DependsOn = append(spec.DependsOn, job.Dependency{Job: n, UID: k.UID})
	}
	if cancel {
		spec.OnDependencyFailure = job.DependencyCancel
	}
	spec.Default()
	j, _, err := b.store.JobCreate(b.ctx, store.JobCreateParams{Job: job.Job{Tenant: tenantID, Name: name, Spec: spec}})
	require.NoError(t, err)
	return store.JobKey{Tenant: tenantID, UID: j.UID}
}

// finish ends an admitted job as its worker would, in state with its
// worker's termination message.
func finish(t *testing.T, b *bundle, k store.JobKey, state job.State, message string) {
	t.Helper()
	claimed, err := b.store.JobClaim(b.ctx, "test-worker", 100, time.Hour)
	require.NoError(t, err)
	require.Contains(t, store.KeysOf(claimed), k)
	w, err := b.store.JobLoad(b.ctx, k.Tenant, k.UID)
	require.NoError(t, err)
	st := w.Job.Status
	st.State = state
	st.Replicas = []job.ReplicaStatus{{Type: job.Worker, Index: 0, LastTermination: &job.Termination{Message: message, FinishTime: time.Now()}}}
	_, err = b.store.JobSave(b.ctx, store.JobSaveParams{WorkerID: "test-worker", Tenant: k.Tenant, UID: k.UID,
		Version: w.Version, Status: st, Done: true})
	require.NoError(t, err)
}

// A chain on the real loop, woken only by NOTIFY (the period is an hour):
// each dependent waits DEPENDENCY while its dependency runs and is
// admitted, with the dependency's outputs, once that succeeded; a failed
// dependency ends the rest of the chain.
func TestSchedulerDependencies(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a"})
	require.NoError(t, err)
	l, err := store.NewListener(b.url, store.ListenerConfig{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	go func() { _ = l.Run(ctx) }()
	_, reg, _ := b.startWith(t, Config{ID: "s1", Listener: l, Period: time.Hour})
	require.Eventually(t, func() bool {
		return l.Listening(store.ChannelSchedule) && l.Listening(store.ChannelFreed) && metric(t, reg, "trainyard_scheduler_leader") == 1
	}, 10*time.Second, 10*time.Millisecond)

	prep := b.submit(t, "a", "prep", 1, 1, 0)
	train := b.submitAfter(t, "a", "train", false, map[string]store.JobKey{"prep": prep})
	publish := b.submitAfter(t, "a", "publish", false, map[string]store.JobKey{"train": train})
	notify := b.submitAfter(t, "a", "notify", true, map[string]store.JobKey{"train": train})
	require.Eventually(t, func() bool { return b.admitted(t, prep) }, 10*time.Second, 10*time.Millisecond)
	var q map[string]job.QueueInfo
	require.Eventually(t, func() bool {
		q, _, err = b.store.QueueGet(b.ctx, "a")
		require.NoError(t, err)
		return q[train.UID].BlockedBy == "prep" && q[publish.UID].BlockedBy == "train"
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, job.WaitDependency, q[train.UID].Reason)
	require.Equal(t, "waits for job prep to succeed", q[train.UID].Message)
	require.False(t, b.admitted(t, train))

	finish(t, b, prep, job.Succeeded, "dataset=gs://d/7")
	require.Eventually(t, func() bool { return b.admitted(t, train) }, 10*time.Second, 10*time.Millisecond, "woken by prep's end")
	w, err := b.store.JobLoad(b.ctx, "a", train.UID)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"dataset": "gs://d/7"}, w.Job.Status.Dependencies[0].Outputs)
	require.False(t, b.admitted(t, publish))

	// Preempted and requeued after prep is deleted, train returns to the
	// queue like any job: its dependencies gated its first admission only.
	require.NoError(t, b.store.JobDelete(b.ctx, "a", "prep"))
	claimed, err := b.store.JobClaim(b.ctx, "test-worker", 100, time.Hour)
	require.NoError(t, err)
	require.Contains(t, store.KeysOf(claimed), train)
	w, err = b.store.JobLoad(b.ctx, "a", train.UID)
	require.NoError(t, err)
	st := w.Job.Status
	st.State = job.Queued
	_, err = b.store.JobSave(b.ctx, store.JobSaveParams{WorkerID: "test-worker", Tenant: "a", UID: train.UID,
		Version: w.Version, Status: st, Requeue: &store.Requeue{}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.admitted(t, train) }, 10*time.Second, 10*time.Millisecond, "admitted again")

	finish(t, b, train, job.Failed, "")
	var p, n store.WorkerJob
	require.Eventually(t, func() bool {
		p, err = b.store.JobLoad(b.ctx, "a", publish.UID)
		require.NoError(t, err)
		n, err = b.store.JobLoad(b.ctx, "a", notify.UID)
		require.NoError(t, err)
		return p.Job.Status.State.Final() && n.Job.Status.State.Final()
	}, 10*time.Second, 10*time.Millisecond, "woken by train's failure")
	require.Equal(t, job.Failed, p.Job.Status.State)
	require.Equal(t, job.ReasonDependencyFailed, p.Job.Status.Reason)
	require.Equal(t, "dependency train ended FAILED; it can no longer succeed", p.Job.Status.Message)
	require.Equal(t, job.Cancelled, n.Job.Status.State, "onDependencyFailure CANCEL")
	require.False(t, p.Admitted)
}
