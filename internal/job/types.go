package job

import "time"

// ReplicaType is a TensorFlow task type. Its value is the TF_CONFIG key and
// the middle part of pod names (<job>-<type>-<index>).
type ReplicaType string

const (
	Chief     ReplicaType = "chief"
	Worker    ReplicaType = "worker"
	PS        ReplicaType = "ps"
	Evaluator ReplicaType = "evaluator"
)

// ReplicaTypes lists the types in the order Trainyard reports and renders them.
var ReplicaTypes = []ReplicaType{Chief, Worker, PS, Evaluator}

// RestartPolicy says when a replica is restarted (by recreating its pod).
type RestartPolicy string

const (
	RestartNever     RestartPolicy = "Never"
	RestartOnFailure RestartPolicy = "OnFailure"
	RestartExitCode  RestartPolicy = "ExitCode"
	RestartAlways    RestartPolicy = "Always"
)

// CleanPodPolicy says which pods are deleted when a job finishes.
type CleanPodPolicy string

const (
	CleanNone    CleanPodPolicy = "None"
	CleanRunning CleanPodPolicy = "Running"
	CleanAll     CleanPodPolicy = "All"
)

// SuccessPolicy says when a job has succeeded.
type SuccessPolicy string

const (
	SuccessChiefOrWorker0 SuccessPolicy = "ChiefOrWorker0"
	SuccessAllWorkers     SuccessPolicy = "AllWorkers"
)

// Defaults applied by Spec.Default.
const (
	DefaultPort = 2222
	// DefaultTerminationGracePeriodSeconds is Kubernetes' own default.
	DefaultTerminationGracePeriodSeconds = 30
	DefaultBackoffLimit                  = 3
	DefaultCheckpointMount               = "/checkpoints"
	DefaultTensorBoardImage              = "tensorflow/tensorflow:2.16.1"
	TensorBoardPort                      = 6006
)

