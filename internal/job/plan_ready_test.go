package job_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trainyard/trainyard/internal/job"
)

func ready(p *job.ObservedPod) { p.Ready = true }

// probedJob is a chief without probes and two workers with a TCP readiness
// probe on the TensorFlow port.
func probedJob() *jobBuilder {
	w := replicaSpec(job.Worker, 2, job.RestartOnFailure)
	w.ReadinessProbe = &job.Probe{TCPSocket: &job.TCPSocketAction{Port: job.DefaultPort}}
	return newJob(replicaSpec(job.Chief, 1, job.RestartNever), w)
}

func TestPlanAllReplicasReady(t *testing.T) {
	// Running but not ready yet: RUNNING does not wait for readiness, and
	// a condition that never held is not added as false.
	in := probedJob().state(job.Starting).observe(
		pod(job.Chief, 0, job.PodRunning), pod(job.Worker, 0, job.PodRunning, ready), pod(job.Worker, 1, job.PodRunning)).obj()
	res := job.Plan(in)
	if res.Status.State != job.Running {
		t.Fatalf("pass 1: state %s, want RUNNING once every replica runs, ready or not", res.Status.State)
	}
	if c := findCond(res.Status, job.CondAllReplicasReady); c.Type != "" {
		t.Fatalf("pass 1: %+v; want no AllReplicasReady before it ever held", c)
	}

	// worker-1 turns ready; the chief has no readiness probe and does not count.
	in2 := next(in, res)
	in2.Now = t0.Add(5e9)
	in2.Observed.Pods[2].Ready = true
	res2 := job.Plan(in2)
	want := job.Condition{
		Type: job.CondAllReplicasReady, Status: true, Reason: job.ReasonAllReplicasReady,
		Message: "all 2 replicas with a readiness probe are ready", LastTransitionTime: in2.Now,
	}
	if diff := cmp.Diff(want, findCond(res2.Status, job.CondAllReplicasReady)); diff != "" {
		t.Fatalf("pass 2 condition (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]job.EventDraft{{Type: job.EventNormal, Reason: job.ReasonAllReplicasReady, Message: want.Message}}, res2.Events); diff != "" {
		t.Fatalf("pass 2 events (-want +got):\n%s", diff)
	}

	// A pass that changes nothing emits nothing.
	res3 := job.Plan(next(in2, res2))
	if len(res3.Events) != 0 || !findCond(res3.Status, job.CondAllReplicasReady).Status {
		t.Fatalf("pass 3: events %v, condition %+v; want no event, still ready", res3.Events, findCond(res3.Status, job.CondAllReplicasReady))
	}

	// worker-0 fails its readiness probe: the condition turns false and names it.
	in4 := next(in2, res3)
	in4.Now = t0.Add(9e9)
	in4.Observed.Pods[1].Ready = false
	res4 := job.Plan(in4)
	got := findCond(res4.Status, job.CondAllReplicasReady)
	if got.Status || got.Reason != job.ReasonReplicasNotReady || got.Message != "not ready: worker-0" || !got.LastTransitionTime.Equal(in4.Now) {
		t.Fatalf("pass 4 condition %+v; want false, ReplicasNotReady, naming worker-0, since now", got)
	}
	if res4.Status.State != job.Running {
		t.Fatalf("pass 4: state %s; an unready replica does not change the state", res4.Status.State)
	}
}

func TestPlanNoReadinessProbeNoCondition(t *testing.T) {
	in := chiefWorkersPS().state(job.Running).observe(allRunning()...).obj()
	if c := findCond(job.Plan(in).Status, job.CondAllReplicasReady); c.Type != "" {
		t.Fatalf("%+v; a job without readiness probes never gets AllReplicasReady", c)
	}
}

// A container killed by its liveness probe (exit 137, the kubelet's
// SIGKILL) ends its pod; under ExitCode it is restarted, and the restart is
// counted on the replica and against backoffLimit like any other.
func TestPlanLivenessFailureIsACountedRestart(t *testing.T) {
	w := replicaSpec(job.Worker, 2, job.RestartExitCode)
	w.LivenessProbe = &job.Probe{HTTPGet: &job.HTTPGetAction{Path: "/healthz", Port: 8080}, FailureThreshold: 3}
	b := newJob(replicaSpec(job.Chief, 1, job.RestartNever), w).state(job.Running)
	in := b.observe(pod(job.Chief, 0, job.PodRunning), pod(job.Worker, 0, job.PodRunning),
		pod(job.Worker, 1, job.PodFailed, exit(137, "Error"))).obj()

	res := job.Plan(in) // records the end and captures the log
	res2 := job.Plan(next(in, res))
	if res2.Status.State != job.Restarting || res2.Status.Restarts != 1 {
		t.Fatalf("state %s, restarts %d; want RESTARTING with 1 restart counted", res2.Status.State, res2.Status.Restarts)
	}
	if r := res2.Status.Replicas[2]; r.Type != job.Worker || r.Index != 1 || r.Restarts != 1 {
		t.Fatalf("replica %+v; want worker-1 with 1 restart", r)
	}
}
