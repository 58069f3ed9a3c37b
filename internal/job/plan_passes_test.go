package job_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trainyard/trainyard/internal/job"
)

// next feeds a plan's status back as the next pass's job, as the worker
// does once it persisted it.
func next(in job.PlanInput, res job.PlanResult) job.PlanInput {
	in.Job.Status = res.Status
	return in
}

func TestPlanTerminationRecordedBeforeDecision(t *testing.T) {
	in := chiefWorkersPS().state(job.Running).observe(withPod(allRunning(), pod(job.Worker, 1, job.PodFailed, exit(137, "OOMKilled")))...).obj()

	// Pass 1: record, capture the log, decide nothing.
	res := job.Plan(in)
	want1 := job.PlanResult{
		Actions: []job.Action{captureLog(job.Worker, 1, 0)},
		Requeue: true,
	}
	if diff := cmp.Diff(want1, res, cmpopts.IgnoreFields(job.PlanResult{}, "Status"), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("pass 1 (-want +got):\n%s", diff)
	}
	w1 := res.Status.Replicas[2]
	wantW1 := job.ReplicaStatus{
		Type: job.Worker, Index: 1, Pod: "tj-worker-1", Node: "node-a", State: job.ReplicaFailed,
		LastTermination: &job.Termination{Attempt: 0, ExitCode: 137, Reason: "OOMKilled", FinishTime: t0.Add(-time.Second)},
	}
	if diff := cmp.Diff(wantW1, w1); diff != "" {
		t.Fatalf("pass 1 worker-1 (-want +got):\n%s", diff)
	}
	if res.Status.State != job.Running || res.Status.Restarts != 0 {
		t.Fatalf("pass 1 decided: state %s, restarts %d", res.Status.State, res.Status.Restarts)
	}

	// The worker fills the log tail before persisting.
	res.Status.Replicas[2].LastTermination.LogTail = "step 900\nKilled\n"

	// Pass 2: decide on what is persisted.
	in2 := next(in, res)
	res2 := job.Plan(in2)
	want2 := job.PlanResult{
		Actions: []job.Action{deletePod(job.Worker, 1, 0)},
		Events:  []job.EventDraft{{Type: job.EventWarning, Reason: job.ReasonRestarting, Message: "Restarting worker-1 after exit code 137, reason OOMKilled (restart 1 of 3)"}},
	}
	if diff := cmp.Diff(want2, res2, cmpopts.IgnoreFields(job.PlanResult{}, "Status")); diff != "" {
		t.Fatalf("pass 2 (-want +got):\n%s", diff)
	}
	w1 = res2.Status.Replicas[2]
	if w1.Restarts != 1 || w1.State != job.ReplicaPending || w1.LastTermination.LogTail != "step 900\nKilled\n" || res2.Status.Restarts != 1 || res2.Status.State != job.Restarting {
		t.Fatalf("pass 2 status: %+v, job restarts %d, state %s", w1, res2.Status.Restarts, res2.Status.State)
	}

	// Pass 2 again, as after a crash before the delete: same plan minus the
	// event, nothing counted twice.
	res2b := job.Plan(next(in2, res2))
	if diff := cmp.Diff([]job.Action{deletePod(job.Worker, 1, 0)}, res2b.Actions); diff != "" || res2b.Status.Restarts != 1 || len(res2b.Events) != 0 {
		t.Fatalf("replayed pass 2: restarts %d events %v actions diff %s", res2b.Status.Restarts, res2b.Events, diff)
	}

	// Pass 3: old pod gone, the next attempt is created.
	in3 := next(in2, res2)
	in3.Observed.Pods = without(in.Observed.Pods, job.Worker, 1)
	res3 := job.Plan(in3)
	if diff := cmp.Diff([]job.Action{createPod(job.Worker, 1, 1)}, res3.Actions); diff != "" {
		t.Fatalf("pass 3 (-want +got):\n%s", diff)
	}

	// Pass 4: it runs; the job is running again, the termination kept.
	in4 := next(in3, res3)
	in4.Observed.Pods = withPod(in.Observed.Pods, pod(job.Worker, 1, job.PodRunning, attempt(1)))
	res4 := job.Plan(in4)
	if res4.Status.State != job.Running || len(res4.Actions) != 0 || res4.Status.Replicas[2].LastTermination.ExitCode != 137 {
		t.Fatalf("pass 4: state %s actions %v replica %+v", res4.Status.State, res4.Actions, res4.Status.Replicas[2])
	}
}

func TestPlanSucceededPodRecordedWithoutCapture(t *testing.T) {
	in := chiefWorkersPS().state(job.Running).observe(withPod(allRunning(), pod(job.Chief, 0, job.PodSucceeded))...).obj()
	res := job.Plan(in)
	if len(res.Actions) != 0 || !res.Requeue || res.Status.State != job.Running {
		t.Fatalf("pass 1: actions %v requeue %v state %s", res.Actions, res.Requeue, res.Status.State)
	}
	res2 := job.Plan(next(in, res))
	if res2.Status.State != job.Succeeded {
		t.Fatalf("pass 2: state %s, want SUCCEEDED", res2.Status.State)
	}
}

