package job_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

func suspend(b *jobBuilder) *jobBuilder {
	b.in.Job.Status.SuspendRequested = true
	return b
}

func TestPlanSuspend(t *testing.T) {
	running := func() *jobBuilder { return chiefWorkersPS().state(job.Running).restarts(2).observe(allRunning()...) }
	allPods := []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)}
	runTable(t, map[string]struct {
		in   job.PlanInput
		want want
	}{
		"suspend requested: every pod is deleted, the job stays RUNNING until they are gone": {
			in:   suspend(running()).obj(),
			want: want{State: job.Running, Restarts: 2, Actions: allPods},
		},
		"suspend requested, pods gone: SUSPENDED, restarts unchanged": {
			in: suspend(running()).nothingLeft().obj(),
			want: want{State: job.Suspended, Reason: job.ReasonSuspended, Restarts: 2,
				Message: "suspended; its pods are stopped and its resources released", Events: []string{"Normal/Suspended"}},
		},
		"preempted and suspended: suspended wins once the pods are gone": {
			in: suspend(preempt(running())).nothingLeft().obj(),
			want: want{State: job.Suspended, Reason: job.ReasonSuspended, Restarts: 2,
				Message: "suspended; its pods are stopped and its resources released", Events: []string{"Normal/Suspended"}},
		},
		"suspended while being cancelled: the cancel wins": {
			in: suspend(running()).cancel().obj(),
			want: want{State: job.Cancelled, Reason: job.ReasonCancelled, Restarts: 2,
				Actions: allPods, Events: []string{"Normal/Cancelled"}},
		},
		"suspended: nothing to do": {
			in:   suspend(chiefWorkersPS().state(job.Suspended).restarts(2)).nothingLeft().obj(),
			want: want{State: job.Suspended, Restarts: 2},
		},
	})

	t.Run("the suspension is handed to the worker as a requeue and keeps the counts", func(t *testing.T) {
		first := job.Plan(suspend(running()).obj())
		require.Equal(t, &job.Requeuing{Reason: job.ReasonSuspended, Message: "suspended by a user"}, first.Status.Requeuing)
		b := suspend(running()).nothingLeft()
		b.in.Job.Status = first.Status
		second := job.Plan(b.obj())
		require.Equal(t, job.Suspended, second.Status.State)
		require.Equal(t, job.ReasonSuspended, second.Requeued.Reason)
		require.Nil(t, second.Status.Requeuing)
		require.EqualValues(t, 0, second.Status.Requeues, "a suspension is not a requeue")
		require.EqualValues(t, 2, second.Status.Restarts)
		for _, c := range second.Status.Conditions {
			switch c.Type {
			case job.CondSuspended:
				require.True(t, c.Status)
			case job.CondAdmitted, job.CondQueued, job.CondRunning:
				require.False(t, c.Status, c.Type)
			}
		}
	})

	t.Run("resumed before the pods were gone: back in the queue", func(t *testing.T) {
		first := job.Plan(suspend(running()).obj())
		b := running().nothingLeft()
		b.in.Job.Status = first.Status
		b.in.Job.Status.SuspendRequested = false
		second := job.Plan(b.obj())
		require.Equal(t, job.Queued, second.Status.State)
		require.EqualValues(t, 2, second.Status.Restarts)
	})
}
