package kube

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/job"
)

// ContainerName is the name of the one container of a replica pod.
const ContainerName = "tensorflow"

// ObservePod turns a Trainyard replica pod into what Plan looks at. It
// returns false for any other pod (TensorBoard, foreign, or with labels
// that do not parse), which Plan must not count as a replica.
func ObservePod(pod *corev1.Pod) (job.ObservedPod, bool) {
	l := pod.Labels
	if l[LabelManagedBy] != ManagedByValue || l[LabelComponent] != ComponentReplica {
		return job.ObservedPod{}, false
	}
	t := job.ReplicaType(l[LabelReplicaType])
	index, ok1 := parseInt32(l[LabelReplicaIndex])
	attempt, ok2 := parseInt32(l[LabelAttempt])
	if !ok1 || !ok2 || !t.Valid() {
		return job.ObservedPod{}, false
	}
	o := job.ObservedPod{
		Name:          pod.Name,
		Type:          t,
		Index:         index,
		Attempt:       attempt,
		Phase:         podPhase(pod.Status.Phase),
		Ready:         ready(pod),
		Deleting:      pod.DeletionTimestamp != nil,
		Node:          pod.Spec.NodeName,
		IP:            pod.Status.PodIP,
		Unschedulable: unschedulable(pod),
		Waiting:       waiting(pod),
		Terminated:    terminated(pod, attempt),
	}
	if g := pod.DeletionGracePeriodSeconds; pod.DeletionTimestamp != nil && g != nil && *g == 0 && len(pod.Finalizers) == 0 {
		o.DeletedAt = pod.DeletionTimestamp.Time
	}
	return o, true
}

// JobKeyOf reads which job a Trainyard object belongs to from its labels;
// the worker's informer handlers use it to queue the owning job.
func JobKeyOf(obj metav1.Object) (tenant, uid string, ok bool) {
	l := obj.GetLabels()
	if l[LabelManagedBy] != ManagedByValue || l[LabelTenant] == "" || l[LabelJobUID] == "" {
		return "", "", false
	}
	return l[LabelTenant], l[LabelJobUID], true
}

func parseInt32(s string) (int32, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

func podPhase(p corev1.PodPhase) job.PodPhase {
	switch p {
	case corev1.PodPending, "":
		return job.PodPending
	case corev1.PodRunning:
		return job.PodRunning
	case corev1.PodSucceeded:
		return job.PodSucceeded
	case corev1.PodFailed:
		return job.PodFailed
	}
	return job.PodUnknown
}

func unschedulable(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			if c.Message == "" {
				return corev1.PodReasonUnschedulable
			}
			return c.Message
		}
	}
	return ""
}

// stuckReasons are the kubelet's waiting reasons that need a person: an
// image that cannot be pulled, a Secret or ConfigMap key that is missing,
// a container the runtime refuses. ContainerCreating and PodInitializing
// are only slow, and not reported.
var stuckReasons = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// waiting is "<reason>: <message>" of the tensorflow container when the
// kubelet reports it stuck before it started.
func waiting(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != ContainerName || cs.State.Waiting == nil || !stuckReasons[cs.State.Waiting.Reason] {
			continue
		}
		if w := cs.State.Waiting; w.Message != "" {
			return w.Reason + ": " + w.Message
		}
		return cs.State.Waiting.Reason
	}
	return ""
}

// terminated is how the tensorflow container ended: its terminated state,
// else its last one, else — for a pod that failed without its container
// ever reporting an end (evicted, node lost, deadline) — the pod's own
// reason with exit code -1.
func terminated(pod *corev1.Pod, attempt int32) *job.Termination {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != ContainerName {
			continue
		}
		ct := cs.State.Terminated
		if ct == nil {
			ct = cs.LastTerminationState.Terminated
		}
		if ct != nil {
			return &job.Termination{
				Attempt:    attempt,
				ExitCode:   ct.ExitCode,
				Reason:     ct.Reason,
				Message:    ct.Message,
				FinishTime: ct.FinishedAt.Time,
			}
		}
	}
	if pod.Status.Phase != corev1.PodFailed {
		return nil
	}
	reason := pod.Status.Reason
	if reason == "" {
		reason = "PodFailed"
	}
	return &job.Termination{
		Attempt:    attempt,
		ExitCode:   -1,
		Reason:     reason,
		Message:    pod.Status.Message,
		FinishTime: lastTransition(pod).Time,
	}
}

// lastTransition approximates when a pod without a container end failed:
// the latest change of any of its conditions.
func lastTransition(pod *corev1.Pod) (t metav1.Time) {
	for _, c := range pod.Status.Conditions {
		if c.LastTransitionTime.After(t.Time) {
			t = c.LastTransitionTime
		}
	}
	return t
}
