package job_test

import (
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/job"
)

// Transitions out of STARTING and RESTARTING, and the deadline and TTL in
// states the other tables do not start from.
func TestPlanTransitionsFromStartingAndRestarting(t *testing.T) {
	starting := func() *jobBuilder { return chiefWorkersPS().state(job.Starting) }
	restarting := func() *jobBuilder { return chiefWorkersPS().state(job.Restarting).restarts(1) }
	pending := []job.ObservedPod{pod(job.Chief, 0, job.PodPending), pod(job.Worker, 0, job.PodPending), pod(job.Worker, 1, job.PodPending), pod(job.PS, 0, job.PodPending)}
	failedAt := func(ago time.Duration) *jobBuilder {
		b := chiefWorkersPS().ttl(60).state(job.Failed).rep(job.Chief, 0, 0, job.ReplicaFailed, term(0, 1, "Error", "boom"))
		end := t0.Add(-ago)
		b.in.Job.Status.CompletionTime = &end
		return b.observe(pod(job.Chief, 0, job.PodFailed), pod(job.Worker, 0, job.PodSucceeded))
	}
	runTable(t, map[string]struct {
		in   job.PlanInput
		want want
	}{
		"STARTING → FAILED: the chief (Never) fails before the others run": {
			in: starting().rep(job.Chief, 0, 0, job.ReplicaFailed, term(0, 1, "Error", "boom")).
				observe(withPod(pending, pod(job.Chief, 0, job.PodFailed))...).obj(),
			want: want{State: job.Failed, Reason: "ReplicaFailed",
				Actions: []job.Action{deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Warning/ReplicaFailed"}},
		},
		"STARTING → SUCCEEDED: the chief succeeds while a worker still waits": {
			in: starting().rep(job.Chief, 0, 0, job.ReplicaSucceeded, term(0, 0, "Completed", "")).
				observe(withPod(withPod(allRunning(), pod(job.Chief, 0, job.PodSucceeded)), pod(job.Worker, 1, job.PodPending))...).obj(),
			want: want{State: job.Succeeded, Reason: job.ReasonSucceeded,
				Actions: []job.Action{deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Normal/JobSucceeded"}},
		},
		"STARTING → RESTARTING: a worker (OnFailure) fails before all run": {
			in: starting().rep(job.Worker, 0, 0, job.ReplicaFailed, term(0, 1, "Error", "boom")).
				observe(withPod(pending, pod(job.Worker, 0, job.PodFailed))...).obj(),
			want: want{State: job.Restarting, Reason: "Restarting", Restarts: 1,
				Actions: []job.Action{deletePod(job.Worker, 0, 0)}, Events: []string{"Warning/Restarting"}},
		},
		"RESTARTING → SUCCEEDED: the chief succeeds while a worker is being replaced": {
			in: restarting().rep(job.Chief, 0, 0, job.ReplicaSucceeded, term(0, 0, "Completed", "")).
				observe(withPod(without(allRunning(), job.Worker, 1), pod(job.Chief, 0, job.PodSucceeded))...).obj(),
			want: want{State: job.Succeeded, Reason: job.ReasonSucceeded, Restarts: 1,
				Actions: []job.Action{deletePod(job.Worker, 0, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Normal/JobSucceeded"}},
		},
		"STARTING past the deadline (pods never scheduled): FAILED, pods deleted": {
			in: starting().deadline(600).observe(pending...).now(started.Add(600 * time.Second)).obj(),
			want: want{State: job.Failed, Reason: job.ReasonDeadlineExceeded,
				Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Warning/DeadlineExceeded"}},
		},
		"RESTARTING past the deadline: FAILED, no replacement created": {
			in: restarting().deadline(600).observe(without(allRunning(), job.Worker, 1)...).now(started.Add(600 * time.Second)).obj(),
			want: want{State: job.Failed, Reason: job.ReasonDeadlineExceeded, Restarts: 1,
				Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Warning/DeadlineExceeded"}},
		},
		"FAILED, TTL not yet due: kept, timer at the TTL": {
			in:   failedAt(30 * time.Second).obj(),
			want: want{State: job.Failed, Actions: []job.Action{}, RequeueAfter: 30 * time.Second},
		},
		"FAILED, TTL due: everything deleted": {
			in:   failedAt(2 * time.Minute).obj(),
			want: want{State: job.Failed, Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0)}},
		},
	})
}
