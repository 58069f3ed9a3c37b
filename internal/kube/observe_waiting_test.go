package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestObservePodWaiting(t *testing.T) {
	for name, tc := range map[string]struct {
		waiting *corev1.ContainerStateWaiting
		want    string
	}{
		"image pull back-off": {
			&corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "tf:9"`},
			`ImagePullBackOff: Back-off pulling image "tf:9"`,
		},
		"missing secret key": {
			&corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `couldn't find key token in Secret ns/s`},
			`CreateContainerConfigError: couldn't find key token in Secret ns/s`,
		},
		"reason only":                {&corev1.ContainerStateWaiting{Reason: "InvalidImageName"}, "InvalidImageName"},
		"being created is not stuck": {&corev1.ContainerStateWaiting{Reason: "ContainerCreating"}, ""},
		"not waiting":                {nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			pod := renderedPod(t)
			pod.Status.Phase = corev1.PodPending
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: tc.waiting}}}
			o, ok := ObservePod(pod)
			require.True(t, ok)
			require.Equal(t, tc.want, o.Waiting)
		})
	}
}
