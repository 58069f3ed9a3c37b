package admission

import (
	"encoding/json"
	"hash/fnv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Snapshot is everything one scheduling decision looks at: every tenant,
// every pending and admitted job, every node, at one instant.
type Snapshot struct {
	Now     time.Time
	Config  Config
	Tenants []Tenant
	// Jobs are the unfinished jobs: pending (QUEUED, not admitted, not
	// cancelled) and admitted (holding quota and capacity until they end).
	Jobs  []Job
	Nodes []Node
	// Clusters are the Kubernetes clusters the nodes belong to
	// (Node.Cluster), with their labels and states. A cluster that nodes
	// name but that is not listed is READY with no labels: a one-cluster
	// installation lists none and its nodes' Cluster is "".
	Clusters []Cluster
	// Cohorts are the cohorts' own nominal pools (nobody owns them); a
	// cohort that tenants name but that is not listed has none.
	Cohorts []Cohort
}

// Cluster is a Kubernetes cluster as the scheduler sees it (clusters.go).
type Cluster struct {
	// Name is the cluster's name; "" is the default cluster (the one a
	// one-cluster installation has).
	Name string
	// Labels are what jobs' cluster selectors match (region, cloud, GPU
	// models, cost class).
	Labels map[string]string
	// State says whether new work may go there ("" is READY).
	State ClusterState
}

// ClusterState is a cluster's state. Only a READY cluster takes new
// work; in every other state its nodes keep counting what the admitted
// jobs on them use, and those jobs keep their quota.
type ClusterState string

const (
	// ClusterReady: its agent reports; new jobs may be placed there.
	ClusterReady ClusterState = "READY"
	// ClusterUnreachable: its agent missed its heartbeats; nothing new
	// goes there (what runs there is moved by the control plane after a
	// grace, not by this decision).
	ClusterUnreachable ClusterState = "UNREACHABLE"
	// ClusterDraining: nothing new goes there; running jobs finish.
	ClusterDraining ClusterState = "DRAINING"
	// ClusterCordoned: nothing new goes there; running jobs keep running.
	ClusterCordoned ClusterState = "CORDONED"
)

// Cohort is a group of tenants that lend one another their unused
// nominal quota (sharing.go).
type Cohort struct {
	Name string
	// Nominal is a pool of the cohort's own, lent to its members.
	Nominal job.Vector
	// GPUTypes is the pool's GPUs per model.
	GPUTypes map[string]int64
}

// Config holds the scheduler's tunables.
type Config struct {
	// StarvationAge is how long a pending job may be passed by others
	// before it holds the line: under BEST_EFFORT_FIFO no later job of its
	// tenant starts ahead of it, and, when it waits for capacity, no later
	// job of any tenant may take the resources it lacks. Zero disables
	// starvation protection.
	StarvationAge time.Duration
	// BorrowAging bounds how long fair share may pass a borrower by: a
	// job that would borrow in its cohort and has waited this long goes
	// before the cohort's other borrowers, the longest waiting first
	// (whatever the tenants' weighted shares), and, while what it lacks
	// is the cohort's pool, no later job of another tenant borrows in
	// the dimensions it needs (doc.go: aging). Zero disables it: the
	// weighted share alone orders borrowers.
	BorrowAging time.Duration
	// GPUTypeLabel is the node label that names a node's GPU model
	// (default "nvidia.com/gpu.product"): quotas per GPU model count a
	// job's GPUs on the model of the nodes it runs on.
	GPUTypeLabel string
}

// DefaultGPUTypeLabel is the label GPU Feature Discovery puts on nodes.
const DefaultGPUTypeLabel = "nvidia.com/gpu.product"

// Tenant is a tenant as the scheduler sees it.
type Tenant struct {
	ID string
	// Quota limits the demand of the tenant's admitted jobs; a zero amount
	// is no limit.
	Quota      job.Vector
	Scheduling tenant.Scheduling
	// RunTime is the typical run time of the tenant's recent jobs (their
	// median), for start estimates; zero when there is no history.
	RunTime time.Duration
	// Sharing is the tenant's cohort, borrowing, lending, fair share and
	// budget (sharing.go). Its zero value is today's wall: the quota
	// limits the tenant, nobody borrows from it, nobody preempts it.
	Sharing Sharing
	// Clusters are the clusters the tenant's jobs may be placed in
	// (tenant.Tenant.Clusters); empty: every cluster. A job's own
	// selector and names narrow them further.
	Clusters []string
}

// Key identifies a job.
type Key struct {
	Tenant string
	UID    string
}

// Job is a pending or admitted job.
type Job struct {
	Key      Key
	Name     string
	Priority int32
	// Seq is the submission order.
	Seq int64
	// QueuedAt is when the job last entered the queue: its submission, or
	// its requeue after a preemption or unschedulable pods.
	QueuedAt time.Time
	// Groups are the job's pods, one group per replica type (and the
	// TensorBoard pod).
	Groups []Group
	// MaxRunTime is the job's activeDeadlineSeconds (zero: none).
	MaxRunTime time.Duration
	// GracePeriod is how long its pods take to stop when preempted.
	GracePeriod time.Duration
	// NonPreemptible (spec.preemptible: false): never preempted, by its
	// own tenant or any other; it runs only inside its tenant's nominal
	// quota (it never borrows).
	NonPreemptible bool
	// GPUType is the GPU model the job asks for ("": any). The decision
	// places its GPU pods on nodes of that model and counts its GPUs
	// against the tenant's quota of that model.
	GPUType string
	// ClusterSelector (spec.clusterSelector) are labels a cluster must
	// have for the job to run there; Clusters (spec.clusters) the names
	// of the clusters it may run in (empty: any). A gang runs whole
	// inside one cluster.
	ClusterSelector map[string]string
	Clusters        []string

	Admitted bool

	// Pending jobs only.
	//
	// NotBefore: a job requeued because its pods stayed unschedulable is
	// not admitted again before this time (its backoff).
	NotBefore time.Time
	// PreemptedBy is the job that preempted it, while it waits to run
	// again, and PreemptedByName that job's name.
	PreemptedBy     Key
	PreemptedByName string
	// Dependencies are spec.dependsOn, with what the loop saw of each
	// (deps.go); CancelOnDependencyFailure is onDependencyFailure CANCEL.
	Dependencies              []Dependency
	CancelOnDependencyFailure bool

	// Admitted jobs only.
	//
	// StartTime is when it was admitted, its pods created right after
	// (zero: not recorded; a job admitted before admissions wrote it has
	// it from its first pass).
	StartTime time.Time
	// PreemptingFor is set while the job is being preempted: the pending
	// job it makes room for.
	PreemptingFor Key
	// Cluster is the cluster the job runs in (Decision.Clusters when it
	// was admitted).
	Cluster string
	// OnNodes is what the job's pods that are on nodes use there, by
	// node name within Cluster (those amounts are part of the nodes'
	// Used).
	OnNodes map[string]job.Vector
}

// Group is a set of identical pods of a job.
type Group struct {
	Name  string
	Count int32
	// Request is what each pod requests.
	Request   job.Vector
	Placement Placement
	// PlacementKey is Placement.Key(), computed once by NewGroup.
	PlacementKey string
	// Placed counts the pods of an admitted job's group that are on nodes
	// or need no capacity any more (finished for good); the others get
	// capacity reserved for them.
	Placed int32
}

// NewGroup returns a group with its placement key computed.
func NewGroup(name string, count int32, request job.Vector, p Placement) Group {
	return Group{Name: name, Count: count, Request: request, Placement: p, PlacementKey: p.Key()}
}

// Placement is where a group's pods may run: the fields of the pods that
// constrain nodes (internal/kube's Placement converts to it).
type Placement struct {
	NodeSelector map[string]string
	Affinity     *corev1.Affinity
	Tolerations  []corev1.Toleration
}

// Key is a stable identity of the placement: groups with equal keys may
// run on the same nodes.
func (p Placement) Key() string {
	if len(p.NodeSelector) == 0 && p.Affinity == nil && len(p.Tolerations) == 0 {
		return ""
	}
	// json.Marshal orders map keys, so equal placements give equal bytes.
	b, _ := json.Marshal(p)
	h := fnv.New128a()
	h.Write(b)
	return string(h.Sum(nil))
}

// Node is a node as the scheduler sees it.
type Node struct {
	// Cluster is the cluster the node belongs to ("": the default one);
	// a node's Name is unique only within its cluster.
	Cluster string
	Name    string
	Labels  map[string]string
	Taints  []corev1.Taint
	// Unschedulable: cordoned, or not ready. Nothing new goes there.
	Unschedulable bool
	Allocatable   job.Vector
	// Used is what the pods bound to the node use, Trainyard's and
	// others', unless they finished.
	Used job.Vector
}

// Decision is the outcome of one scheduling cycle.
type Decision struct {
	// Admit lists the jobs to admit, in the order they were admitted.
	Admit []Key
	// Assigned is, for each admitted job, the node the cycle found for
	// each of its pods (group by group), all in the job's cluster
	// (Clusters): the proof that the gang fits. kube-scheduler places the
	// pods; it may choose other nodes of that cluster.
	Assigned map[Key][]string
	// Clusters is, for each admitted job, the cluster chosen for it
	// ("": the default cluster). Its pods must be created there.
	Clusters map[Key]string
	// GPUTypes is, for each admitted job that asked for any GPU model of
	// a tenant with quotas per model, the model it was counted against:
	// its GPU pods must go to nodes of that model (a node selector on
	// Config.GPUTypeLabel).
	GPUTypes map[Key]string
	// Preempt lists the running jobs to preempt, with why.
	Preempt []Preemption
	// Waiting has one entry per pending job that is not admitted, in
	// cluster order; those waiting for a dependency (no place in the
	// line: positions 0) last, in submission order.
	Waiting []Waiting
	// DependencyFailed are pending jobs a dependency of which can never
	// be met: they end (deps.go).
	DependencyFailed []DependencyFailure
}

// Preemption is a running job to stop and requeue so that a pending job
// fits: one of higher priority of the same tenant (PreemptPriority), one
// of a tenant taking back its nominal quota (PreemptReclaim, or
// PreemptBudget when the victim's tenant is over its GPU-hour budget),
// or one of a tenant with a smaller weighted share (PreemptFairShare).
type Preemption struct {
	Victim     Key
	VictimName string
	By         Key
	ByName     string
	ByPriority int32
	// Reason is what the preemptor lacked: WaitQuota or WaitCapacity.
	Reason job.WaitReason
	// Kind is the rule that chose the victim.
	Kind PreemptionKind
	// Message explains it, with the figures that decided it, for the
	// victim's events and Preempted condition.
	Message string
	// ByShare and VictimShare are the two tenants' weighted shares
	// (sharing.go) that decided a cross-tenant preemption: the
	// preemptor's once its job runs, the victim tenant's before it loses
	// the victim. Zero for PreemptPriority.
	ByShare, VictimShare float64
}

// PreemptionKind is the rule behind a preemption.
type PreemptionKind string

const (
	// PreemptPriority: a job of higher priority of the same tenant.
	PreemptPriority PreemptionKind = "PRIORITY"
	// PreemptReclaim: a tenant takes back its nominal quota from a
	// borrower in its cohort.
	PreemptReclaim PreemptionKind = "RECLAIM"
	// PreemptFairShare: a borrower with a smaller weighted share takes
	// borrowed capacity from one with a larger share.
	PreemptFairShare PreemptionKind = "FAIR_SHARE"
	// PreemptBudget: the victim's tenant is over its GPU-hour budget and
	// ran on borrowed capacity; its jobs are first in line for reclaim.
	PreemptBudget PreemptionKind = "BUDGET"
)

// Waiting is where a pending job stands.
type Waiting struct {
	Key Key
	job.QueueInfo
}
