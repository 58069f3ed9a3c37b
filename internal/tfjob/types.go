package tfjob

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubeflow.org/v1 TFJob as Kubeflow's training operator (v1.x)
// defines it, down to the field names and JSON shapes, so that a manifest
// written for it decodes here unchanged and a field it does not know is
// reported as unknown. Mirrored rather than imported: the operator's module
// would bring its controllers and their dependencies for a few structs.

// APIVersion and Kind of the one object Convert accepts.
const (
	APIVersion = "kubeflow.org/v1"
	Kind       = "TFJob"
)

// TFJob is kubeflow.org/v1 TFJob.
type TFJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TFJobSpec `json:"spec,omitempty"`
	// Status is the operator's; a manifest exported from a cluster
	// carries it. Never read.
	Status json.RawMessage `json:"status,omitempty"`
}

// TFJobSpec is the TFJob's spec.
type TFJobSpec struct {
	RunPolicy RunPolicy `json:"runPolicy,omitempty"`
	// SuccessPolicy is "" (the chief, else worker 0) or "AllWorkers".
	SuccessPolicy *string `json:"successPolicy,omitempty"`
	// TFReplicaSpecs by type: Chief (or Master), Worker, PS, Evaluator,
	// in any case (the operator normalizes them).
	TFReplicaSpecs      map[string]*ReplicaSpec `json:"tfReplicaSpecs"`
	EnableDynamicWorker bool                    `json:"enableDynamicWorker,omitempty"`
}

// ReplicaSpec is one replica type.
type ReplicaSpec struct {
	Replicas      *int32                 `json:"replicas,omitempty"`
	Template      corev1.PodTemplateSpec `json:"template,omitempty"`
	RestartPolicy string                 `json:"restartPolicy,omitempty"`
}

// RunPolicy is the operator's common run policy.
type RunPolicy struct {
	CleanPodPolicy          *string           `json:"cleanPodPolicy,omitempty"`
	TTLSecondsAfterFinished *int32            `json:"ttlSecondsAfterFinished,omitempty"`
	ActiveDeadlineSeconds   *int64            `json:"activeDeadlineSeconds,omitempty"`
	BackoffLimit            *int32            `json:"backoffLimit,omitempty"`
	SchedulingPolicy        *SchedulingPolicy `json:"schedulingPolicy,omitempty"`
	Suspend                 *bool             `json:"suspend,omitempty"`
	ManagedBy               *string           `json:"managedBy,omitempty"`
}

// SchedulingPolicy is for gang schedulers (Volcano, scheduler-plugins).
type SchedulingPolicy struct {
	MinAvailable           *int32                                    `json:"minAvailable,omitempty"`
	Queue                  string                                    `json:"queue,omitempty"`
	MinResources           map[corev1.ResourceName]resource.Quantity `json:"minResources,omitempty"`
	PriorityClass          string                                    `json:"priorityClass,omitempty"`
	ScheduleTimeoutSeconds *int32                                    `json:"scheduleTimeoutSeconds,omitempty"`
}

// Names the operator gives things, which Trainyard gives the same.
const (
	// ContainerName is the container that runs TensorFlow.
	ContainerName = "tensorflow"
	// PortName is the container port TF_CONFIG addresses.
	PortName = "tfjob-port"
)