// Job is a training job as Trainyard keeps it. Spec is what the user asked
// for; Status is what the worker observed.
type Job struct {
	UID         string            `json:"uid"`
	Tenant      string            `json:"tenant"`
	Name        string            `json:"name"` // the job id, a DNS-1035 label
	DisplayName string            `json:"displayName,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Spec        Spec              `json:"spec"`
	Status      Status            `json:"status"`
	Creator     string            `json:"creator,omitempty"`
	CreateTime  time.Time         `json:"createTime"`
	UpdateTime  time.Time         `json:"updateTime"`
}

// Spec is the desired shape of a job. Its JSON form is stored in Postgres,
// so field names are part of the schema: add, never rename.
type Spec struct {
	Replicas      []ReplicaSpec     `json:"replicas"`
	RunPolicy     RunPolicy         `json:"runPolicy"`
	SuccessPolicy SuccessPolicy     `json:"successPolicy,omitempty"`
	Checkpoint    *CheckpointVolume `json:"checkpoint,omitempty"`
	TensorBoard   *TensorBoard      `json:"tensorboard,omitempty"`
	Priority      int32             `json:"priority,omitempty"`
	// TerminationGracePeriodSeconds is how long replicas have between
	// SIGTERM and SIGKILL when their pods are deleted (preemption, cancel,
	// cleanup): time to write a last checkpoint. Unset means
	// DefaultTerminationGracePeriodSeconds (GracePeriod).
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// Preemptible false keeps the job from being preempted, by its own
	// tenant or another; it then runs only inside its tenant's nominal
	// quota (it never borrows). Unset means true.
	Preemptible *bool `json:"preemptible,omitempty"`
	// DependsOn are jobs of the same tenant this one waits for (deps.go).
	DependsOn []Dependency `json:"dependsOn,omitempty"`
	// OnDependencyFailure: what becomes of the job when a dependency can
	// never be met. Unset means FAIL.
	OnDependencyFailure OnDependencyFailure `json:"onDependencyFailure,omitempty"`
	// ClusterSelector are labels a cluster must have for the job to run
	// there; Clusters the ids of the clusters it may run in (empty: any).
	// The job runs whole inside one of them (internal/admission).
	ClusterSelector map[string]string `json:"clusterSelector,omitempty"`
	Clusters        []string          `json:"clusters,omitempty"`
}

// NonPreemptible reports spec.preemptible: false.
func (s Spec) NonPreemptible() bool { return s.Preemptible != nil && !*s.Preemptible }

// GracePeriod is the spec's termination grace period, defaulted.
func (s Spec) GracePeriod() time.Duration {
	if g := s.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return DefaultTerminationGracePeriodSeconds * time.Second
}

// ReplicaSpec is one replica type and the pods that run it.
type ReplicaSpec struct {
	Type               ReplicaType       `json:"type"`
	Count              int32             `json:"count"`
	Image              string            `json:"image"`
	Command            []string          `json:"command,omitempty"`
	Args               []string          `json:"args,omitempty"`
	WorkingDir         string            `json:"workingDir,omitempty"`
	Env                []EnvVar          `json:"env,omitempty"`
	Resources          Resources         `json:"resources"`
	NodeSelector       map[string]string `json:"nodeSelector,omitempty"`
	Tolerations        []Toleration      `json:"tolerations,omitempty"`
	Affinity           *Affinity         `json:"affinity,omitempty"`
	PodLabels          map[string]string `json:"podLabels,omitempty"`
	PodAnnotations     map[string]string `json:"podAnnotations,omitempty"`
	Port               int32             `json:"port"`
	RestartPolicy      RestartPolicy     `json:"restartPolicy"`
	RetryableExitCodes []int32           `json:"retryableExitCodes,omitempty"`
	SecretVolumes      []SecretVolume    `json:"secretVolumes,omitempty"`
	Privileged         bool              `json:"privileged,omitempty"`
	// MountServiceAccountToken mounts a token of the tenant's job
	// ServiceAccount (which holds no rights) in the pods; off by default.
	MountServiceAccountToken bool `json:"mountServiceAccountToken,omitempty"`
	// Health probes of the container (probes.go).
	LivenessProbe  *Probe `json:"livenessProbe,omitempty"`
	ReadinessProbe *Probe `json:"readinessProbe,omitempty"`
	StartupProbe   *Probe `json:"startupProbe,omitempty"`
}

// EnvVar is a literal value or, when Secret is set, a key of a tenant secret.
type EnvVar struct {
	Name   string        `json:"name"`
	Value  string        `json:"value,omitempty"`
	Secret *SecretKeyRef `json:"secret,omitempty"`
}

// SecretKeyRef names a key of a tenant secret (by the secret's id).
type SecretKeyRef struct {
	Secret string `json:"secret"`
	Key    string `json:"key"`
}

// SecretVolume mounts a tenant secret as files.
type SecretVolume struct {
	Secret    string `json:"secret"`
	MountPath string `json:"mountPath"`
}

// Resources are Kubernetes quantities as the user wrote them.
type Resources struct {
	CPU         string `json:"cpu,omitempty"`
	Memory      string `json:"memory,omitempty"`
	GPU         int32  `json:"gpu,omitempty"`
	CPULimit    string `json:"cpuLimit,omitempty"`
	MemoryLimit string `json:"memoryLimit,omitempty"`
}

// Toleration mirrors a Kubernetes toleration.
type Toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// Affinity is node affinity: required terms (any may match) and preferences.
type Affinity struct {
	Required  []NodeSelectorTerm `json:"required,omitempty"`
	Preferred []PreferredTerm    `json:"preferred,omitempty"`
}

// NodeSelectorTerm holds requirements that must all match.
type NodeSelectorTerm struct {
	MatchExpressions []NodeSelectorRequirement `json:"matchExpressions"`
}

// NodeSelectorRequirement is a node label requirement.
type NodeSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// PreferredTerm is a weighted node preference.
type PreferredTerm struct {
	Weight     int32            `json:"weight"`
	Preference NodeSelectorTerm `json:"preference"`
}

// RunPolicy covers restarts, deadlines and cleanup.
type RunPolicy struct {
	BackoffLimit            int32          `json:"backoffLimit"`
	ActiveDeadlineSeconds   *int64         `json:"activeDeadlineSeconds,omitempty"`
	TTLSecondsAfterFinished *int32         `json:"ttlSecondsAfterFinished,omitempty"`
	CleanPodPolicy          CleanPodPolicy `json:"cleanPodPolicy"`
}

// CheckpointVolume is a PersistentVolumeClaim mounted in every replica.
type CheckpointVolume struct {
	ClaimName string `json:"claimName"`
	MountPath string `json:"mountPath"`
}

// TensorBoard is an optional TensorBoard pod reading the checkpoint volume.
type TensorBoard struct {
	Image  string `json:"image"`
	LogDir string `json:"logDir,omitempty"`
}

// State is the phase of a job.
type State string

const (
	Queued     State = "QUEUED"
	Starting   State = "STARTING"
	Running    State = "RUNNING"
	Restarting State = "RESTARTING"
	Succeeded  State = "SUCCEEDED"
	Failed     State = "FAILED"
	Cancelled  State = "CANCELLED"
	// Suspended: a user suspended the job; its pods are gone, it holds no
	// quota, and it waits for a resume (which makes it QUEUED again).
	Suspended State = "SUSPENDED"
)

// States lists every state.
var States = []State{Queued, Starting, Running, Restarting, Succeeded, Failed, Cancelled, Suspended}

// Final reports whether a job in state s will never change state again.
func (s State) Final() bool { return s == Succeeded || s == Failed || s == Cancelled }

// Status is the observed state of a job. Stored as JSON beside the state column.
type Status struct {
	State           State           `json:"state"`
	Reason          string          `json:"reason,omitempty"`
	Message         string          `json:"message,omitempty"`
	Conditions      []Condition     `json:"conditions,omitempty"`
	StartTime       *time.Time      `json:"startTime,omitempty"`
	CompletionTime  *time.Time      `json:"completionTime,omitempty"`
	ReplicaCounts   []ReplicaCounts `json:"replicaCounts,omitempty"`
	Replicas        []ReplicaStatus `json:"replicas,omitempty"`
	Restarts        int32           `json:"restarts"`
	CancelRequested bool            `json:"cancelRequested,omitempty"`
	// SuspendRequested: a user asked to suspend the job; its pods are being
	// stopped (like CancelRequested, a column is the truth).
	SuspendRequested bool `json:"suspendRequested,omitempty"`
	// CleanedUp is set once the Kubernetes objects of a finished job are gone.
	CleanedUp bool `json:"cleanedUp,omitempty"`
	// Requeues counts how often the job went back to the queue (preempted,
	// or its pods stayed unschedulable); they are not restarts.
	Requeues int32 `json:"requeues,omitempty"`
	// Requeuing is set while the job's pods are being stopped to send it
	// back to the queue.
	Requeuing *Requeuing `json:"requeuing,omitempty"`
	// GPUType is the GPU model the scheduler counted the job against at
	// its last admission (a job of any model, of a tenant with quotas per
	// model); its GPU pods are pinned to that model's nodes.
	GPUType string `json:"gpuType,omitempty"`
	// Cluster is the cluster the scheduler admitted the job to at its last
	// admission; its pods run there.
	Cluster string `json:"cluster,omitempty"`
	// Dependencies are the results of spec.dependsOn's jobs, copied when
	// the job was admitted (deps.go).
	Dependencies []DependencyResult `json:"dependencies,omitempty"`
}

// Requeuing is why a job goes back to the queue.
type Requeuing struct {
	// Reason is ReasonPreempted or ReasonUnschedulable.
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// PreemptedBy is the uid of the job that preempted it.
	PreemptedBy string `json:"preemptedBy,omitempty"`
}

// Condition types.
const (
	CondQueued        = "Queued"
	CondAdmitted      = "Admitted"
	CondRunning       = "Running"
	CondRestarting    = "Restarting"
	CondSucceeded     = "Succeeded"
	CondFailed        = "Failed"
	CondCancelled     = "Cancelled"
	CondUnschedulable = "Unschedulable"
	// CondPreempted is true while a preempted job waits to run again.
	CondPreempted = "Preempted"
	// CondSuspended is true while the job is suspended.
	CondSuspended = "Suspended"
)

// Condition is a named boolean fact about a job, with why and since when.
type Condition struct {
	Type               string    `json:"type"`
	Status             bool      `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
}

