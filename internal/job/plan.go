package job

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Reasons Plan writes into Status.Reason, conditions and events.
const (
	ReasonAdmitted             = "Admitted"
	ReasonRunning              = "JobRunning"
	ReasonRestarting           = "Restarting"
	ReasonSucceeded            = "JobSucceeded"
	ReasonReplicaFailed        = "ReplicaFailed"
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonCancelled            = "Cancelled"
	ReasonUnschedulable        = "Unschedulable"
	ReasonScheduled            = "Scheduled"
	// ReasonPreempting: the scheduler preempts the job (event on the victim).
	ReasonPreempting = "Preempting"
	// ReasonPreempted: the job was stopped and requeued for another.
	ReasonPreempted = "Preempted"
	// ReasonRequeued: the job went back to the queue.
	ReasonRequeued = "Requeued"
	// ReasonSuspended: a user suspended the job; ReasonResumed: resumed it.
	ReasonSuspended = "Suspended"
	ReasonResumed   = "Resumed"
	// ReasonPodMissing is the termination reason of a replica whose running
	// pod disappeared without Trainyard seeing how it ended.
	ReasonPodMissing = "PodMissing"
)

// ExitCodeNoContainer is the exit code of a replica whose pod ended without
// its container reporting one: evicted, preempted, lost with its node, or
// deleted behind Trainyard's back. Restart policy ExitCode retries it.
const ExitCodeNoContainer = -1

// logLinesInMessage is how many lines of a failed replica's log tail the
// job's failure message quotes.
const logLinesInMessage = 5

// Plan decides, from a job as Postgres has it and what Kubernetes shows for
// it, what the worker does next and what the job's status becomes. It is
// pure: no I/O, no clock but in.Now, and the same input gives the same
// output. The package documentation describes the phases and the restart
// protocol.
func Plan(in PlanInput) PlanResult {
	p := &planner{in: in, status: copyStatus(in.Job.Status)}
	state := p.status.State
	switch {
	case in.Deleted:
		if !state.Final() {
			p.finish(Cancelled, ReasonCancelled, "Job deleted", EventNormal)
		}
		p.cleanup()
	case state.Final():
		p.cleanup()
	case state == Suspended:
		// Held until a resume: its pods are gone and it holds no quota. A
		// cancel ends it (the store ends most at once).
		if p.status.CancelRequested {
			p.finish(Cancelled, ReasonCancelled, "Job cancelled", EventNormal)
			p.cleanup()
		}
	case (state == Queued || state == "") && !in.Admitted && !p.status.CancelRequested:
		// Waiting for the scheduler, which writes why; nothing to do here.
	case !p.status.CancelRequested && p.requeuing():
		p.planRequeue()
	default:
		p.planActive()
	}
	if !p.wake.IsZero() {
		if d := max(p.wake.Sub(in.Now), time.Millisecond); p.out.RequeueAfter <= 0 || d < p.out.RequeueAfter {
			p.out.RequeueAfter = d
		}
	}
	p.out.Status = p.status
	return p.out
}

// wakeAt asks for another Plan at t, or sooner if something else asks.
func (p *planner) wakeAt(t time.Time) {
	if p.wake.IsZero() || t.Before(p.wake) {
		p.wake = t
	}
}

// planner carries one Plan call. Its status is a deep copy of the input's,
// edited in place.
type planner struct {
	in     PlanInput
	status Status
	out    PlanResult
	reps   []*replica
	strays []ObservedPod // pods of the job that are no replica of its spec

	captured bool      // this pass records a termination: decide next pass
	restarts []string  // restart messages of this pass
	wake     time.Time // another Plan is due then (wakeAt), beside the deadlines
}

// replica is one replica of the spec with its pods and its status entry.
type replica struct {
	spec  *ReplicaSpec
	st    *ReplicaStatus // entry in planner.status.Replicas
	name  string         // worker-1
	fresh bool           // st.LastTermination was recorded by this pass
	// current is the pod of the current attempt (Attempt == st.Restarts);
	// stale are pods of any other attempt, to delete.
	current *ObservedPod
	stale   []ObservedPod
}

// terminated reports whether the current attempt's end is recorded.
func (r *replica) terminated() bool {
	t := r.st.LastTermination
	return t != nil && t.Attempt == r.st.Restarts
}

// recorded reports whether the current attempt's end was recorded by an
// earlier pass, so that decisions may rest on it.
func (r *replica) recorded() bool { return r.terminated() && !r.fresh }

