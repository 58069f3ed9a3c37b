package job_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainyard/trainyard/internal/job"
)

func TestPlanPhases(t *testing.T) {
	chiefDone := term(0, 0, "Completed", "")
	runTable(t, map[string]struct {
		in   job.PlanInput
		want want
	}{
		"queued, not admitted: nothing to do": {
			in:   chiefWorkersPS().notAdmitted().obj(),
			want: want{State: job.Queued},
		},
		"admitted: starting, creates the service, every pod in type order, then tensorboard": {
			in: chiefWorkersPS().tensorBoard().obj(),
			want: want{
				State: job.Starting, Reason: job.ReasonAdmitted, Message: "Admitted; starting 4 replicas",
				Actions: []job.Action{createPod(job.Chief, 0, 0), createPod(job.Worker, 0, 0), createPod(job.Worker, 1, 0), createPod(job.PS, 0, 0), createTB},
				Events:  []string{"Normal/Admitted"},
			},
		},
		"admitted with a deadline: the timer is set to the whole deadline": {
			in: chiefWorkersPS().deadline(600).obj(),
			want: want{
				State: job.Starting, Reason: job.ReasonAdmitted,
				Actions:      []job.Action{createPod(job.Chief, 0, 0), createPod(job.Worker, 0, 0), createPod(job.Worker, 1, 0), createPod(job.PS, 0, 0)},
				Events:       []string{"Normal/Admitted"},
				RequeueAfter: 600 * time.Second,
			},
		},
		"starting, pods pending: stays starting": {
			in: chiefWorkersPS().state(job.Starting).observe(
				pod(job.Chief, 0, job.PodPending), pod(job.Worker, 0, job.PodPending), pod(job.Worker, 1, job.PodRunning), pod(job.PS, 0, job.PodPending)).obj(),
			want: want{State: job.Starting},
		},
		"starting after a crash: creates only the missing pods and service": {
			in: chiefWorkersPS().state(job.Starting).observe(pod(job.Chief, 0, job.PodRunning), pod(job.Worker, 0, job.PodPending)).obj(),
			want: want{
				State:   job.Starting,
				Actions: []job.Action{createPod(job.Worker, 1, 0), createPod(job.PS, 0, 0)},
			},
		},
		"starting → running when every pod runs": {
			in:   chiefWorkersPS().state(job.Starting).observe(allRunning()...).obj(),
			want: want{State: job.Running, Reason: job.ReasonRunning, Events: []string{"Normal/JobRunning"}},
		},
		"running, steady: no actions, no events": {
			in:   chiefWorkersPS().state(job.Running).observe(allRunning()...).obj(),
			want: want{State: job.Running},
		},
		"running, a pod in phase Unknown: still running": {
			in:   chiefWorkersPS().state(job.Running).observe(withPod(allRunning(), pod(job.PS, 0, job.PodUnknown))...).obj(),
			want: want{State: job.Running},
		},
		"running → succeeded (chief): running pods and service cleaned": {
			in: chiefWorkersPS().state(job.Running).rep(job.Chief, 0, 0, job.ReplicaSucceeded, chiefDone).
				observe(withPod(allRunning(), pod(job.Chief, 0, job.PodSucceeded))...).obj(),
			want: want{
				State: job.Succeeded, Reason: job.ReasonSucceeded, Message: "chief-0 succeeded",
				Actions: []job.Action{deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Normal/JobSucceeded"},
			},
		},
		"ChiefOrWorker0 without a chief: worker-0 decides": {
			in: newJob(replicaSpec(job.Worker, 2, job.RestartNever), replicaSpec(job.PS, 1, job.RestartNever)).state(job.Running).
				rep(job.Worker, 0, 0, job.ReplicaSucceeded, chiefDone).
				observe(pod(job.Worker, 0, job.PodSucceeded), pod(job.Worker, 1, job.PodRunning), pod(job.PS, 0, job.PodRunning)).obj(),
			want: want{
				State: job.Succeeded, Reason: job.ReasonSucceeded, Message: "worker-0 succeeded",
				Actions: []job.Action{deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Normal/JobSucceeded"},
			},
		},
		"ChiefOrWorker0 with a chief: worker-0 done is not the job done": {
			in: chiefWorkersPS().state(job.Running).rep(job.Worker, 0, 0, job.ReplicaSucceeded, chiefDone).
				observe(withPod(allRunning(), pod(job.Worker, 0, job.PodSucceeded))...).obj(),
			want: want{State: job.Running},
		},
		"AllWorkers: chief done, a worker still running: continues": {
			in: chiefWorkersPS().success(job.SuccessAllWorkers).state(job.Running).
				rep(job.Chief, 0, 0, job.ReplicaSucceeded, chiefDone).rep(job.Worker, 0, 0, job.ReplicaSucceeded, chiefDone).
				observe(withPod(withPod(allRunning(), pod(job.Chief, 0, job.PodSucceeded)), pod(job.Worker, 0, job.PodSucceeded))...).obj(),
			want: want{State: job.Running},
		},
		"AllWorkers: chief and every worker done → succeeded": {
			in: chiefWorkersPS().success(job.SuccessAllWorkers).state(job.Running).
				rep(job.Chief, 0, 0, job.ReplicaSucceeded, chiefDone).rep(job.Worker, 0, 0, job.ReplicaSucceeded, chiefDone).rep(job.Worker, 1, 0, job.ReplicaSucceeded, chiefDone).
				observe(pod(job.Chief, 0, job.PodSucceeded), pod(job.Worker, 0, job.PodSucceeded), pod(job.Worker, 1, job.PodSucceeded), pod(job.PS, 0, job.PodRunning)).obj(),
			want: want{
				State: job.Succeeded, Reason: job.ReasonSucceeded, Message: "All workers succeeded",
				Actions: []job.Action{deletePod(job.PS, 0, 0)},
				Events:  []string{"Normal/JobSucceeded"},
			},
		},
		"running → failed: the chief failed under Never": {
			in: chiefWorkersPS().state(job.Running).rep(job.Chief, 0, 0, job.ReplicaFailed, term(0, 2, "Error", "loading data\nValueError: bad shape\n")).
				observe(withPod(allRunning(), pod(job.Chief, 0, job.PodFailed, exit(2, "Error")))...).obj(),
			want: want{
				State: job.Failed, Reason: job.ReasonReplicaFailed,
				Message: "chief-0 failed with exit code 2, reason Error; restart policy Never does not restart it; last log lines:\nloading data\nValueError: bad shape",
				Actions: []job.Action{deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Warning/ReplicaFailed"},
			},
		},
		"a succeeded replica whose pod vanished mid-run is not recreated": {
			in: chiefWorkersPS().state(job.Running).rep(job.Worker, 1, 0, job.ReplicaSucceeded, chiefDone).
				observe(without(allRunning(), job.Worker, 1)...).obj(),
			want: want{State: job.Running},
		},
		"a running pod that vanished is recorded as PodMissing, decided next pass": {
			in: chiefWorkersPS().state(job.Running).rep(job.Worker, 1, 0, job.ReplicaRunning, nil).
				observe(without(allRunning(), job.Worker, 1)...).obj(),
			want: want{State: job.Running, Requeue: true},
		},
		"a pending pod that vanished is simply recreated": {
			in: chiefWorkersPS().state(job.Starting).rep(job.Worker, 1, 0, job.ReplicaPending, nil).
				observe(without(allRunning(), job.Worker, 1)...).obj(),
			want: want{State: job.Starting, Actions: []job.Action{createPod(job.Worker, 1, 0)}},
		},
		"a pod of the job that is no replica of it is deleted": {
			in:   chiefWorkersPS().state(job.Running).observe(append(allRunning(), pod(job.Worker, 7, job.PodRunning))...).obj(),
			want: want{State: job.Running, Actions: []job.Action{deletePod(job.Worker, 7, 0)}},
		},
		"tensorboard service missing: recreated": {
			in: func() job.PlanInput {
				b := chiefWorkersPS().tensorBoard().state(job.Running).observe(allRunning()...)
				b.in.Observed.TensorBoardSvc = false
				return b.obj()
			}(),
			want: want{State: job.Running, Actions: []job.Action{createTB}},
		},
	})
}

func TestPlanRestartPolicies(t *testing.T) {
	// worker-1 of a running chief + 2 workers job ended as recorded by an
	// earlier pass; policy and exit code vary.
	mk := func(rp job.RestartPolicy, codes ...int32) *jobBuilder {
		return newJob(replicaSpec(job.Chief, 1, job.RestartNever), replicaSpec(job.Worker, 2, rp, codes...)).state(job.Running)
	}
	running := []job.ObservedPod{pod(job.Chief, 0, job.PodRunning), pod(job.Worker, 0, job.PodRunning)}
	failedWith := func(b *jobBuilder, code int32, reason string) job.PlanInput {
		return b.rep(job.Worker, 1, 0, job.ReplicaFailed, term(0, code, reason, "")).
			observe(append(running, pod(job.Worker, 1, job.PodFailed, exit(code, reason)))...).obj()
	}
	restarted := func(msg string) want {
		return want{
			State: job.Restarting, Reason: job.ReasonRestarting, Message: msg, Restarts: 1,
			Actions: []job.Action{deletePod(job.Worker, 1, 0)},
			Events:  []string{"Warning/Restarting"},
		}
	}
	failed := func(msg string) want {
		return want{
			State: job.Failed, Reason: job.ReasonReplicaFailed, Message: msg,
			Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0)},
			Events:  []string{"Warning/ReplicaFailed"},
		}
	}
	runTable(t, map[string]struct {
		in   job.PlanInput
		want want
	}{
		"Never: failure fails the job": {
			in:   failedWith(mk(job.RestartNever), 1, "Error"),
			want: failed("worker-1 failed with exit code 1, reason Error; restart policy Never does not restart it"),
		},
		"OnFailure: failure restarts": {
			in:   failedWith(mk(job.RestartOnFailure), 1, "Error"),
			want: restarted("Restarting worker-1 after exit code 1, reason Error (restart 1 of 3)"),
		},
		"OnFailure: success is not restarted": {
			in: mk(job.RestartOnFailure).rep(job.Worker, 1, 0, job.ReplicaSucceeded, term(0, 0, "Completed", "")).
				observe(append(running, pod(job.Worker, 1, job.PodSucceeded))...).obj(),
			want: want{State: job.Running},
		},
		"ExitCode: a signal (137) is retryable": {
			in:   failedWith(mk(job.RestartExitCode), 137, "OOMKilled"),
			want: restarted("Restarting worker-1 after exit code 137, reason OOMKilled (restart 1 of 3)"),
		},
		"ExitCode: 1 is permanent": {
			in:   failedWith(mk(job.RestartExitCode), 1, "Error"),
			want: failed("worker-1 failed with exit code 1, reason Error; restart policy ExitCode does not restart it"),
		},
		"ExitCode: a listed code is retryable": {
			in:   failedWith(mk(job.RestartExitCode, 3, 75), 75, "Error"),
			want: restarted("Restarting worker-1 after exit code 75, reason Error (restart 1 of 3)"),
		},
		"ExitCode: with a list, a signal not in it is permanent": {
			in:   failedWith(mk(job.RestartExitCode, 3, 75), 137, "OOMKilled"),
			want: failed("worker-1 failed with exit code 137, reason OOMKilled; restart policy ExitCode does not restart it"),
		},
		"ExitCode: an eviction (no exit code) is retryable, list or not": {
			in:   failedWith(mk(job.RestartExitCode, 3), job.ExitCodeNoContainer, "Evicted"),
			want: restarted("Restarting worker-1 after exit code -1, reason Evicted (restart 1 of 3)"),
		},
		"Always: success restarts while the job runs": {
			in: mk(job.RestartAlways).rep(job.Worker, 1, 0, job.ReplicaSucceeded, term(0, 0, "Completed", "")).
				observe(append(running, pod(job.Worker, 1, job.PodSucceeded))...).obj(),
			want: restarted("Restarting worker-1 after exit code 0, reason Completed (restart 1 of 3)"),
		},
		"Always: the chief's success still ends the job": {
			in: newJob(replicaSpec(job.Chief, 1, job.RestartAlways), replicaSpec(job.Worker, 1, job.RestartAlways)).state(job.Running).
				rep(job.Chief, 0, 0, job.ReplicaSucceeded, term(0, 0, "Completed", "")).
				observe(pod(job.Chief, 0, job.PodSucceeded), pod(job.Worker, 0, job.PodRunning)).obj(),
			want: want{
				State: job.Succeeded, Reason: job.ReasonSucceeded,
				Actions: []job.Action{deletePod(job.Worker, 0, 0)}, Events: []string{"Normal/JobSucceeded"},
			},
		},
		"restart when the failed pod is already gone: create the next attempt at once": {
			in: mk(job.RestartOnFailure).rep(job.Worker, 1, 0, job.ReplicaFailed, term(0, 1, "Error", "")).observe(running...).obj(),
			want: want{
				State: job.Restarting, Reason: job.ReasonRestarting, Restarts: 1,
				Actions: []job.Action{createPod(job.Worker, 1, 1)},
				Events:  []string{"Warning/Restarting"},
			},
		},
	})
}

func TestPlanBackoffLimit(t *testing.T) {
	mk := func() *jobBuilder {
		return newJob(replicaSpec(job.Chief, 1, job.RestartNever), replicaSpec(job.Worker, 2, job.RestartOnFailure)).state(job.Restarting)
	}
	running := []job.ObservedPod{pod(job.Chief, 0, job.PodRunning), pod(job.Worker, 0, job.PodRunning, attempt(2))}
	tail := "l1\nl2\nl3\nl4\nl5\nl6\nCUDA error: out of memory\n"
	runTable(t, map[string]struct {
		in   job.PlanInput
		want want
	}{
		"one restart left: restarts (3 of 3)": {
			in: mk().restarts(2).rep(job.Worker, 0, 2, job.ReplicaRunning, nil).rep(job.Worker, 1, 0, job.ReplicaFailed, term(0, 1, "Error", "")).
				observe(append(running, pod(job.Worker, 1, job.PodFailed))...).obj(),
			want: want{
				State: job.Restarting, Reason: job.ReasonRestarting, Restarts: 3,
				Message: "Restarting worker-1 after exit code 1, reason Error (restart 3 of 3)",
				Actions: []job.Action{deletePod(job.Worker, 1, 0)},
				Events:  []string{"Warning/Restarting"},
			},
		},
		"exactly at the limit: fails with the log tail": {
			in: mk().restarts(3).rep(job.Worker, 0, 3, job.ReplicaRunning, nil).rep(job.Worker, 1, 0, job.ReplicaFailed, term(0, 137, "OOMKilled", tail)).
				observe(pod(job.Chief, 0, job.PodRunning), pod(job.Worker, 0, job.PodRunning, attempt(3)), pod(job.Worker, 1, job.PodFailed, exit(137, "OOMKilled"))).obj(),
			want: want{
				State: job.Failed, Reason: job.ReasonBackoffLimitExceeded, Restarts: 3,
				Message: "worker-1 ended with exit code 137, reason OOMKilled; backoff limit reached (3 of 3 restarts used); last log lines:\nl3\nl4\nl5\nl6\nCUDA error: out of memory",
				Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 3)},
				Events:  []string{"Warning/BackoffLimitExceeded"},
			},
		},
		"BackoffLimit 0: the first failure fails the job": {
			in: mk().backoff(0).rep(job.Worker, 1, 0, job.ReplicaFailed, term(0, 1, "Error", "")).
				observe(pod(job.Chief, 0, job.PodRunning), pod(job.Worker, 0, job.PodRunning), pod(job.Worker, 1, job.PodFailed)).obj(),
			want: want{
				State: job.Failed, Reason: job.ReasonBackoffLimitExceeded,
				Message: "worker-1 ended with exit code 1, reason Error; backoff limit reached (0 of 0 restarts used)",
				Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0)},
				Events:  []string{"Warning/BackoffLimitExceeded"},
			},
		},
		"two failures, one restart left: the job fails and no restart is counted": {
			in: mk().restarts(2).rep(job.Worker, 0, 2, job.ReplicaFailed, term(2, 1, "Error", "")).rep(job.Worker, 1, 0, job.ReplicaFailed, term(0, 1, "Error", "")).
				observe(pod(job.Chief, 0, job.PodRunning), pod(job.Worker, 0, job.PodFailed, attempt(2)), pod(job.Worker, 1, job.PodFailed)).obj(),
			want: want{
				State: job.Failed, Reason: job.ReasonBackoffLimitExceeded, Restarts: 2,
				Message: "worker-1 ended with exit code 1, reason Error; backoff limit reached (3 of 3 restarts used)",
				Actions: []job.Action{deletePod(job.Chief, 0, 0)},
				Events:  []string{"Warning/BackoffLimitExceeded"},
			},
		},
		"two failures, enough restarts: both restart, each counted": {
			in: mk().state(job.Running).rep(job.Worker, 0, 0, job.ReplicaFailed, term(0, 1, "Error", "")).rep(job.Worker, 1, 0, job.ReplicaFailed, term(0, 1, "Error", "")).
				observe(pod(job.Chief, 0, job.PodRunning), pod(job.Worker, 0, job.PodFailed), pod(job.Worker, 1, job.PodFailed)).obj(),
			want: want{
				State: job.Restarting, Reason: job.ReasonRestarting, Restarts: 2,
				Actions: []job.Action{deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0)},
				Events:  []string{"Warning/Restarting", "Warning/Restarting"},
			},
		},
	})
}

