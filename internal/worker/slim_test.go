package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
)

// What the worker reads of a pod is the same from the slim cached copy as
// from the pod the API server sent; the rest is not kept.
func TestSlimCachedKeepsWhatObservePodReads(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	grace := int64(0)
	labels := map[string]string{
		kube.LabelManagedBy: kube.ManagedByValue, kube.LabelComponent: kube.ComponentReplica,
		kube.LabelTenant: "acme", kube.LabelJobUID: "u1", kube.LabelReplicaType: "worker",
		kube.LabelReplicaIndex: "1", kube.LabelAttempt: "2",
	}
	full := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "w-1", Namespace: "ns", UID: "pod-uid", ResourceVersion: "42", Labels: labels,
				Annotations:       map[string]string{"big": "annotation"},
				ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
				DeletionTimestamp: &now, DeletionGracePeriodSeconds: &grace},
			Spec: corev1.PodSpec{NodeName: "node-1", Hostname: "w-1", Subdomain: "w", Containers: []corev1.Container{{Name: kube.ContainerName, Image: "tf", Env: []corev1.EnvVar{{Name: "TF_CONFIG", Value: "{}"}}}}},
			Status: corev1.PodStatus{
				Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory", PodIP: "10.0.0.1",
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes", LastTransitionTime: now}},
				ContainerStatuses: []corev1.ContainerStatus{{
					Name: kube.ContainerName, Ready: true, RestartCount: 3, Image: "tf:2.16",
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "no such image"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", FinishedAt: now}},
				}},
			},
		}
	}
	want, ok := kube.ObservePod(full())
	require.True(t, ok)
	obj, err := slimCached(full())
	require.NoError(t, err)
	slim := obj.(*corev1.Pod)
	got, ok := kube.ObservePod(slim)
	require.True(t, ok)
	require.Equal(t, want, got)
	require.True(t, want.Terminated != nil && want.Waiting != "" && want.Unschedulable != "" && !want.DeletedAt.IsZero(),
		"the fixture exercises every field ObservePod derives")

	require.Equal(t, identity(full()), identity(slim), "identity")
	require.Nil(t, slim.ManagedFields)
	require.Nil(t, slim.Annotations)
	require.Empty(t, slim.Spec.Containers, "the spec is not kept")
	require.Empty(t, slim.Spec.Subdomain)
	require.Empty(t, slim.Status.ContainerStatuses[0].Image)

	// So is what the job's EndpointSlice lists of it.
	live := full()
	live.DeletionTimestamp, live.Status.Phase = nil, corev1.PodRunning
	obj, err = slimCached(live)
	require.NoError(t, err)
	j := job.Job{Tenant: "acme", Name: "w", UID: "u1"}
	headless := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "svc-uid"}}
	fromFull := kube.RenderEndpointSlice(j, headless, []*corev1.Pod{live})
	require.Len(t, fromFull.Endpoints, 1)
	require.Equal(t, fromFull, kube.RenderEndpointSlice(j, headless, []*corev1.Pod{obj.(*corev1.Pod)}))

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
		Spec: corev1.ServiceSpec{ClusterIP: "None"}}
	obj, err = slimCached(svc)
	require.NoError(t, err)
	require.Nil(t, obj.(*corev1.Service).ManagedFields)
	require.Equal(t, "None", obj.(*corev1.Service).Spec.ClusterIP)
}

func identity(p *corev1.Pod) []string {
	return []string{p.Name, p.Namespace, string(p.UID), p.ResourceVersion, p.Spec.NodeName}
}
