package job_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

func preempt(b *jobBuilder) *jobBuilder {
	b.in.Preempt = &job.Preemption{By: "uid-urgent", Message: `preempted by job "urgent" (priority 900)`}
	return b
}

func TestPlanRequeue(t *testing.T) {
	running := func() *jobBuilder { return chiefWorkersPS().state(job.Running).restarts(2).observe(allRunning()...) }
	unschedulableSince := func(since time.Time) *jobBuilder {
		b := chiefWorkersPS().state(job.Starting).observe(
			pod(job.Chief, 0, job.PodPending, unschedulable("0/2 nodes are available: 2 Insufficient nvidia.com/gpu")),
			pod(job.Worker, 0, job.PodPending), pod(job.Worker, 1, job.PodPending), pod(job.PS, 0, job.PodPending))
		b.in.Job.Status.Conditions = append(b.in.Job.Status.Conditions, job.Condition{
			Type: job.CondUnschedulable, Status: true, Reason: job.ReasonUnschedulable, Message: "chief-0: no room", LastTransitionTime: since})
		b.in.UnschedulableTimeout = 5 * time.Minute
		return b
	}
	allPods := []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)}
	runTable(t, map[string]struct {
		in   job.PlanInput
		want want
	}{
		"preempted: every pod is deleted, the job stays RUNNING until they are gone": {
			in:   preempt(running()).obj(),
			want: want{State: job.Running, Restarts: 2, Actions: allPods},
		},
		"preempted, pods gone: QUEUED again, restarts unchanged": {
			in: preempt(running()).nothingLeft().obj(),
			want: want{State: job.Queued, Reason: job.ReasonPreempted, Restarts: 2,
				Message: `preempted by job "urgent" (priority 900); back in the queue`, Events: []string{"Warning/Preempted"}},
		},
		"preempted while being cancelled: the cancel wins": {
			in: preempt(running()).cancel().obj(),
			want: want{State: job.Cancelled, Reason: job.ReasonCancelled, Restarts: 2,
				Actions: allPods, Events: []string{"Normal/Cancelled"}},
		},
		"pods unschedulable for less than the timeout: wait, and look again when it passes": {
			in:   unschedulableSince(t0.Add(-4 * time.Minute)).obj(),
			want: want{State: job.Starting, RequeueAfter: time.Minute},
		},
		"pods unschedulable past the timeout: deleted, then back in the queue": {
			in:   unschedulableSince(t0.Add(-5 * time.Minute)).obj(),
			want: want{State: job.Starting, Actions: allPods},
		},
	})

	t.Run("the requeue is recorded for the worker and survives passes", func(t *testing.T) {
		first := job.Plan(preempt(running()).obj())
		require.NotNil(t, first.Status.Requeuing)
		require.Nil(t, first.Requeued)

		// Next pass: the preemption flag is gone from the input (it was only
		// needed once), the pods are gone.
		b := running().nothingLeft()
		b.in.Job.Status = first.Status
		second := job.Plan(b.obj())
		require.Equal(t, job.Queued, second.Status.State)
		require.Equal(t, &job.Requeuing{Reason: job.ReasonPreempted, Message: `preempted by job "urgent" (priority 900)`, PreemptedBy: "uid-urgent"}, second.Requeued)
		require.Nil(t, second.Status.Requeuing)
		require.Nil(t, second.Status.StartTime, "the deadline counts from the next start")
		require.EqualValues(t, 1, second.Status.Requeues)
		require.EqualValues(t, 2, second.Status.Restarts)
		conds := map[string]job.Condition{}
		for _, c := range second.Status.Conditions {
			conds[c.Type] = c
		}
		require.True(t, conds[job.CondPreempted].Status)
		require.False(t, conds[job.CondAdmitted].Status)
		require.False(t, conds[job.CondRunning].Status)
		for _, r := range second.Status.Replicas {
			require.Equal(t, job.ReplicaPending, r.State, r.Pod)
		}

		// Admitted again: pods are created anew and Preempted turns false.
		again := chiefWorkersPS().nothingLeft()
		again.in.Job.Status = second.Status
		third := job.Plan(again.obj())
		require.Equal(t, job.Starting, third.Status.State)
		require.Len(t, third.Actions, 4) // the four pods
		for _, c := range third.Status.Conditions {
			if c.Type == job.CondPreempted {
				require.False(t, c.Status)
			}
		}
	})

	t.Run("unschedulable past the timeout: requeued with its reason", func(t *testing.T) {
		b := unschedulableSince(t0.Add(-6 * time.Minute)).nothingLeft()
		first := job.Plan(b.obj())
		require.Equal(t, job.ReasonUnschedulable, first.Requeued.Reason)
		require.Contains(t, first.Requeued.Message, "stayed unschedulable for 5m0s")
		require.Equal(t, job.Queued, first.Status.State)
	})
}