func TestPlanRestartIdempotent(t *testing.T) {
	// The restart of worker-1 (attempt 0 → 1) is persisted; the worker may
	// have crashed before or after deleting the old pod.
	mk := func() *jobBuilder {
		return chiefWorkersPS().state(job.Restarting).restarts(1).rep(job.Worker, 1, 1, job.ReplicaPending, term(0, 1, "Error", "boom"))
	}
	others := without(allRunning(), job.Worker, 1)
	runTable(t, map[string]struct {
		in   job.PlanInput
		want want
	}{
		"old attempt still there after a crash: deleted, not counted again": {
			in:   mk().observe(append(others, pod(job.Worker, 1, job.PodFailed))...).obj(),
			want: want{State: job.Restarting, Restarts: 1, Actions: []job.Action{deletePod(job.Worker, 1, 0)}},
		},
		"old attempt deleting: wait": {
			in:   mk().observe(append(others, pod(job.Worker, 1, job.PodFailed, deleting))...).obj(),
			want: want{State: job.Restarting, Restarts: 1},
		},
		// A worker killed in the middle of its DELETE: the API server
		// marked the pod (no grace period) but never removed it.
		"old attempt's delete cut short: wait, and look again when it is stalled": {
			in:   mk().observe(append(others, pod(job.Worker, 1, job.PodFailed, deletedAt(t0.Add(-time.Second))))...).obj(),
			want: want{State: job.Restarting, Restarts: 1, RequeueAfter: job.StalledDeleteAfter - time.Second},
		},
		"a stalled delete due before the deadline: looked at again for the delete first": {
			in:   mk().deadline(900).observe(append(others, pod(job.Worker, 1, job.PodFailed, deletedAt(t0.Add(-time.Second))))...).obj(),
			want: want{State: job.Restarting, Restarts: 1, RequeueAfter: job.StalledDeleteAfter - time.Second},
		},
		"old attempt's delete stalled: deleted again": {
			in:   mk().observe(append(others, pod(job.Worker, 1, job.PodFailed, deletedAt(t0.Add(-job.StalledDeleteAfter))))...).obj(),
			want: want{State: job.Restarting, Restarts: 1, Actions: []job.Action{deletePod(job.Worker, 1, 0)}},
		},
		"a pod of an older attempt still running: deleted": {
			in:   mk().observe(append(others, pod(job.Worker, 1, job.PodRunning))...).obj(),
			want: want{State: job.Restarting, Restarts: 1, Actions: []job.Action{deletePod(job.Worker, 1, 0)}},
		},
		"old attempt gone: the new attempt is created": {
			in:   mk().observe(others...).obj(),
			want: want{State: job.Restarting, Restarts: 1, Actions: []job.Action{createPod(job.Worker, 1, 1)}},
		},
		"new attempt pending: still restarting": {
			in:   mk().observe(append(others, pod(job.Worker, 1, job.PodPending, attempt(1)))...).obj(),
			want: want{State: job.Restarting, Restarts: 1},
		},
		"new attempt running: running again": {
			in: mk().observe(append(others, pod(job.Worker, 1, job.PodRunning, attempt(1)))...).obj(),
			want: want{
				State: job.Running, Reason: job.ReasonRunning, Restarts: 1,
				Events: []string{"Normal/JobRunning"},
			},
		},
	})
}