// succeeded tells, for a terminated replica, how its current attempt ended:
// from the pod while it is there, else from the state recorded with it.
func (r *replica) succeeded() bool {
	if r.current != nil {
		switch r.current.Phase {
		case PodSucceeded:
			return true
		case PodFailed:
			return false
		}
	}
	switch r.st.State {
	case ReplicaSucceeded:
		return true
	case ReplicaFailed:
		return false
	}
	return r.st.LastTermination.ExitCode == 0
}

// done reports whether the replica finished successfully and stays so.
func (r *replica) done() bool { return r.terminated() && r.succeeded() }

// planActive plans a job that is admitted (or being cancelled) and not final.
func (p *planner) planActive() {
	p.buildReplicas()
	for _, r := range p.reps {
		p.recordTermination(r)
	}
	if p.endJob() || (!p.captured && p.decideReplicas()) {
		p.summarize()
		p.cleanup()
		return
	}
	if p.captured {
		// Exit codes, reasons and log tails reach Postgres before any
		// decision acts on them (and before any pod is deleted).
		p.out.Requeue = true
	} else {
		p.converge()
		p.advance()
	}
	p.summarize()
	p.trackUnschedulable()
	p.trackWaiting()
	p.trackReadiness()
	if at, ok := p.deadline(); ok {
		p.out.RequeueAfter = at.Sub(p.in.Now)
	}
	if at, ok := p.unschedulableDeadline(); ok && (p.out.RequeueAfter == 0 || at.Sub(p.in.Now) < p.out.RequeueAfter) {
		p.out.RequeueAfter = max(at.Sub(p.in.Now), time.Millisecond)
	}
}

// buildReplicas lists the spec's replicas in reporting order, with their
// status entries (restarts and last termination carried over) and pods.
func (p *planner) buildReplicas() {
	prev := map[string]ReplicaStatus{}
	for _, rs := range p.status.Replicas {
		prev[ReplicaName(rs.Type, rs.Index)] = rs
	}
	specs := orderedSpecs(p.in.Job.Spec.Replicas)
	p.status.Replicas = nil
	for _, s := range specs {
		for i := range s.Count {
			rs := prev[ReplicaName(s.Type, i)]
			rs.Type, rs.Index, rs.Pod = s.Type, i, PodName(p.in.Job.Name, s.Type, i)
			p.status.Replicas = append(p.status.Replicas, rs)
		}
	}
	byName := map[string]*replica{}
	k := 0
	for _, s := range specs {
		for i := range s.Count {
			r := &replica{spec: s, st: &p.status.Replicas[k], name: ReplicaName(s.Type, i)}
			p.reps = append(p.reps, r)
			byName[r.name] = r
			k++
		}
	}
	for _, pod := range sortedPods(p.in.Observed.Pods) {
		r := byName[ReplicaName(pod.Type, pod.Index)]
		switch {
		case r == nil:
			p.strays = append(p.strays, pod)
		case pod.Attempt == r.st.Restarts && r.current == nil:
			r.current = &pod
		default:
			r.stale = append(r.stale, pod)
		}
	}
}

// orderedSpecs returns the replica specs in ReplicaTypes order, one per
// type (Validate rejects repeats; the first wins here).
func orderedSpecs(specs []ReplicaSpec) []*ReplicaSpec {
	var out []*ReplicaSpec
	for _, t := range ReplicaTypes {
		for i := range specs {
			if specs[i].Type == t {
				out = append(out, &specs[i])
				break
			}
		}
	}
	return out
}

// recordTermination records how the current attempt of r ended, once: from
// its terminal pod, or — when a pod last seen running is gone without a
// trace — as PodMissing, so that the restart that follows is counted.
func (p *planner) recordTermination(r *replica) {
	if r.terminated() {
		return
	}
	var t Termination
	switch pod := r.current; {
	case pod != nil && (pod.Phase == PodSucceeded || pod.Phase == PodFailed):
		if pod.Terminated != nil {
			t = *pod.Terminated
		} else if pod.Phase == PodFailed {
			t = Termination{ExitCode: ExitCodeNoContainer, Reason: "PodFailed"}
		} else {
			t = Termination{Reason: "Completed"}
		}
		r.st.State = ReplicaSucceeded
		if pod.Phase == PodFailed {
			r.st.State = ReplicaFailed
			p.out.Actions = append(p.out.Actions, Action{Kind: ActCaptureLogTail, Type: pod.Type, Index: pod.Index, Attempt: pod.Attempt, Pod: pod.Name})
		}
	case pod == nil && len(r.stale) == 0 && r.st.State == ReplicaRunning:
		t = Termination{
			ExitCode: ExitCodeNoContainer,
			Reason:   ReasonPodMissing,
			Message:  "the pod disappeared while running (deleted outside Trainyard, or lost with its node)",
		}
		r.st.State = ReplicaFailed
	default:
		return
	}
	t.Attempt = r.st.Restarts
	t.LogTail = ""
	if t.FinishTime.IsZero() {
		t.FinishTime = p.in.Now
	}
	r.st.LastTermination = &t
	r.fresh = true
	p.captured = true
}

