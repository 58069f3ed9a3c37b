package job

import "time"

// The scheduler's decisions on a QUEUED job, taken outside Plan but by the
// same rules for conditions and events as Plan's own: Admit starts it,
// Wait records why it does not start yet.

// ReasonQuotaExceeded is the reason of the Admitted=false condition of a
// job that waits for its tenant's quota.
const ReasonQuotaExceeded = "QuotaExceeded"

// Admit is what admission makes of a QUEUED job: the status and events of
// the pass that starts it — STARTING, its start time (the deadline counts
// from admission), the Admitted condition, a Pending entry per replica —
// so that the scheduler writes them with its decision, in the same row
// update. The worker's first pass then only creates the pods: Plan of the
// admitted job with none observed leaves its status as it is, and a job's
// row is written once fewer before its pods exist. A requeue the job went
// through is over by the time it waits for admission.
//
// ok is false when the pass would not simply start the job: one requeued
// right after a replica's end was recorded, before a pass decided on it,
// restarts the replica or ends the job on admission. That decision is the
// worker's, in a fenced save: admission then only admits.
func Admit(j Job, now time.Time) (st Status, events []EventDraft, ok bool) {
	j.Status = copyStatus(j.Status)
	j.Status.Requeuing = nil
	out := Plan(PlanInput{Job: j, Admitted: true, Now: now})
	if out.Status.State != Starting {
		return Status{}, nil, false
	}
	return out.Status, out.Events, true
}

// Wait records on a QUEUED job why the scheduler does not admit it yet:
// the condition Admitted=false, with a reason per WaitReason and message.
// Its LastTransitionTime moves when the condition is added, flips or its
// reason changes; a Waiting event ("<REASON>: message") is emitted then, not
// when only the message changes (the figures it quotes move all the time).
func Wait(s Status, reason WaitReason, message string, now time.Time) (Status, []EventDraft) {
	p := &planner{in: PlanInput{Now: now}, status: copyStatus(s)}
	condReason := waitConditionReasons[reason]
	for i := range p.status.Conditions {
		c := &p.status.Conditions[i]
		if c.Type != CondAdmitted {
			continue
		}
		changed := c.Status || c.Reason != condReason
		if changed {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = false, condReason, message
		if changed {
			p.event(EventNormal, ReasonWaiting, string(reason)+": "+message)
		}
		return p.status, p.out.Events
	}
	p.status.Conditions = append(p.status.Conditions, Condition{
		Type: CondAdmitted, Status: false, Reason: condReason, Message: message, LastTransitionTime: now,
	})
	p.event(EventNormal, ReasonWaiting, string(reason)+": "+message)
	return p.status, p.out.Events
}

// ReasonWaiting is the reason of the event that says why a job waits.
const ReasonWaiting = "Waiting"

// waitConditionReasons are the Admitted=false condition's reasons.
var waitConditionReasons = map[WaitReason]string{
	WaitQuota:         ReasonQuotaExceeded,
	WaitCapacity:      "InsufficientCapacity",
	WaitPriority:      "HigherPriorityFirst",
	WaitOrder:         "EarlierJobFirst",
	WaitPreempted:     ReasonPreempted,
	WaitUnschedulable: ReasonUnschedulable,
	WaitBudget:        "BudgetExhausted",
	WaitDependency:    "WaitingForDependency",
}