func TestPlanQueuedLeavesStatusAlone(t *testing.T) {
	in := chiefWorkersPS().notAdmitted().obj()
	in.Job.Status.Conditions = append(in.Job.Status.Conditions, job.Condition{Type: job.CondAdmitted, Status: false, Reason: "QuotaExceeded", Message: "needs 8 GPUs, 2 free"})
	res := job.Plan(in)
	if diff := cmp.Diff(job.PlanResult{Status: in.Job.Status}, res); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestPlanDeterministic(t *testing.T) {
	// A busy pass: a restart, a stale pod, a stray, a missing pod, a
	// recorded termination and an unschedulable pod.
	pods := []job.ObservedPod{
		pod(job.Worker, 3, job.PodFailed, attempt(1)),
		pod(job.PS, 1, job.PodPending, unschedulable("no nodes")),
		pod(job.Worker, 0, job.PodFailed),
		pod(job.Evaluator, 0, job.PodRunning),
		pod(job.Worker, 9, job.PodRunning),
		pod(job.Chief, 0, job.PodRunning),
		pod(job.Worker, 2, job.PodRunning),
		pod(job.PS, 0, job.PodRunning),
	}
	in := newJob(
		replicaSpec(job.Evaluator, 1, job.RestartNever), replicaSpec(job.PS, 2, job.RestartNever),
		replicaSpec(job.Worker, 4, job.RestartOnFailure), replicaSpec(job.Chief, 1, job.RestartNever),
	).state(job.Running).restarts(1).
		rep(job.Worker, 0, 0, job.ReplicaFailed, term(0, 1, "Error", "")).
		rep(job.Worker, 3, 2, job.ReplicaPending, term(1, 1, "Error", "")).
		observe(pods...).obj()
	before := cloneStatus(t, in.Job.Status)

	want := job.Plan(in)
	wantActions := []job.Action{deletePod(job.Worker, 0, 0), createPod(job.Worker, 1, 0), deletePod(job.Worker, 3, 1), deletePod(job.Worker, 9, 0)}
	if diff := cmp.Diff(wantActions, want.Actions); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	for i := range len(pods) {
		shuffled := slices.Concat(pods[i:], pods[:i])
		slices.Reverse(shuffled)
		in2 := in
		in2.Observed.Pods = shuffled
		if diff := cmp.Diff(want, job.Plan(in2)); diff != "" {
			t.Fatalf("rotation %d changed the plan (-first +this):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff(before, in.Job.Status); diff != "" {
		t.Fatalf("Plan changed its input (-before +after):\n%s", diff)
	}
}

// cloneStatus deep-copies a status through its JSON form, the way it is
// stored.
func cloneStatus(t *testing.T, s job.Status) job.Status {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out job.Status
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
