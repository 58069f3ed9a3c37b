package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// What the worker reads of a Trainyard pod is the same from the slim cached
// copy as from the pod the API server sent; the rest is not kept.
func TestSlimPodKeepsWhatTheWorkerReads(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	grace := int64(0)
	labels := map[string]string{
		LabelManagedBy: ManagedByValue, LabelComponent: ComponentReplica,
		LabelTenant: "acme", LabelJobUID: "u1", LabelReplicaType: "worker",
		LabelReplicaIndex: "1", LabelAttempt: "2",
	}
	full := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "w-1", Namespace: "ns", UID: "pod-uid", ResourceVersion: "42", Labels: labels,
				Annotations:       map[string]string{"big": "annotation"},
				ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
				DeletionTimestamp: &now, DeletionGracePeriodSeconds: &grace},
			Spec: corev1.PodSpec{NodeName: "node-1", Hostname: "w-1", Subdomain: "w", Containers: []corev1.Container{{Name: ContainerName, Image: "tf", Env: []corev1.EnvVar{{Name: "TF_CONFIG", Value: "{}"}},
				Ports: []corev1.ContainerPort{{Name: PortName, ContainerPort: 2222, Protocol: corev1.ProtocolTCP}}}}},
			Status: corev1.PodStatus{
				Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory", PodIP: "10.0.0.1",
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes", LastTransitionTime: now}},
				ContainerStatuses: []corev1.ContainerStatus{{
					Name: ContainerName, Ready: true, RestartCount: 3, Image: "tf:2.16",
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "no such image"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", FinishedAt: now}},
				}},
			},
		}
	}
	want, ok := ObservePod(full())
	require.True(t, ok)
	obj, err := SlimPod(full())
	require.NoError(t, err)
	slim := obj.(*corev1.Pod)
	got, ok := ObservePod(slim)
	require.True(t, ok)
	require.Equal(t, want, got)
	require.True(t, want.Terminated != nil && want.Waiting != "" && want.Unschedulable != "" && !want.DeletedAt.IsZero(),
		"the fixture exercises every field ObservePod derives")

	require.Equal(t, identity(full()), identity(slim), "identity")
	require.Nil(t, slim.ManagedFields)
	require.Nil(t, slim.Annotations)
	require.Equal(t, []corev1.Container{{Name: ContainerName, Env: []corev1.EnvVar{{Name: "TF_CONFIG"}},
		Ports: []corev1.ContainerPort{{Name: PortName, ContainerPort: 2222, Protocol: corev1.ProtocolTCP}}}},
		slim.Spec.Containers, "of the spec, the containers' names, requests, ports and whether TF_CONFIG is set (not its value)")
	require.True(t, HasPeers(slim))
	require.Empty(t, slim.Spec.Subdomain)
	require.Empty(t, slim.Status.ContainerStatuses[0].Image)

	// So is what the job's EndpointSlice lists of it.
	live := full()
	live.DeletionTimestamp, live.Status.Phase = nil, corev1.PodRunning
	obj, err = SlimPod(live)
	require.NoError(t, err)
	fromFull := RenderEndpointSlice("ns", []*corev1.Pod{live})
	require.Len(t, fromFull.Endpoints, 1)
	require.Len(t, fromFull.Ports, 1)
	require.Equal(t, fromFull, RenderEndpointSlice("ns", []*corev1.Pod{obj.(*corev1.Pod)}))
}

func identity(p *corev1.Pod) []string {
	return []string{p.Name, p.Namespace, string(p.UID), p.ResourceVersion, p.Spec.NodeName}
}

// Of a pod that is not Trainyard's, the cache keeps what the scheduler
// reads (node, phase, requests, deletion) and none of its labels or status.
func TestSlimPodKeepsOthersPodsRequests(t *testing.T) {
	now := metav1.Now()
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "u", ResourceVersion: "7",
			Labels: map[string]string{"app": "db"}, DeletionTimestamp: &now},
		Spec: corev1.PodSpec{NodeName: "gpu-1", Hostname: "db",
			Containers:     []corev1.Container{{Name: "db", Image: "pg", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}}},
			InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}},
			Overhead:       corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9", Conditions: []corev1.PodCondition{{Type: corev1.PodReady}}},
	}
	obj, err := SlimPod(other)
	require.NoError(t, err)
	slim := obj.(*corev1.Pod)
	require.Equal(t, identity(other), identity(slim))
	require.Equal(t, &now, slim.DeletionTimestamp)
	require.Equal(t, corev1.PodRunning, slim.Status.Phase)
	require.Equal(t, other.Spec.Overhead, slim.Spec.Overhead)
	require.Equal(t, other.Spec.Containers[0].Resources, slim.Spec.Containers[0].Resources)
	require.Equal(t, other.Spec.InitContainers[0].Resources, slim.Spec.InitContainers[0].Resources)
	require.Equal(t, other.Spec.InitContainers[0].RestartPolicy, slim.Spec.InitContainers[0].RestartPolicy)
	require.Nil(t, slim.Labels)
	require.Empty(t, slim.Spec.Containers[0].Image)
	require.Empty(t, slim.Spec.Hostname)
	require.Empty(t, slim.Status.PodIP)
	require.Nil(t, slim.Status.Conditions)

	require.False(t, Managed(other))
	require.False(t, Managed(slim))
	require.True(t, Managed(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelManagedBy: ManagedByValue}}}))
	require.True(t, Managed(cache.DeletedFinalStateUnknown{Obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelManagedBy: ManagedByValue}}}}))
	require.False(t, Managed("not an object"))
}