func TestPlanVanishedPodCountsAsRestart(t *testing.T) {
	in := chiefWorkersPS().state(job.Running).observe(allRunning()...).obj()
	res := job.Plan(in)
	// worker-1's pod is deleted behind Trainyard's back.
	in2 := next(in, res)
	in2.Observed.Pods = without(allRunning(), job.Worker, 1)
	res2 := job.Plan(in2)
	got := res2.Status.Replicas[2].LastTermination
	if got == nil || got.Reason != job.ReasonPodMissing || got.ExitCode != job.ExitCodeNoContainer || !res2.Requeue || len(res2.Actions) != 0 {
		t.Fatalf("pass 2: termination %+v requeue %v actions %v", got, res2.Requeue, res2.Actions)
	}
	res3 := job.Plan(next(in2, res2))
	if diff := cmp.Diff([]job.Action{createPod(job.Worker, 1, 1)}, res3.Actions); diff != "" || res3.Status.Restarts != 1 {
		t.Fatalf("pass 3: restarts %d, actions (-want +got):\n%s", res3.Status.Restarts, diff)
	}
}

func TestPlanUnschedulable(t *testing.T) {
	in := chiefWorkersPS().state(job.Starting).observe(
		pod(job.Chief, 0, job.PodPending, unschedulable("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")),
		pod(job.Worker, 0, job.PodPending, unschedulable("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")),
		pod(job.Worker, 1, job.PodRunning), pod(job.PS, 0, job.PodRunning)).obj()

	res := job.Plan(in)
	wantCond := job.Condition{
		Type: job.CondUnschedulable, Status: true, Reason: job.ReasonUnschedulable,
		Message:            "tj-chief-0: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. (and 1 more pods)",
		LastTransitionTime: t0,
	}
	wantEvents := []job.EventDraft{{Type: job.EventWarning, Reason: job.ReasonUnschedulable, Message: wantCond.Message}}
	if diff := cmp.Diff(wantEvents, res.Events); diff != "" {
		t.Fatalf("pass 1 events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantCond, findCond(res.Status, job.CondUnschedulable)); diff != "" {
		t.Fatalf("pass 1 condition (-want +got):\n%s", diff)
	}

	// Still unschedulable a minute later with another message: the
	// condition follows, no second event, the transition time stays.
	in2 := next(in, res)
	in2.Now = t0.Add(time.Minute)
	in2.Observed.Pods[0].Unschedulable = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
	res2 := job.Plan(in2)
	if len(res2.Events) != 0 {
		t.Fatalf("pass 2 repeated events: %v", res2.Events)
	}
	wantCond.Message = "tj-chief-0: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu. (and 1 more pods)"
	if diff := cmp.Diff(wantCond, findCond(res2.Status, job.CondUnschedulable)); diff != "" {
		t.Fatalf("pass 2 condition (-want +got):\n%s", diff)
	}

	// Scheduled: cleared, transition time moves.
	in3 := next(in2, res2)
	in3.Now = t0.Add(2 * time.Minute)
	in3.Observed.Pods = allRunning()
	res3 := job.Plan(in3)
	want3 := job.Condition{Type: job.CondUnschedulable, Status: false, Reason: job.ReasonScheduled, LastTransitionTime: t0.Add(2 * time.Minute)}
	if diff := cmp.Diff(want3, findCond(res3.Status, job.CondUnschedulable)); diff != "" {
		t.Fatalf("pass 3 condition (-want +got):\n%s", diff)
	}
	if res3.Status.State != job.Running {
		t.Fatalf("pass 3 state %s, want RUNNING", res3.Status.State)
	}
}

func findCond(s job.Status, typ string) job.Condition {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return job.Condition{}
}

// TestPlanStatus checks a whole status once: replicas, counts, conditions
// and times through admission, running and success.
func TestPlanStatus(t *testing.T) {
	in := chiefWorkersPS().deadline(3600).obj()
	res := job.Plan(in)
	start := t0
	queuedSince := started.Add(-time.Minute)
	pending := func(rt job.ReplicaType, i int32) job.ReplicaStatus {
		return job.ReplicaStatus{Type: rt, Index: i, Pod: job.PodName("tj", rt, i), State: job.ReplicaPending}
	}
	want := job.Status{
		State: job.Starting, Reason: job.ReasonAdmitted, Message: "Admitted; starting 4 replicas",
		Conditions: []job.Condition{
			{Type: job.CondQueued, Status: false, Reason: job.ReasonAdmitted, LastTransitionTime: t0},
			{Type: job.CondAdmitted, Status: true, Reason: job.ReasonAdmitted, LastTransitionTime: t0},
		},
		StartTime: &start,
		ReplicaCounts: []job.ReplicaCounts{
			{Type: job.Chief, Pending: 1}, {Type: job.Worker, Pending: 2}, {Type: job.PS, Pending: 1},
		},
		Replicas: []job.ReplicaStatus{pending(job.Chief, 0), pending(job.Worker, 0), pending(job.Worker, 1), pending(job.PS, 0)},
	}
	if diff := cmp.Diff(want, res.Status); diff != "" {
		t.Fatalf("admission (-want +got):\n%s", diff)
	}
	if in.Job.Status.Conditions[0].LastTransitionTime != queuedSince || in.Job.Status.Conditions[0].Status != true {
		t.Fatalf("Plan changed its input: %+v", in.Job.Status.Conditions)
	}

	// Running, one minute later.
	in2 := next(in, res)
	in2.Now = t0.Add(time.Minute)
	in2.Observed = job.Observed{Pods: []job.ObservedPod{
		pod(job.Chief, 0, job.PodRunning), pod(job.Worker, 0, job.PodRunning), pod(job.Worker, 1, job.PodRunning), pod(job.PS, 0, job.PodRunning, func(p *job.ObservedPod) { p.Node = "node-b" }),
	}}
	res2 := job.Plan(in2)
	running := func(rt job.ReplicaType, i int32, node string) job.ReplicaStatus {
		return job.ReplicaStatus{Type: rt, Index: i, Pod: job.PodName("tj", rt, i), Node: node, State: job.ReplicaRunning}
	}
	want.State, want.Reason, want.Message = job.Running, job.ReasonRunning, "All replicas are running"
	want.Conditions = append(want.Conditions, job.Condition{Type: job.CondRunning, Status: true, Reason: job.ReasonRunning, Message: "All replicas are running", LastTransitionTime: t0.Add(time.Minute)})
	want.ReplicaCounts = []job.ReplicaCounts{{Type: job.Chief, Active: 1}, {Type: job.Worker, Active: 2}, {Type: job.PS, Active: 1}}
	want.Replicas = []job.ReplicaStatus{running(job.Chief, 0, "node-a"), running(job.Worker, 0, "node-a"), running(job.Worker, 1, "node-a"), running(job.PS, 0, "node-b")}
	if diff := cmp.Diff(want, res2.Status); diff != "" {
		t.Fatalf("running (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(59*time.Minute, res2.RequeueAfter); diff != "" {
		t.Fatalf("deadline timer (-want +got):\n%s", diff)
	}

	// The chief succeeds: recorded, then the job succeeds.
	in3 := next(in2, res2)
	in3.Now = t0.Add(2 * time.Minute)
	in3.Observed.Pods = withPod(in2.Observed.Pods, pod(job.Chief, 0, job.PodSucceeded))
	in4 := next(in3, job.Plan(in3))
	in4.Now = t0.Add(3 * time.Minute)
	res4 := job.Plan(in4)
	end := t0.Add(3 * time.Minute)
	want.State, want.Reason, want.Message = job.Succeeded, job.ReasonSucceeded, "chief-0 succeeded"
	want.CompletionTime = &end
	want.Conditions[2] = job.Condition{Type: job.CondRunning, Status: false, Reason: job.ReasonSucceeded, LastTransitionTime: end}
	want.Conditions = append(want.Conditions, job.Condition{Type: job.CondSucceeded, Status: true, Reason: job.ReasonSucceeded, Message: "chief-0 succeeded", LastTransitionTime: end})
	want.ReplicaCounts[0] = job.ReplicaCounts{Type: job.Chief, Succeeded: 1}
	want.Replicas[0] = job.ReplicaStatus{
		Type: job.Chief, Index: 0, Pod: "tj-chief-0", Node: "node-a", State: job.ReplicaSucceeded,
		LastTermination: &job.Termination{ExitCode: 0, Reason: "Completed", FinishTime: t0.Add(-time.Second)},
	}
	if diff := cmp.Diff(want, res4.Status); diff != "" {
		t.Fatalf("succeeded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]job.EventDraft{{Type: job.EventNormal, Reason: job.ReasonSucceeded, Message: "chief-0 succeeded"}}, res4.Events); diff != "" {
		t.Fatalf("succeeded events (-want +got):\n%s", diff)
	}

	// Finished: the status is frozen however the pods change.
	in5 := next(in4, res4)
	in5.Now = t0.Add(4 * time.Minute)
	in5.Observed.Pods = []job.ObservedPod{pod(job.Chief, 0, job.PodSucceeded), pod(job.PS, 0, job.PodFailed, exit(143, "Error"))}
	res5 := job.Plan(in5)
	if diff := cmp.Diff(res4.Status, res5.Status); diff != "" {
		t.Fatalf("final status changed (-want +got):\n%s", diff)
	}
}
