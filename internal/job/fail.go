package job

import "time"

// Decisions the worker takes outside Plan, kept here so that they follow
// the same rules for conditions and events as Plan's own.

// ReasonQuotaExceeded is the reason of the Admitted=false condition of a
// job that waits for its tenant's quota.
const ReasonQuotaExceeded = "QuotaExceeded"

// Fail ends a job that can never run as FAILED with reason and message, as
// Plan ends one: CompletionTime, the Failed condition, Running and
// Restarting false, and one Warning event. The worker uses it when the API
// server refuses an object for good (invalid, forbidden). A job already
// final is returned unchanged, without events.
func Fail(s Status, reason, message string, now time.Time) (Status, []EventDraft) {
	p := &planner{in: PlanInput{Now: now}, status: copyStatus(s)}
	if p.status.State.Final() {
		return p.status, nil
	}
	p.finish(Failed, reason, message, EventWarning)
	return p.status, p.out.Events
}

// WaitForQuota records on a QUEUED job why it is not admitted: the
// condition Admitted=false with reason QuotaExceeded and message. Its
// LastTransitionTime moves only when the condition is added or flips; a
// Normal event is emitted then, not when only the message changes (the
// usage it quotes moves all the time).
func WaitForQuota(s Status, message string, now time.Time) (Status, []EventDraft) {
	p := &planner{in: PlanInput{Now: now}, status: copyStatus(s)}
	for i := range p.status.Conditions {
		c := &p.status.Conditions[i]
		if c.Type != CondAdmitted {
			continue
		}
		flipped := c.Status
		if flipped {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = false, ReasonQuotaExceeded, message
		if flipped {
			p.event(EventNormal, ReasonQuotaExceeded, message)
		}
		return p.status, p.out.Events
	}
	p.status.Conditions = append(p.status.Conditions, Condition{
		Type: CondAdmitted, Status: false, Reason: ReasonQuotaExceeded, Message: message, LastTransitionTime: now,
	})
	p.event(EventNormal, ReasonQuotaExceeded, message)
	return p.status, p.out.Events
}
