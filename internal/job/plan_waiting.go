package job

import (
	"fmt"
	"strings"
)

// Containers that cannot start. A pod whose image cannot be pulled, or
// whose container refers to a Secret key that does not exist, stays
// Pending for ever with the phase alone saying nothing; the kubelet's
// waiting reason is the only hint, so Plan surfaces it like Unschedulable.

// CondContainersWaiting is true while a replica's container is stuck
// before it started (ObservedPod.Waiting). Its reason is the kubelet's
// (ImagePullBackOff, ErrImagePull, CreateContainerConfigError, ...).
const CondContainersWaiting = "ContainersWaiting"

// ReasonContainersStarting is the reason of CondContainersWaiting once no
// container is stuck any more.
const ReasonContainersStarting = "ContainersStarting"

// trackWaiting reflects stuck containers of pending pods in the
// ContainersWaiting condition. The Warning event goes out when the
// condition turns true, not on every pass (the kubelet alternates
// ErrImagePull and ImagePullBackOff).
func (p *planner) trackWaiting() {
	var first *ObservedPod
	n := 0
	for _, r := range p.reps {
		if pod := r.current; pod != nil && pod.Phase == PodPending && !pod.Deleting && pod.Waiting != "" {
			if first == nil {
				first = pod
			}
			n++
		}
	}
	if first == nil {
		p.setCondition(CondContainersWaiting, false, ReasonContainersStarting, "")
		return
	}
	reason, _, _ := strings.Cut(first.Waiting, ":")
	msg := first.Name + ": " + first.Waiting
	if n > 1 {
		msg += fmt.Sprintf(" (and %d more pods)", n-1)
	}
	if p.setCondition(CondContainersWaiting, true, reason, msg) {
		p.event(EventWarning, reason, msg)
	}
}
