package job

import (
	"fmt"
	"time"
)

// Sending a job back to the queue. Two things do it: the scheduler
// preempting the job for one of higher priority of its tenant
// (PlanInput.Preempt), and pods that stay unschedulable past
// PlanInput.UnschedulableTimeout (the room the scheduler saw was taken by
// something else meanwhile; Kueue's waitForPodsReady). Either way the
// job's pods are deleted — gracefully: SIGTERM and the job's grace period,
// time to write a checkpoint — and once they are gone the job is QUEUED
// again, unadmitted, with its restarts untouched (a requeue is not a
// failure), its replicas pending except those that finished for good, and
// StartTime cleared so that its deadline counts from its next start. When
// it is admitted again its pods are recreated and resume from the
// checkpoint volume.
//
//	RUNNING ──preempted / unschedulable too long──► (Requeuing: deleting pods) ──pods gone──► QUEUED
//
// Status.Requeuing carries the decision across passes; a cancel or delete
// meanwhile wins (the job ends instead).

// requeuing reports whether the job is being sent back to the queue, and
// decides to when the scheduler preempted it or its pods have been
// unschedulable for longer than the timeout.
func (p *planner) requeuing() bool {
	if p.status.Requeuing != nil {
		return true
	}
	if p.status.SuspendRequested {
		p.status.Requeuing = &Requeuing{Reason: ReasonSuspended, Message: "suspended by a user"}
		return true
	}
	if pr := p.in.Preempt; pr != nil {
		p.status.Requeuing = &Requeuing{Reason: ReasonPreempted, Message: pr.Message, PreemptedBy: pr.By}
		return true
	}
	if at, ok := p.unschedulableDeadline(); ok && !p.in.Now.Before(at) {
		c := p.condition(CondUnschedulable)
		msg := fmt.Sprintf("its pods stayed unschedulable for %s (%s)", p.in.UnschedulableTimeout, c.Message)
		p.status.Requeuing = &Requeuing{Reason: ReasonUnschedulable, Message: msg}
		return true
	}
	return false
}

// unschedulableDeadline is when a starting job whose pods are
// unschedulable goes back to the queue.
func (p *planner) unschedulableDeadline() (time.Time, bool) {
	d := p.in.UnschedulableTimeout
	if d <= 0 || (p.status.State != Starting && p.status.State != Restarting) {
		return time.Time{}, false
	}
	c := p.condition(CondUnschedulable)
	if c == nil || !c.Status {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Add(d), true
}

func (p *planner) condition(typ string) *Condition {
	for i := range p.status.Conditions {
		if p.status.Conditions[i].Type == typ {
			return &p.status.Conditions[i]
		}
	}
	return nil
}

// planRequeue deletes the job's pods and, once none is left, puts the job
// back in the queue. (The slice controller deletes the job's EndpointSlice
// once no pod is left, and writes it again for the next pods.)
func (p *planner) planRequeue() {
	p.buildReplicas()
	obs := p.in.Observed
	left := len(obs.Pods) > 0 || obs.TensorBoardPod
	for _, pod := range sortedPods(obs.Pods) {
		p.deletePod(pod)
	}
	if obs.TensorBoardPod {
		p.act(Action{Kind: ActDeleteTensorBoard})
	}
	if left {
		p.summarize()
		return
	}
	rq := *p.status.Requeuing
	p.status.Requeuing = nil
	p.status.StartTime = nil
	if p.status.SuspendRequested {
		// Suspended (whatever else was stopping it): held, not queued;
		// neither a restart nor a requeue.
		p.summarize()
		p.setCondition(CondUnschedulable, false, ReasonSuspended, "")
		p.setCondition(CondAdmitted, false, ReasonSuspended, "suspended by a user")
		p.setCondition(CondQueued, false, ReasonSuspended, "suspended by a user")
		p.setCondition(CondSuspended, true, ReasonSuspended, "suspended by a user; resume it to queue it again")
		p.setState(Suspended, ReasonSuspended, "suspended; its pods are stopped and its resources released", EventNormal)
		p.out.Requeued = &Requeuing{Reason: ReasonSuspended, Message: "suspended by a user"}
		return
	}
	if rq.Reason == ReasonSuspended {
		// Resumed before its pods were gone: back in the queue.
		rq.Message = "resumed by a user"
	}
	p.status.Requeues++
	p.status.StartTime = nil
	p.summarize()
	p.setCondition(CondUnschedulable, false, ReasonRequeued, "")
	p.setCondition(CondAdmitted, false, rq.Reason, rq.Message)
	p.setCondition(CondQueued, true, ReasonRequeued, rq.Message)
	if rq.Reason == ReasonPreempted {
		p.setCondition(CondPreempted, true, ReasonPreempted, rq.Message)
	}
	p.setState(Queued, rq.Reason, rq.Message+"; back in the queue", EventWarning)
	p.out.Requeued = &rq
}
