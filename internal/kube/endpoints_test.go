package kube

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/trainyard/trainyard/internal/job"
)

// replicaPod is a rendered replica pod with the status fields the slice
// reads.
func replicaPod(t *testing.T, j job.Job, rt job.ReplicaType, i int32, ip string, phase corev1.PodPhase, ready bool) *corev1.Pod {
	t.Helper()
	pod, err := RenderPod(j, testNS, rt, i, 0, PodOptions{})
	require.NoError(t, err)
	pod.UID = types.UID("uid-" + pod.Name)
	pod.Spec.NodeName = "node-1"
	pod.Status = corev1.PodStatus{Phase: phase, PodIP: ip, ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName, Ready: ready}}}
	return pod
}

func TestRenderEndpointSlice(t *testing.T) {
	j := distributedJob()
	chief := replicaPod(t, j, job.Chief, 0, "10.0.0.5", corev1.PodRunning, true)
	w0 := replicaPod(t, j, job.Worker, 0, "10.0.0.7", corev1.PodRunning, false)
	w1 := replicaPod(t, j, job.Worker, 1, "", corev1.PodPending, false) // no address yet
	j.Spec.Replicas[1].Count = 3
	w2 := replicaPod(t, j, job.Worker, 2, "10.0.0.9", corev1.PodSucceeded, false) // finished: its address may be reused
	ps := replicaPod(t, j, job.PS, 0, "10.0.0.8", corev1.PodRunning, true)
	ps.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} // going away

	got := RenderEndpointSlice(testNS, []*corev1.Pod{w2, w1, w0, ps, chief})
	ep := func(pod *corev1.Pod) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{
			Addresses:  []string{pod.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			Hostname:   ptr.To(pod.Name),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: testNS, Name: pod.Name, UID: pod.UID},
			NodeName:   ptr.To("node-1"),
		}
	}
	want := &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: testNS,
			Labels: map[string]string{
				"app.kubernetes.io/managed-by":           "trainyard",
				"trainyard.dev/tenant":                   "vision",
				"trainyard.dev/job":                      "mnist",
				"trainyard.dev/job-uid":                  "0b7c6f1e-uid",
				"kubernetes.io/service-name":             "replicas",
				"endpointslice.kubernetes.io/managed-by": "worker.trainyard.dev",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		// By pod name: the chief (ready), worker-0 (not ready: listed as
		// ready all the same, the Service publishes not-ready addresses).
		Endpoints: []discoveryv1.Endpoint{ep(chief), ep(w0)},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("tf-2222"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](2222)},
			{Name: ptr.To("tf-2223"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](2223)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RenderEndpointSlice mismatch (-want +got):\n%s", diff)
	}
	requireValidNames(t, &got.ObjectMeta)
	// Every TF_CONFIG name is <hostname>.<subdomain>: the slice lists the
	// pod under the hostname the pod carries.
	require.Equal(t, chief.Spec.Hostname, *got.Endpoints[0].Hostname)

	require.True(t, EndpointSliceCurrent(got, RenderEndpointSlice(testNS, []*corev1.Pod{chief, w0, w1, ps})))
	w0.Status.ContainerStatuses[0].Ready = true
	require.True(t, EndpointSliceCurrent(got, RenderEndpointSlice(testNS, []*corev1.Pod{chief, w0, w1, ps})), "readiness writes nothing")
	w1.Status.PodIP = "10.0.0.6"
	require.False(t, EndpointSliceCurrent(got, RenderEndpointSlice(testNS, []*corev1.Pod{chief, w0, w1, ps})), "a new address needs an update")
	require.False(t, EndpointSliceCurrent(got, RenderEndpointSlice(testNS, []*corev1.Pod{chief, ps})), "a pod gone needs an update")
}

func TestRenderEndpointSliceFamilies(t *testing.T) {
	j := distributedJob()
	pending := replicaPod(t, j, job.Chief, 0, "", corev1.PodPending, false)
	empty := RenderEndpointSlice(testNS, []*corev1.Pod{pending})
	require.Equal(t, discoveryv1.AddressTypeIPv4, empty.AddressType)
	require.NotNil(t, empty.Endpoints, "an empty slice lists no endpoints, not null")

	v6 := replicaPod(t, j, job.Chief, 0, "fd00::5", corev1.PodRunning, true)
	v4 := replicaPod(t, j, job.Worker, 0, "10.0.0.7", corev1.PodRunning, true)
	got := RenderEndpointSlice(testNS, []*corev1.Pod{v6, v4})
	require.Equal(t, discoveryv1.AddressTypeIPv6, got.AddressType)
	require.Len(t, got.Endpoints, 1, "one family per slice")
	require.Equal(t, []string{"fd00::5"}, got.Endpoints[0].Addresses)
}
