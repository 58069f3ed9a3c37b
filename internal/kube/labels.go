package kube

import (
	"strconv"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/trainyard/trainyard/internal/job"
)

// Label keys and values Trainyard puts on every object it creates. The
// worker's informers select on LabelManagedBy; a job's objects are found by
// LabelJobUID (the name is reused after a delete, the uid is not).
const (
	LabelManagedBy    = job.LabelManagedBy // app.kubernetes.io/managed-by
	ManagedByValue    = "trainyard"
	LabelTenant       = "trainyard.dev/tenant"
	LabelJob          = "trainyard.dev/job"
	LabelJobUID       = "trainyard.dev/job-uid"
	LabelReplicaType  = "trainyard.dev/replica-type"
	LabelReplicaIndex = "trainyard.dev/replica-index"
	// LabelAttempt is the replica's restart count when its pod was created,
	// a decimal integer. It tells a recreated pod from the one it replaced.
	LabelAttempt   = "trainyard.dev/attempt"
	LabelComponent = "trainyard.dev/component"

	ComponentReplica     = "replica"
	ComponentTensorBoard = "tensorboard"
)

// ManagedSelector selects every object Trainyard manages.
func ManagedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue})
}

// jobLabels are the labels every object of job j carries.
func jobLabels(j job.Job) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedByValue,
		LabelTenant:    j.Tenant,
		LabelJob:       j.Name,
		LabelJobUID:    j.UID,
	}
}

func replicaLabels(j job.Job, t job.ReplicaType, index, attempt int32) map[string]string {
	l := jobLabels(j)
	l[LabelComponent] = ComponentReplica
	l[LabelReplicaType] = string(t)
	l[LabelReplicaIndex] = strconv.Itoa(int(index))
	l[LabelAttempt] = strconv.Itoa(int(attempt))
	return l
}
