package scheduler

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
)

// The scheduler watches every node and every pod of the cluster, but keeps
// only what scheduling reads (slimPod, slimNode): a pod's node, phase,
// requests and Trainyard labels; a node's labels, taints, allocatable and
// whether it takes pods. Ten thousand pods then cost a few MiB.

// slimPod is the transform of the pod informer.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a tombstone
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			Labels: trainyardLabels(pod.Labels),
		},
		Spec: corev1.PodSpec{
			NodeName: pod.Spec.NodeName,
			Overhead: pod.Spec.Overhead,
		},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
	for _, c := range pod.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}})
	}
	for _, c := range pod.Spec.InitContainers {
		out.Spec.InitContainers = append(out.Spec.InitContainers, corev1.Container{
			Name: c.Name, RestartPolicy: c.RestartPolicy, Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests},
		})
	}
	return out, nil
}

// trainyardLabels keeps the labels that say which job and replica a pod is.
func trainyardLabels(l map[string]string) map[string]string {
	if l[kube.LabelManagedBy] != kube.ManagedByValue {
		return nil
	}
	out := map[string]string{}
	for k, v := range l {
		if k == kube.LabelManagedBy || strings.HasPrefix(k, "trainyard.dev/") {
			out[k] = v
		}
	}
	return out
}

// slimNode is the transform of the node informer.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels},
		Spec:       corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints},
		Status:     corev1.NodeStatus{Allocatable: n.Status.Allocatable},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out, nil
}

// nodeChanged reports whether a node update changes what scheduling reads.
func nodeChanged(old, cur any) bool {
	a, ok1 := old.(*corev1.Node)
	b, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return ready(a) != ready(b) || !equality.Semantic.DeepEqual(a.Status.Allocatable, b.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints) || !equality.Semantic.DeepEqual(a.Labels, b.Labels)
}

// ready reports whether a node takes new pods: not cordoned, and Ready.
func ready(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// vectorOf reads a Kubernetes resource list in the scheduler's units; a
// resource it does not know is ignored, a value past int64 saturates.
func vectorOf(rl corev1.ResourceList) job.Vector {
	var v job.Vector
	for _, r := range job.AllResources {
		if q, ok := rl[corev1.ResourceName(r.Name())]; ok {
			if a, err := r.Amount(q); err == nil {
				v[r] = a
			}
		}
	}
	return v
}

// podRequests is what a pod takes from its node, as kube-scheduler counts
// it: its containers' requests (init containers and overhead included) and
// one pod slot.
func podRequests(pod *corev1.Pod) job.Vector {
	v := vectorOf(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	v[job.Pods] = 1
	return v
}

// finished reports whether a pod holds nothing on its node any more.
func finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
