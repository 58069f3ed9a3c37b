package job

import (
	"fmt"
	"slices"
	"strings"
)

// Status bookkeeping for Plan: replica states and counts, conditions,
// events and messages.

// summarize writes each replica's pod, node and state, and the counts.
func (p *planner) summarize() {
	for _, r := range p.reps {
		switch {
		case r.current != nil:
			r.st.Node = r.current.Node
			r.st.State = replicaState(r.current.Phase)
		case r.terminated():
			// The pod is gone; keep what was recorded with its end.
			if r.st.State != ReplicaSucceeded && r.st.State != ReplicaFailed {
				r.st.State = ReplicaFailed
				if r.succeeded() {
					r.st.State = ReplicaSucceeded
				}
			}
		default:
			r.st.Node, r.st.State = "", ReplicaPending
		}
	}
	p.status.ReplicaCounts = nil
	for _, s := range orderedSpecs(p.in.Job.Spec.Replicas) {
		c := ReplicaCounts{Type: s.Type}
		for _, rs := range p.status.Replicas {
			if rs.Type != s.Type {
				continue
			}
			switch rs.State {
			case ReplicaRunning:
				c.Active++
			case ReplicaSucceeded:
				c.Succeeded++
			case ReplicaFailed:
				c.Failed++
			default:
				c.Pending++
			}
		}
		p.status.ReplicaCounts = append(p.status.ReplicaCounts, c)
	}
}

func replicaState(ph PodPhase) ReplicaState {
	switch ph {
	case PodRunning:
		return ReplicaRunning
	case PodSucceeded:
		return ReplicaSucceeded
	case PodFailed:
		return ReplicaFailed
	}
	return ReplicaPending
}

// trackUnschedulable reflects pods the scheduler cannot place in the
// Unschedulable condition; the Warning event goes out only when the
// condition turns true, not on every pass.
func (p *planner) trackUnschedulable() {
	var first string
	n := 0
	for _, r := range p.reps {
		if pod := r.current; pod != nil && pod.Phase == PodPending && !pod.Deleting && pod.Unschedulable != "" {
			if n == 0 {
				first = pod.Name + ": " + pod.Unschedulable
			}
			n++
		}
	}
	if n == 0 {
		p.setCondition(CondUnschedulable, false, ReasonScheduled, "")
		return
	}
	msg := first
	if n > 1 {
		msg += fmt.Sprintf(" (and %d more pods)", n-1)
	}
	if p.setCondition(CondUnschedulable, true, ReasonUnschedulable, msg) {
		p.event(EventWarning, ReasonUnschedulable, msg)
	}
}

// finish ends the job in a final state.
func (p *planner) finish(s State, reason, msg, eventType string) {
	p.status.Requeuing = nil
	if p.status.CompletionTime == nil {
		now := p.in.Now
		p.status.CompletionTime = &now
	}
	cond := map[State]string{Succeeded: CondSucceeded, Failed: CondFailed, Cancelled: CondCancelled}[s]
	p.setCondition(cond, true, reason, msg)
	// Its replicas are stopping or gone: none serves any more.
	p.setCondition(CondAllReplicasReady, false, reason, "")
	p.setState(s, reason, msg, eventType)
}

// setState sets the state with its reason and message, keeps the Running
// and Restarting conditions in step, and emits one event unless eventType
// is empty.
func (p *planner) setState(s State, reason, msg, eventType string) {
	p.status.State, p.status.Reason, p.status.Message = s, reason, msg
	p.setCondition(CondRunning, s == Running, reason, condMessage(s == Running, msg))
	p.setCondition(CondRestarting, s == Restarting, reason, condMessage(s == Restarting, msg))
	if eventType != "" {
		p.event(eventType, reason, msg)
	}
}

func condMessage(status bool, msg string) string {
	if status {
		return msg
	}
	return ""
}

// setCondition sets a condition and reports whether it became true. Its
// LastTransitionTime moves only when its status flips; a condition that
// never was true is not added as false.
func (p *planner) setCondition(typ string, status bool, reason, msg string) bool {
	for i := range p.status.Conditions {
		c := &p.status.Conditions[i]
		if c.Type != typ {
			continue
		}
		flipped := c.Status != status
		if flipped {
			c.LastTransitionTime = p.in.Now
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		return flipped && status
	}
	if !status {
		return false
	}
	p.status.Conditions = append(p.status.Conditions, Condition{Type: typ, Status: true, Reason: reason, Message: msg, LastTransitionTime: p.in.Now})
	return true
}

func (p *planner) event(typ, reason, msg string) {
	p.out.Events = append(p.out.Events, EventDraft{Type: typ, Reason: reason, Message: msg})
}

// describeExit says how a replica ended: "exit code 137, reason OOMKilled".
func describeExit(t *Termination) string {
	s := fmt.Sprintf("exit code %d", t.ExitCode)
	if t.Reason != "" {
		s += ", reason " + t.Reason
	}
	return s
}

// logLines quotes the last lines of a termination's log tail for a message.
func logLines(t *Termination) string {
	tail := strings.TrimRight(t.LogTail, "\n")
	if tail == "" {
		return ""
	}
	lines := strings.Split(tail, "\n")
	lines = lines[max(len(lines)-logLinesInMessage, 0):]
	return "; last log lines:\n" + strings.Join(lines, "\n")
}

// copyStatus deep-copies a status so that Plan never writes into its input.
func copyStatus(s Status) Status {
	out := s
	out.Conditions = slices.Clone(s.Conditions)
	out.ReplicaCounts = slices.Clone(s.ReplicaCounts)
	out.Replicas = slices.Clone(s.Replicas)
	out.Dependencies = slices.Clone(s.Dependencies)
	for i, rs := range out.Replicas {
		if rs.LastTermination != nil {
			t := *rs.LastTermination
			out.Replicas[i].LastTermination = &t
		}
	}
	if s.StartTime != nil {
		t := *s.StartTime
		out.StartTime = &t
	}
	if s.CompletionTime != nil {
		t := *s.CompletionTime
		out.CompletionTime = &t
	}
	return out
}
