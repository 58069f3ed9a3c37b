package job_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainyard/trainyard/internal/job"
)

func stuck(w string) func(*job.ObservedPod) {
	return func(p *job.ObservedPod) { p.Waiting = w }
}

func TestPlanContainersWaiting(t *testing.T) {
	pull := `ImagePullBackOff: Back-off pulling image "tf:9"`
	in := chiefWorkersPS().state(job.Starting).observe(
		pod(job.Chief, 0, job.PodPending, stuck(pull)),
		pod(job.Worker, 0, job.PodPending, stuck(pull)),
		pod(job.Worker, 1, job.PodRunning), pod(job.PS, 0, job.PodRunning)).obj()

	res := job.Plan(in)
	wantCond := job.Condition{
		Type: job.CondContainersWaiting, Status: true, Reason: "ImagePullBackOff",
		Message:            `tj-chief-0: ImagePullBackOff: Back-off pulling image "tf:9" (and 1 more pods)`,
		LastTransitionTime: t0,
	}
	if diff := cmp.Diff([]job.EventDraft{{Type: job.EventWarning, Reason: "ImagePullBackOff", Message: wantCond.Message}}, res.Events); diff != "" {
		t.Fatalf("pass 1 events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantCond, findCond(res.Status, job.CondContainersWaiting)); diff != "" {
		t.Fatalf("pass 1 condition (-want +got):\n%s", diff)
	}
	if res.Status.State != job.Starting || len(res.Actions) != 0 {
		t.Fatalf("pass 1: state %s, actions %v; a stuck container changes nothing else", res.Status.State, res.Actions)
	}

	// The kubelet alternates its reason: the condition follows, no event.
	in2 := next(in, res)
	in2.Now = t0.Add(time.Minute)
	in2.Observed.Pods[0].Waiting = `ErrImagePull: rpc error: not found`
	in2.Observed.Pods[1].Waiting = ""
	res2 := job.Plan(in2)
	if len(res2.Events) != 0 {
		t.Fatalf("pass 2 repeated events: %v", res2.Events)
	}
	wantCond.Reason, wantCond.Message = "ErrImagePull", "tj-chief-0: ErrImagePull: rpc error: not found"
	if diff := cmp.Diff(wantCond, findCond(res2.Status, job.CondContainersWaiting)); diff != "" {
		t.Fatalf("pass 2 condition (-want +got):\n%s", diff)
	}

	// Everything runs: cleared, transition time moves.
	in3 := next(in2, res2)
	in3.Now = t0.Add(2 * time.Minute)
	in3.Observed.Pods = allRunning()
	res3 := job.Plan(in3)
	want3 := job.Condition{Type: job.CondContainersWaiting, Status: false, Reason: job.ReasonContainersStarting, LastTransitionTime: t0.Add(2 * time.Minute)}
	if diff := cmp.Diff(want3, findCond(res3.Status, job.CondContainersWaiting)); diff != "" {
		t.Fatalf("pass 3 condition (-want +got):\n%s", diff)
	}
}

func TestPlanNoWaitingConditionWhenNeverStuck(t *testing.T) {
	res := job.Plan(chiefWorkersPS().state(job.Running).observe(allRunning()...).obj())
	for _, c := range res.Status.Conditions {
		if c.Type == job.CondContainersWaiting {
			t.Fatalf("a condition that never held was added: %+v", c)
		}
	}
}
