package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/trainyard/trainyard/internal/job"
)

// The scheduler watches every node and every pod of the cluster, but keeps
// only what scheduling reads (kube.SlimPod, slimNode): a pod's node, phase,
// requests and Trainyard labels; a node's labels, taints, allocatable and
// whether it takes pods. Ten thousand pods then cost a few MiB.

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
