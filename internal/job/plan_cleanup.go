package job

import "time"

// cleanup plans what a final (or deleted) job still has in Kubernetes, and
// whether it can be forgotten.
//
// Pods follow CleanPodPolicy: None keeps them, Running deletes those not
// yet finished (and TensorBoard, a running pod too), All deletes them all.
// The job's EndpointSlice is not the plan's: the slice controller lists
// the replicas that run, and deletes the slice once the job has no pod
// (package worker/endpoints). Kept objects wait for the TTL
// (RequeueAfter); without a TTL they stay until the job is deleted.
func (p *planner) cleanup() {
	if p.status.CompletionTime == nil {
		now := p.in.Now
		p.status.CompletionTime = &now
	}
	rp := p.in.Job.Spec.RunPolicy
	policy := rp.CleanPodPolicy
	if policy == "" {
		policy = CleanRunning
	}
	var ttlAt time.Time
	if rp.TTLSecondsAfterFinished != nil {
		ttlAt = p.status.CompletionTime.Add(time.Duration(*rp.TTLSecondsAfterFinished) * time.Second)
	}
	all := p.in.Deleted || p.status.State == Cancelled || policy == CleanAll ||
		(rp.TTLSecondsAfterFinished != nil && !p.in.Now.Before(ttlAt))

	obs := p.in.Observed
	outstanding, kept := false, false
	for _, pod := range sortedPods(obs.Pods) {
		active := pod.Phase == PodPending || pod.Phase == PodRunning || pod.Phase == PodUnknown
		if all || (policy == CleanRunning && active) {
			outstanding = true
			p.deletePod(pod)
		} else {
			kept = true
		}
	}
	if obs.TensorBoardPod || obs.TensorBoardSvc {
		if all || policy == CleanRunning {
			outstanding = true
			p.act(Action{Kind: ActDeleteTensorBoard})
		} else {
			kept = true
		}
	}
	if len(obs.Pods) == 0 && !obs.TensorBoardPod && !obs.TensorBoardSvc {
		p.status.CleanedUp = true
	}
	switch {
	case outstanding:
		// Deletions under way; the informers bring the job back.
	case kept && rp.TTLSecondsAfterFinished != nil:
		p.out.RequeueAfter = ttlAt.Sub(p.in.Now)
	default:
		p.out.Forget = true
	}
}

func (p *planner) act(a Action) { p.out.Actions = append(p.out.Actions, a) }

// StalledDeleteAfter is how long a pod may stay marked deleted without a
// grace period (ObservedPod.DeletedAt) before Plan deletes it again. The
// two writes of a delete are milliseconds apart.
const StalledDeleteAfter = 5 * time.Second

// deletePod deletes a pod unless its deletion is already under way; a
// deletion cut short (ObservedPod.DeletedAt) is sent again once it has
// stalled for StalledDeleteAfter, and Plan runs again then.
func (p *planner) deletePod(pod ObservedPod) {
	if pod.Deleting {
		if pod.DeletedAt.IsZero() {
			return // the kubelet ends it
		}
		if due := pod.DeletedAt.Add(StalledDeleteAfter); p.in.Now.Before(due) {
			p.wakeAt(due)
			return
		}
	}
	p.act(Action{Kind: ActDeletePod, Type: pod.Type, Index: pod.Index, Attempt: pod.Attempt, Pod: pod.Name})
}