// endJob ends the job for reasons above any replica: cancel, success,
// deadline. A success needs its terminations recorded by an earlier pass;
// the other two end the job even in a pass that records terminations (the
// worker captures log tails before it deletes anything).
func (p *planner) endJob() bool {
	if p.status.CancelRequested {
		p.finish(Cancelled, ReasonCancelled, "Job cancelled", EventNormal)
		return true
	}
	if msg, ok := p.successReached(); ok {
		p.finish(Succeeded, ReasonSucceeded, msg, EventNormal)
		return true
	}
	if at, ok := p.deadline(); ok && !p.in.Now.Before(at) {
		msg := fmt.Sprintf("Job ran past its active deadline of %ds", *p.in.Job.Spec.RunPolicy.ActiveDeadlineSeconds)
		p.finish(Failed, ReasonDeadlineExceeded, msg, EventWarning)
		return true
	}
	return false
}

// successReached applies the success policy to recorded terminations.
func (p *planner) successReached() (string, bool) {
	var chief, workers []*replica
	for _, r := range p.reps {
		switch r.spec.Type {
		case Chief:
			chief = append(chief, r)
		case Worker:
			workers = append(workers, r)
		}
	}
	ok := func(r *replica) bool { return r.recorded() && r.succeeded() }
	if p.in.Job.Spec.SuccessPolicy == SuccessAllWorkers {
		set := slices.Concat(chief, workers)
		if len(set) == 0 {
			set = p.reps
		}
		if len(set) > 0 && !slices.ContainsFunc(set, func(r *replica) bool { return !ok(r) }) {
			return "All workers succeeded", true
		}
		return "", false
	}
	var deciding *replica
	switch {
	case len(chief) > 0:
		deciding = chief[0]
	case len(workers) > 0:
		deciding = workers[0]
	default:
		// Neither chief nor worker: every replica decides.
		if len(p.reps) > 0 && !slices.ContainsFunc(p.reps, func(r *replica) bool { return !ok(r) }) {
			return "All replicas succeeded", true
		}
		return "", false
	}
	return deciding.name + " succeeded", ok(deciding)
}

// deadline is when the job's active deadline passes, if it has one and has
// started.
func (p *planner) deadline() (time.Time, bool) {
	s := p.in.Job.Spec.RunPolicy.ActiveDeadlineSeconds
	if s == nil || p.status.StartTime == nil {
		return time.Time{}, false
	}
	return p.status.StartTime.Add(time.Duration(*s) * time.Second), true
}

// decideReplicas acts on recorded terminations: restart the replica, or end
// the job. Restarts are all-or-nothing within a pass: if any replica ends
// the job, none of the pass's restarts is counted.
func (p *planner) decideReplicas() (final bool) {
	limit := max(p.in.Job.Spec.RunPolicy.BackoffLimit, 0)
	restarts := p.status.Restarts
	var restart []*replica
	for _, r := range p.reps {
		if !r.recorded() {
			continue
		}
		t, succeeded := r.st.LastTermination, r.succeeded()
		retry := shouldRestart(r.spec, succeeded, t.ExitCode)
		switch {
		case succeeded && !retry:
			continue
		case !retry:
			msg := fmt.Sprintf("%s failed with %s; restart policy %s does not restart it", r.name, describeExit(t), r.spec.RestartPolicy)
			p.finish(Failed, ReasonReplicaFailed, msg+logLines(t), EventWarning)
			return true
		case restarts >= limit:
			msg := fmt.Sprintf("%s ended with %s; backoff limit reached (%d of %d restarts used)", r.name, describeExit(t), restarts, limit)
			p.finish(Failed, ReasonBackoffLimitExceeded, msg+logLines(t), EventWarning)
			return true
		}
		restarts++
		restart = append(restart, r)
	}
	for _, r := range restart {
		p.restart(r)
	}
	return false
}

