package job

import (
	"fmt"
	"strings"
)

// Readiness. A replica's readiness probe says when it serves (its
// tf.distribute server listens, its input pipeline is warm). Trainyard never
// waits for it: TensorFlow's servers find each other while starting, so the
// job is RUNNING once every replica runs. The AllReplicasReady condition
// tells the user, and anything that watches the job, the moment every
// replica with a readiness probe is ready.

// CondAllReplicasReady is true while every replica with a readiness probe
// that has not finished has its current pod running and ready. A job whose
// replicas have no readiness probe never gets it.
const CondAllReplicasReady = "AllReplicasReady"

// Reasons of CondAllReplicasReady.
const (
	ReasonAllReplicasReady = "AllReplicasReady"
	ReasonReplicasNotReady = "ReplicasNotReady"
)

// trackReadiness keeps CondAllReplicasReady in step with the replicas'
// readiness; a Normal event goes out when it turns true.
func (p *planner) trackReadiness() {
	probed := 0
	var unready []string
	for _, r := range p.reps {
		if r.spec.ReadinessProbe == nil || r.done() {
			continue
		}
		probed++
		if pod := r.current; pod == nil || pod.Phase != PodRunning || pod.Deleting || !pod.Ready {
			unready = append(unready, r.name)
		}
	}
	if probed == 0 {
		return
	}
	if len(unready) > 0 {
		p.setCondition(CondAllReplicasReady, false, ReasonReplicasNotReady, "not ready: "+strings.Join(unready, ", "))
		return
	}
	msg := fmt.Sprintf("all %d replicas with a readiness probe are ready", probed)
	if probed == 1 {
		msg = "the replica with a readiness probe is ready"
	}
	if p.setCondition(CondAllReplicasReady, true, ReasonAllReplicasReady, msg) {
		p.event(EventNormal, ReasonAllReplicasReady, msg)
	}
}
