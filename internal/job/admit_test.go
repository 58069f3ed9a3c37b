package job_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainyard/trainyard/internal/job"
)

func TestWait(t *testing.T) {
	queued := job.Status{State: job.Queued, Conditions: []job.Condition{
		{Type: job.CondQueued, Status: true, Reason: "Submitted", LastTransitionTime: started},
	}}
	first, events := job.Wait(queued, job.WaitQuota, "needs 4 GPUs, 6 of 8 in use", t0)
	wantCond := job.Condition{Type: job.CondAdmitted, Status: false, Reason: job.ReasonQuotaExceeded,
		Message: "needs 4 GPUs, 6 of 8 in use", LastTransitionTime: t0}
	if diff := cmp.Diff(append(queued.Conditions[:1:1], wantCond), first.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if len(events) != 1 || events[0].Reason != job.ReasonWaiting || events[0].Message != "QUOTA: needs 4 GPUs, 6 of 8 in use" {
		t.Errorf("want one Waiting event, got %v", events)
	}

	// Same wait, new usage: the message follows, no event, same transition time.
	later := t0.Add(time.Minute)
	second, events := job.Wait(first, job.WaitQuota, "needs 4 GPUs, 5 of 8 in use", later)
	if len(events) != 0 {
		t.Errorf("message change emitted events: %v", events)
	}
	if c := second.Conditions[1]; c.Message != "needs 4 GPUs, 5 of 8 in use" || !c.LastTransitionTime.Equal(t0) {
		t.Errorf("condition after a message change: %+v", c)
	}
	// Same message: nothing changes at all.
	third, events := job.Wait(second, job.WaitQuota, "needs 4 GPUs, 5 of 8 in use", later.Add(time.Minute))
	if diff := cmp.Diff(second, third); diff != "" || len(events) != 0 {
		t.Errorf("unchanged wait changed the status (-want +got):\n%s, events %v", diff, events)
	}
	// Another reason: a new transition and an event.
	fourth, events := job.Wait(third, job.WaitCapacity, "needs 4 GPUs, 2 free in the cluster", later.Add(2*time.Minute))
	if c := fourth.Conditions[1]; c.Reason != "InsufficientCapacity" || !c.LastTransitionTime.Equal(later.Add(2*time.Minute)) || len(events) != 1 {
		t.Errorf("reason change: %+v, events %v", c, events)
	}
}

// Admission writes the status of the pass that starts the job, so that the
// worker's first pass — the admitted job, no pods yet, later — creates
// every pod and changes nothing in the status: no save before the creates.
func TestAdmitLeavesTheFirstPassNothingToSave(t *testing.T) {
	for name, b := range map[string]*jobBuilder{
		"chief, workers, PS, TensorBoard": chiefWorkersPS().tensorBoard(),
		"with a deadline":                 chiefWorkersPS().deadline(600),
		"after an unschedulable requeue":  requeuedUnschedulable(),
	} {
		t.Run(name, func(t *testing.T) {
			in := b.obj()
			queued := in.Job
			before, _ := json.Marshal(queued.Status)
			st, events, ok := job.Admit(queued, t0)
			if !ok || st.State != job.Starting || st.StartTime == nil || !st.StartTime.Equal(t0) || st.Requeuing != nil {
				t.Fatalf("admitted status: state %s, start %v, requeuing %v", st.State, st.StartTime, st.Requeuing)
			}
			want := []job.EventDraft{{Type: job.EventNormal, Reason: job.ReasonAdmitted, Message: "Admitted; starting 4 replicas"}}
			if diff := cmp.Diff(want, events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if after, _ := json.Marshal(queued.Status); string(after) != string(before) {
				t.Errorf("Admit wrote into its input: %s", after)
			}

			in.Job.Status = st
			in.Now = t0.Add(300 * time.Millisecond)
			in.UnschedulableTimeout = time.Minute
			first := job.Plan(in)
			if diff := cmp.Diff(st, first.Status); diff != "" {
				t.Errorf("the first pass changed the admitted status (-admitted +pass):\n%s", diff)
			}
			if len(first.Events) != 0 {
				t.Errorf("the first pass emitted %v", first.Events)
			}
			var creates int
			for _, a := range first.Actions {
				if a.Kind == job.ActCreatePod {
					creates++
				}
			}
			if creates != 4 {
				t.Errorf("the first pass creates %d pods, want 4: %v", creates, first.Actions)
			}
		})
	}
}

// requeuedUnschedulable is a job that went back to the queue after its pods
// stayed unschedulable, as that requeue's pass left it.
func requeuedUnschedulable() *jobBuilder {
	b := chiefWorkersPS().state(job.Starting)
	b.in.Job.Status.Conditions = append(b.in.Job.Status.Conditions, job.Condition{
		Type: job.CondUnschedulable, Status: true, Reason: job.ReasonUnschedulable, Message: "chief-0: no room", LastTransitionTime: t0.Add(-6 * time.Minute)})
	b.in.UnschedulableTimeout = 5 * time.Minute
	res := job.Plan(b.obj())
	if res.Requeued == nil || res.Status.State != job.Queued {
		panic("the unschedulable job was not requeued")
	}
	q := chiefWorkersPS()
	q.in.Job.Status = res.Status
	return q
}

// A job requeued right after a replica's end was recorded, before any pass
// decided on it: admitting it restarts the replica (or ends the job), and
// that is the worker's decision to save, not admission's.
func TestAdmitLeavesADecisionPendingToTheWorker(t *testing.T) {
	b := chiefWorkersPS()
	b.in.Job.Status.Replicas = []job.ReplicaStatus{{
		Type: job.Worker, Index: 1, Pod: job.PodName("tj", job.Worker, 1), State: job.ReplicaFailed,
		LastTermination: &job.Termination{Attempt: 0, ExitCode: 137, Reason: "OOMKilled", FinishTime: t0.Add(-time.Minute)},
	}}
	st, events, ok := job.Admit(b.obj().Job, t0)
	if ok {
		t.Fatalf("admitted as %s with %v: the restart is the worker's to decide", st.State, events)
	}
	// The worker's pass on the admitted job makes that decision.
	in := b.obj()
	if res := job.Plan(in); res.Status.State == job.Starting || res.Status.State == job.Queued {
		t.Fatalf("the worker's pass left the job %s", res.Status.State)
	}
}
