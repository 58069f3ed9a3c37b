package job

import "time"

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