// shouldRestart applies a replica's restart policy to how it ended.
func shouldRestart(s *ReplicaSpec, succeeded bool, code int32) bool {
	switch s.RestartPolicy {
	case RestartAlways:
		return true
	case RestartOnFailure:
		return !succeeded
	case RestartExitCode:
		return !succeeded && retryableExitCode(s.RetryableExitCodes, code)
	}
	return false
}

// retryableExitCode: a pod that ended without an exit code (eviction, lost
// node) is always retryable, as in TFJob; otherwise the listed codes, or
// by default 128..255 (killed by a signal: OOM, preemption, SIGTERM).
func retryableExitCode(codes []int32, code int32) bool {
	switch {
	case code < 0:
		return true
	case len(codes) > 0:
		return slices.Contains(codes, code)
	}
	return code >= 128 && code <= 255
}

// restart persists a restart of r: the new attempt is r's restart count,
// so the pod of the old attempt becomes stale and is replaced.
func (p *planner) restart(r *replica) {
	t := r.st.LastTermination
	r.st.Restarts++
	p.status.Restarts++
	if r.current != nil {
		r.stale = append(r.stale, *r.current)
		r.current = nil
	}
	msg := fmt.Sprintf("Restarting %s after %s (restart %d of %d)", r.name, describeExit(t), p.status.Restarts, max(p.in.Job.Spec.RunPolicy.BackoffLimit, 0))
	p.restarts = append(p.restarts, msg)
	p.event(EventWarning, ReasonRestarting, msg)
}

// converge creates what an admitted job lacks and deletes pods of old
// attempts and strays.
func (p *planner) converge() {
	obs := p.in.Observed
	for _, r := range p.reps {
		for _, pod := range r.stale {
			p.deletePod(pod)
		}
		if len(r.stale) > 0 || r.current != nil || r.terminated() {
			// Wait for the old pod to go (same name); a finished replica
			// stays finished.
			continue
		}
		p.act(Action{Kind: ActCreatePod, Type: r.spec.Type, Index: r.st.Index, Attempt: r.st.Restarts, Pod: r.st.Pod})
	}
	for _, pod := range p.strays {
		p.deletePod(pod)
	}
	if p.in.Job.Spec.TensorBoard != nil && (!obs.TensorBoardPod || !obs.TensorBoardSvc) {
		p.act(Action{Kind: ActCreateTensorBoard})
	}
}

// advance moves a non-final job between QUEUED, STARTING, RUNNING and
// RESTARTING. RESTARTING is entered by a restart and left, like STARTING,
// when every replica that has not succeeded runs.
func (p *planner) advance() {
	switch prev := p.status.State; {
	case len(p.restarts) > 0:
		// The restart events stand for the state change.
		p.setState(Restarting, ReasonRestarting, p.restarts[len(p.restarts)-1], "")
	case prev == Queued || prev == "":
		// The pods are created in this pass: the deadline counts from now.
		now := p.in.Now
		p.status.StartTime = &now
		p.setCondition(CondQueued, false, ReasonAdmitted, "")
		p.setCondition(CondAdmitted, true, ReasonAdmitted, "")
		p.setCondition(CondPreempted, false, ReasonAdmitted, "")
		p.setState(Starting, ReasonAdmitted, fmt.Sprintf("Admitted; starting %d replicas", len(p.reps)), EventNormal)
	case prev != Running && p.allRunning():
		p.setState(Running, ReasonRunning, "All replicas are running", EventNormal)
	}
}

// allRunning reports whether every replica that has not succeeded has its
// current pod running.
func (p *planner) allRunning() bool {
	for _, r := range p.reps {
		if r.done() {
			continue
		}
		if r.current == nil || r.current.Phase != PodRunning || r.current.Deleting {
			return false
		}
	}
	return true
}

// sortedPods orders pods by replica type, index, attempt and name, so that
// the informer's order never shows in the plan.
func sortedPods(pods []ObservedPod) []ObservedPod {
	out := slices.Clone(pods)
	slices.SortStableFunc(out, func(a, b ObservedPod) int {
		return cmp.Or(
			cmp.Compare(typeRank(a.Type), typeRank(b.Type)),
			cmp.Compare(a.Type, b.Type),
			cmp.Compare(a.Index, b.Index),
			cmp.Compare(a.Attempt, b.Attempt),
			cmp.Compare(a.Name, b.Name),
		)
	})
	return out
}

func typeRank(t ReplicaType) int {
	if i := slices.Index(ReplicaTypes, t); i >= 0 {
		return i
	}
	return len(ReplicaTypes)
}
