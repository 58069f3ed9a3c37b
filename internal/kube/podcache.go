package kube

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/job"
)

// A Trainyard worker process watches every pod of the cluster once: its
// scheduler reads every pod's node, phase and requests (capacity that
// others use counts too), its worker the state of Trainyard's own pods.
// Two informers would have the API server send, and the process decode,
// every pod event twice; one informer (PodInformers) serves both, and its
// cache keeps of a pod only what either reads (SlimPod).

// PodInformers returns an informer factory whose pod informer lists and
// watches every pod of the cluster and caches SlimPod's copies. Components
// of one process share it: each adds its indexers and handlers before
// Start, and each may call Start (it starts an informer once).
func PodInformers(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(SlimPod))
}

// SlimPod keeps of a pod what the scheduler and the worker read: of every
// pod its identity, deletion, node, phase and requests (containers, init
// containers, pod level, overhead); of Trainyard's pods also their labels, finalizers,
// hostname, container ports and status without images, other IPs or probes' detail
// (ObservePod, RenderEndpointSlice). Nothing may write a cached pod back:
// it lacks most of its spec.
func SlimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a tombstone
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			DeletionTimestamp: pod.DeletionTimestamp, DeletionGracePeriodSeconds: pod.DeletionGracePeriodSeconds,
		},
		Spec:   corev1.PodSpec{NodeName: pod.Spec.NodeName, Overhead: pod.Spec.Overhead, Resources: pod.Spec.Resources},
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
	if pod.Labels[LabelManagedBy] != ManagedByValue {
		return out, nil
	}
	out.Labels, out.Finalizers = pod.Labels, pod.Finalizers
	out.Spec.Hostname = pod.Spec.Hostname
	for i, c := range pod.Spec.Containers {
		out.Spec.Containers[i].Ports = c.Ports // the job's EndpointSlice lists them
		if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == job.TFConfigEnv }) {
			// The name alone: whether the replica has peers (HasPeers).
			out.Spec.Containers[i].Env = []corev1.EnvVar{{Name: job.TFConfigEnv}}
		}
	}
	s := &out.Status
	s.Reason, s.Message, s.Conditions, s.PodIP = pod.Status.Reason, pod.Status.Message, pod.Status.Conditions, pod.Status.PodIP
	for _, cs := range pod.Status.ContainerStatuses {
		s.ContainerStatuses = append(s.ContainerStatuses, corev1.ContainerStatus{
			Name: cs.Name, Ready: cs.Ready, RestartCount: cs.RestartCount,
			State: cs.State, LastTerminationState: cs.LastTerminationState,
		})
	}
	return out, nil
}

// HasPeers reports whether a replica pod has peers to find: whether its
// job is distributed, which the pod says by carrying TF_CONFIG (a job of
// a single pod has neither TF_CONFIG nor an EndpointSlice).
func HasPeers(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == job.TFConfigEnv }) {
			return true
		}
	}
	return false
}

// Managed reports whether obj (or a tombstone's object) carries Trainyard's
// managed-by label.
func Managed(obj any) bool {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(metav1.Object)
	return ok && m.GetLabels()[LabelManagedBy] == ManagedByValue
}
