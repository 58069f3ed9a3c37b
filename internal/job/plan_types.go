package job

import "time"

// PlanInput is everything Plan looks at: the job as Postgres has it, what
// Kubernetes shows for it, and the time.
type PlanInput struct {
	Job Job
	// Admitted is false while the job waits for its tenant's quota.
	Admitted bool
	// Deleted is true once the user deleted the (finished) job: everything
	// left in Kubernetes goes, then the row.
	Deleted  bool
	Observed Observed
	Now      time.Time
	// Preempt is set once the scheduler preempts the running job: Plan
	// stops its pods and sends it back to the queue (plan_requeue.go).
	Preempt *Preemption
	// UnschedulableTimeout: an admitted job whose pods stay unschedulable
	// this long goes back to the queue (zero: never).
	UnschedulableTimeout time.Duration
}

// Preemption is the scheduler's request to stop a job and requeue it.
type Preemption struct {
	// By is the uid of the job of the same tenant it makes room for.
	By string
	// Message says why: which job, of which priority.
	Message string
}

// Observed is what the worker's informers show for one job.
type Observed struct {
	// Pods labelled with the job's uid, at most one per replica name.
	Pods           []ObservedPod
	TensorBoardPod bool
	TensorBoardSvc bool
}

// PodPhase mirrors the Kubernetes pod phase.
type PodPhase string

const (
	PodPending   PodPhase = "Pending"
	PodRunning   PodPhase = "Running"
	PodSucceeded PodPhase = "Succeeded"
	PodFailed    PodPhase = "Failed"
	PodUnknown   PodPhase = "Unknown"
)

// ObservedPod is the part of a replica pod that Plan needs.
type ObservedPod struct {
	Name    string
	Type    ReplicaType
	Index   int32
	Attempt int32 // label trainyard.dev/attempt: the replica's restart count when it was created
	Phase   PodPhase
	// Ready is the main container's readiness (its readiness probe passes,
	// or it has none and runs).
	Ready bool
	// Deleting is true once the pod has a deletion timestamp.
	Deleting bool
	// DeletedAt is set for a pod deleted without a grace period (none
	// asked, or a finished pod) and without finalizers that is still
	// there: when it was deleted. The API server deletes in two writes —
	// mark, then remove — and a client gone between them (a worker killed
	// mid-request; the chaos suite saw it) leaves the pod marked for ever,
	// with no kubelet to finish it: Kubernetes' remedy is to delete it
	// again (k8s.io/apiserver's rest.BeforeDelete), which Plan does once
	// StalledDeleteAfter has passed. Zero otherwise.
	DeletedAt time.Time
	Node      string
	// IP is the pod's address once it has one: the slice controller lists
	// it in the job's EndpointSlice (Plan does not read it).
	IP string
	// Unschedulable holds the scheduler's message while the pod cannot be
	// scheduled (condition PodScheduled=False, reason Unschedulable).
	Unschedulable string
	// Waiting is why the main container of a pending pod cannot start, when
	// the kubelet reports it stuck rather than slow (a bad image, a missing
	// Secret key): "<reason>: <message>", e.g. "ImagePullBackOff: Back-off
	// pulling image \"tf:9\"". Empty while it is simply being created.
	Waiting string
	// Terminated is the main container's termination, once it ended
	// (or, for a Failed pod without one, the pod's own reason with exit
	// code ExitCodeNoContainer). Plan reads it only for Succeeded and
	// Failed pods.
	Terminated *Termination
}

// ActionKind is what the worker does in Kubernetes for a plan.
type ActionKind string

const (
	ActCreatePod         ActionKind = "CreatePod"
	ActDeletePod         ActionKind = "DeletePod"
	ActCaptureLogTail    ActionKind = "CaptureLogTail"
	ActCreateTensorBoard ActionKind = "CreateTensorBoard" // pod and Service
	ActDeleteTensorBoard ActionKind = "DeleteTensorBoard" // pod and Service
)

// Action is one step for the worker. CreatePod names the replica and the
// attempt to label the pod with; DeletePod and CaptureLogTail name the pod.
type Action struct {
	Kind    ActionKind
	Type    ReplicaType
	Index   int32
	Attempt int32
	Pod     string
}

// EventDraft is an event Plan wants recorded with the new status.
type EventDraft struct {
	Type    string // EventNormal or EventWarning
	Reason  string
	Message string
}

// PlanResult is what Plan decided.
//
// The worker applies it in this order: run CaptureLogTail actions (filling
// the log tail into Status.Replicas[i].LastTermination), persist Status and
// Events (fenced by its lease), then run the other actions in order.
type PlanResult struct {
	Status  Status
	Events  []EventDraft
	Actions []Action
	// RequeueAfter > 0 asks for another Plan after that long even if nothing
	// changes (deadline and TTL timers).
	RequeueAfter time.Duration
	// Requeue asks for another Plan right after this one is applied.
	Requeue bool
	// Forget is true when the job needs no more reconciling: it is final and
	// cleaned up as far as its policies ask (or deleted and gone).
	Forget bool
	// Requeued is set in the pass that sends the job back to the
	// scheduler's queue (Status is QUEUED, its pods are gone): the worker
	// saves it unadmitted and lets it go.
	Requeued *Requeuing
}
