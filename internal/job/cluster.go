package job

import (
	"fmt"
	"time"
)

// A job's cluster lost (issue 45): its agent stopped reporting for longer
// than the grace, so its pods cannot be watched, stopped or trusted to
// finish. The job goes back to the queue to run elsewhere from its
// checkpoint, and that counts as a restart.
const (
	// ReasonClusterLost: the job's cluster was unreachable past the grace.
	ReasonClusterLost = "ClusterLost"
	// CondClusterLost is set when a job left a lost cluster.
	CondClusterLost = "ClusterLost"
)

// ClusterLost is the status of a job taken back from its lost cluster:
// QUEUED (not admitted, in no cluster), a restart counted, and why.
func ClusterLost(s Status, cluster string, unreachableFor time.Duration, now time.Time) (Status, []EventDraft) {
	p := &planner{in: PlanInput{Now: now}, status: copyStatus(s)}
	msg := fmt.Sprintf("cluster %q has not answered for %s; the job goes back to the queue to run elsewhere from its checkpoint",
		cluster, unreachableFor.Round(time.Second))
	p.status.Restarts++
	p.status.StartTime = nil
	p.status.Requeuing = nil
	p.status.Cluster = ""
	p.status.ReplicaCounts = nil // its pods are out of sight: none is counted
	// Every replica starts again where the job runs next: none of them has
	// a pod there, and none is missing one (which would count a restart
	// more).
	for i := range p.status.Replicas {
		r := &p.status.Replicas[i]
		r.State, r.Node = ReplicaPending, ""
	}
	p.setCondition(CondClusterLost, true, ReasonClusterLost, msg)
	p.setCondition(CondAdmitted, false, ReasonClusterLost, msg)
	p.setCondition(CondQueued, true, ReasonRequeued, msg)
	p.setState(Queued, ReasonClusterLost, msg, EventWarning)
	return p.status, p.out.Events
}
