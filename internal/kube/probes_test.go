package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/trainyard/trainyard/internal/job"
)

func TestRenderPodProbes(t *testing.T) {
	j := distributedJob()
	w := &j.Spec.Replicas[1]
	w.ReadinessProbe = &job.Probe{TCPSocket: &job.TCPSocketAction{}, PeriodSeconds: 5}
	w.LivenessProbe = &job.Probe{HTTPGet: &job.HTTPGetAction{Path: "/healthz", Port: 8080, Scheme: "HTTP",
		Headers: []job.HTTPHeader{{Name: "X-Probe", Value: "liveness"}}}, InitialDelaySeconds: 60, FailureThreshold: 3}
	w.StartupProbe = &job.Probe{Exec: &job.ExecAction{Command: []string{"test", "-f", "/tmp/started"}}, FailureThreshold: 30, PeriodSeconds: 10}
	j.Spec.Default()
	require.Empty(t, job.Validate(&j), "the fixture is a job the API accepts")

	pod, err := RenderPod(j, testNS, job.Worker, 0, 0, PodOptions{})
	require.NoError(t, err)
	c := pod.Spec.Containers[0]
	require.Empty(t, cmp.Diff(&corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(2222)}},
		PeriodSeconds: 5,
	}, c.ReadinessProbe), "readiness: TCP on the replica's TensorFlow port")
	require.Empty(t, cmp.Diff(&corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP,
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "liveness"}}}},
		InitialDelaySeconds: 60, FailureThreshold: 3,
	}, c.LivenessProbe))
	require.Empty(t, cmp.Diff(&corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/started"}}},
		FailureThreshold: 30, PeriodSeconds: 10,
	}, c.StartupProbe))

	chief, err := RenderPod(j, testNS, job.Chief, 0, 0, PodOptions{})
	require.NoError(t, err)
	require.Nil(t, chief.Spec.Containers[0].ReadinessProbe, "a replica without probes gets none")
	require.Nil(t, chief.Spec.Containers[0].LivenessProbe)
	require.Nil(t, chief.Spec.Containers[0].StartupProbe)
}

func TestObservePodReady(t *testing.T) {
	pod := func(statuses ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "mnist-worker-0", Labels: map[string]string{
				LabelManagedBy: ManagedByValue, LabelComponent: ComponentReplica,
				LabelReplicaType: "worker", LabelReplicaIndex: "0", LabelAttempt: "0",
			}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: statuses},
		}
	}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"ready":                      {pod(corev1.ContainerStatus{Name: ContainerName, Ready: true}), true},
		"running, probe not passing": {pod(corev1.ContainerStatus{Name: ContainerName, Ready: false}), false},
		"no status yet":              {pod(), false},
		"only another container is ready": {pod(corev1.ContainerStatus{Name: "sidecar", Ready: true},
			corev1.ContainerStatus{Name: ContainerName}), false},
	} {
		t.Run(name, func(t *testing.T) {
			o, ok := ObservePod(tc.pod)
			require.True(t, ok)
			require.Equal(t, tc.want, o.Ready)
		})
	}
}