// ReplicaCounts counts the replicas of one type by state.
type ReplicaCounts struct {
	Type      ReplicaType `json:"type"`
	Pending   int32       `json:"pending"`
	Active    int32       `json:"active"`
	Succeeded int32       `json:"succeeded"`
	Failed    int32       `json:"failed"`
}

// ReplicaState is the state of one replica.
type ReplicaState string

const (
	ReplicaPending   ReplicaState = "PENDING"
	ReplicaRunning   ReplicaState = "RUNNING"
	ReplicaSucceeded ReplicaState = "SUCCEEDED"
	ReplicaFailed    ReplicaState = "FAILED"
)

// ReplicaStatus is one replica: its current pod and how its last run ended.
type ReplicaStatus struct {
	Type            ReplicaType  `json:"type"`
	Index           int32        `json:"index"`
	Pod             string       `json:"pod"`
	Node            string       `json:"node,omitempty"`
	State           ReplicaState `json:"state"`
	Restarts        int32        `json:"restarts"`
	LastTermination *Termination `json:"lastTermination,omitempty"`
}

// Termination is how a replica's container ended, kept after its pod is gone.
type Termination struct {
	// Attempt is the restart count of the replica when this run started; it
	// tells a recorded termination from a new one.
	Attempt    int32     `json:"attempt"`
	ExitCode   int32     `json:"exitCode"`
	Reason     string    `json:"reason,omitempty"`
	Message    string    `json:"message,omitempty"`
	LogTail    string    `json:"logTail,omitempty"`
	FinishTime time.Time `json:"finishTime"`
}

// Event is something that happened to a job, in the order it happened.
type Event struct {
	ID         int64     `json:"id"`
	JobUID     string    `json:"jobUid"`
	Tenant     string    `json:"tenant"`
	Job        string    `json:"job"`
	Type       string    `json:"type"` // Normal or Warning
	Reason     string    `json:"reason"`
	Message    string    `json:"message"`
	State      State     `json:"state"`
	CreateTime time.Time `json:"createTime"`
}

// Event types.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// ReasonDeleted is the reason of the event DeleteJob writes. It is a job's
// last event and outlives the job's row (a tombstone, until event
// retention): watchers that resume later still learn that the job went.
const ReasonDeleted = "Deleted"
