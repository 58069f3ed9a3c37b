package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/trainyard/trainyard/internal/job"
)

func TestRenderReplicaService(t *testing.T) {
	got := RenderReplicaService("vision", testNS)
	want := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "replicas", Namespace: testNS, Labels: map[string]string{
			"app.kubernetes.io/managed-by": "trainyard",
			"trainyard.dev/tenant":         "vision",
		}},
		Spec: corev1.ServiceSpec{ClusterIP: "None", PublishNotReadyAddresses: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RenderReplicaService mismatch (-want +got):\n%s", diff)
	}
	requireValidNames(t, &got.ObjectMeta)

	// Every replica pod of every job lives under the Service's name (its
	// subdomain), and its job's slice names the Service.
	j := distributedJob()
	for _, r := range j.Spec.Replicas {
		for i := range r.Count {
			pod, err := RenderPod(j, testNS, r.Type, i, 0, PodOptions{})
			require.NoError(t, err)
			require.Equal(t, got.Name, pod.Spec.Subdomain)
			require.Equal(t, pod.Name, pod.Spec.Hostname)
		}
	}
	chief, err := RenderPod(j, testNS, job.Chief, 0, 0, PodOptions{})
	require.NoError(t, err)
	require.Equal(t, got.Name, RenderEndpointSlice(testNS, []*corev1.Pod{chief}).Labels["kubernetes.io/service-name"])
	require.Nil(t, RenderEndpointSlice(testNS, nil), "no pods, no slice")
}

// The slice's ports are the ones the pods declare: a replica without a
// port of its own has the default one.
func TestRenderEndpointSliceDefaultPort(t *testing.T) {
	j := job.Job{UID: "u", Tenant: "t", Name: "j", Spec: job.Spec{Replicas: []job.ReplicaSpec{
		{Type: job.Worker, Count: 2}, {Type: job.PS, Count: 1, Port: 2222},
	}}}
	var pods []*corev1.Pod
	for _, r := range j.Spec.Replicas {
		for i := range r.Count {
			pod, err := RenderPod(j, "ns", r.Type, i, 0, PodOptions{})
			require.NoError(t, err)
			pods = append(pods, pod)
		}
	}
	es := RenderEndpointSlice("ns", pods)
	require.Equal(t, []discoveryv1.EndpointPort{{Name: ptr.To("tf-2222"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](2222)}}, es.Ports)
	require.Equal(t, "j", es.Name)
	require.Equal(t, "u", es.Labels[LabelJobUID])
}

func TestRenderTensorBoard(t *testing.T) {
	j := distributedJob()
	pod, svc := RenderTensorBoard(j, testNS, PodOptions{})
	require.NotNil(t, pod)
	require.NotNil(t, svc)
	requireValidNames(t, &pod.ObjectMeta)
	requireValidNames(t, &svc.ObjectMeta)

	require.Equal(t, "mnist-tensorboard", pod.Name)
	require.Equal(t, ComponentTensorBoard, pod.Labels[LabelComponent])
	require.Equal(t, j.UID, pod.Labels[LabelJobUID])
	require.NotContains(t, pod.Labels, LabelReplicaType)
	require.Equal(t, DefaultJobServiceAccount, pod.Spec.ServiceAccountName)
	require.Equal(t, new(false), pod.Spec.AutomountServiceAccountToken)
	require.Equal(t, corev1.RestartPolicyAlways, pod.Spec.RestartPolicy)

	c := pod.Spec.Containers[0]
	require.Equal(t, "tf:2.16", c.Image)
	require.Equal(t, []string{"tensorboard", "--logdir", "/checkpoints/logs", "--bind_all", "--port", "6006"}, c.Command)
	require.Equal(t, []corev1.VolumeMount{{Name: "checkpoint", MountPath: "/checkpoints", ReadOnly: true}}, c.VolumeMounts)
	require.True(t, pod.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly)
	require.Equal(t, "mnist-ckpt", pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	require.Equal(t, new(false), c.SecurityContext.AllowPrivilegeEscalation)

	// Its requests are what job.Demand counts for it.
	withTB, err := j.Spec.Demand()
	require.NoError(t, err)
	j2 := j
	j2.Spec.TensorBoard = nil
	without, err := j2.Spec.Demand()
	require.NoError(t, err)
	require.Equal(t, withTB[job.CPU]-without[job.CPU], c.Resources.Requests.Cpu().MilliValue())
	require.Equal(t, withTB[job.Memory]-without[job.Memory], c.Resources.Requests.Memory().Value())
	require.Equal(t, int64(1), withTB[job.Pods]-without[job.Pods])

	want := corev1.ServiceSpec{
		Type:     corev1.ServiceTypeClusterIP,
		Selector: map[string]string{LabelJobUID: j.UID, LabelComponent: ComponentTensorBoard},
		Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 6006, TargetPort: intstr.FromString("http")}},
	}
	if diff := cmp.Diff(want, svc.Spec); diff != "" {
		t.Errorf("TensorBoard Service spec (-want +got):\n%s", diff)
	}
	require.Equal(t, "mnist-tensorboard", svc.Name)
	require.True(t, labelsSet(svc.Spec.Selector).AsSelector().Matches(labelsSet(pod.Labels)))
}

func TestRenderTensorBoardVariants(t *testing.T) {
	j := distributedJob()
	j.Spec.TensorBoard = nil
	pod, svc := RenderTensorBoard(j, testNS, PodOptions{})
	require.Nil(t, pod)
	require.Nil(t, svc)

	// Not defaulted: default image and mount path.
	j.Spec.TensorBoard = &job.TensorBoard{LogDir: "runs/mnist"}
	j.Spec.Checkpoint = &job.CheckpointVolume{ClaimName: "ckpt"}
	pod, _ = RenderTensorBoard(j, testNS, PodOptions{})
	require.Equal(t, job.DefaultTensorBoardImage, pod.Spec.Containers[0].Image)
	require.Equal(t, "/checkpoints/runs/mnist", pod.Spec.Containers[0].Command[2])
	require.Equal(t, "/checkpoints", pod.Spec.Containers[0].VolumeMounts[0].MountPath)

	j.Spec.TensorBoard = &job.TensorBoard{}
	j.Spec.Checkpoint.MountPath = "/ckpt"
	pod, _ = RenderTensorBoard(j, testNS, PodOptions{})
	require.Equal(t, "/ckpt", pod.Spec.Containers[0].Command[2])
}
