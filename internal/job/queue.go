package job

import "time"

// WaitReason says why a QUEUED job is not admitted yet. The scheduler
// (internal/admission) decides it every cycle; the job's Admitted condition
// keeps the latest one, and a Waiting event is written when it changes.
type WaitReason string

const (
	// WaitQuota: the tenant's quota has no room for the job now.
	WaitQuota WaitReason = "QUOTA"
	// WaitCapacity: the cluster's nodes can not hold all of the job's pods now.
	WaitCapacity WaitReason = "CAPACITY"
	// WaitPriority: a job of higher priority in the tenant's queue goes first.
	WaitPriority WaitReason = "PRIORITY"
	// WaitOrder: an earlier job of the same priority in the tenant's queue goes first.
	WaitOrder WaitReason = "ORDER"
	// WaitPreempted: the job was preempted and waits to run again.
	WaitPreempted WaitReason = "PREEMPTED"
	// WaitUnschedulable: the job's pods could not be placed (it was
	// requeued and backs off), or no node could ever hold them.
	WaitUnschedulable WaitReason = "UNSCHEDULABLE"
	// WaitBudget: the tenant's GPU-hour budget for the period is used up;
	// the job waits for the period to reset (its estimated start).
	WaitBudget WaitReason = "BUDGET"
	// WaitDependency: a job of spec.dependsOn has not met its condition
	// yet (BlockedBy names it); the job holds no place in the line.
	WaitDependency WaitReason = "DEPENDENCY"
)

// WaitReasons lists every reason, for metrics and validation.
var WaitReasons = []WaitReason{WaitQuota, WaitCapacity, WaitPriority, WaitOrder, WaitPreempted, WaitUnschedulable, WaitBudget, WaitDependency}

// ETABasis says what an estimated start time rests on.
type ETABasis string

const (
	// ETARunTimes: the run times of the tenant's recent jobs (their median).
	ETARunTimes ETABasis = "RUN_TIMES"
	// ETADeadlines: running jobs' activeDeadlineSeconds (an upper bound).
	ETADeadlines ETABasis = "DEADLINES"
	// ETABackoff: the end of the job's requeue backoff.
	ETABackoff ETABasis = "BACKOFF"
	// ETAPreemption: jobs being preempted for it are stopping.
	ETAPreemption ETABasis = "PREEMPTION"
	// ETAAvailable: what it needs is free now; it waits for its turn.
	ETAAvailable ETABasis = "AVAILABLE"
)

// QueueInfo is where a waiting job stands: why it waits, its place in its
// tenant's queue and in the cluster's, what blocks it, and when it may
// start. Positions count waiting jobs only, from 1.
type QueueInfo struct {
	Reason          WaitReason `json:"reason"`
	Message         string     `json:"message,omitempty"`
	TenantPosition  int        `json:"tenantPosition"`
	ClusterPosition int        `json:"clusterPosition"`
	// BlockedBy names the job of the same tenant it waits for (never
	// another tenant's: that would leak it).
	BlockedBy string `json:"blockedBy,omitempty"`
	// WaitingFor names the resources it lacks ("nvidia.com/gpu").
	WaitingFor []string `json:"waitingFor,omitempty"`
	// EstimatedStart is nil when nothing supports an estimate.
	EstimatedStart *time.Time `json:"estimatedStart,omitempty"`
	EstimateBasis  ETABasis   `json:"estimateBasis,omitempty"`
}
