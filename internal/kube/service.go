package kube

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/trainyard/trainyard/internal/job"
)

// RenderReplicaService renders the tenant namespace's headless Service of
// replicas (job.ReplicaService): every replica pod has hostname <pod> and
// subdomain replicas, so the Service gives it the DNS name
// <pod>.replicas.<ns>.svc that TF_CONFIG lists. It has no selector and no
// ports: each distributed job's EndpointSlice of it (RenderEndpointSlice,
// written by the worker) lists the job's replicas and their ports.
// Addresses are published before pods are ready: TensorFlow servers find
// each other while starting, and replica pods have no readiness probe
// anyway. The tenant controller keeps it with the namespace's other
// objects (RenderTenant).
func RenderReplicaService(tenantID, ns string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: tenantMeta(tenantID, ns, job.ReplicaService),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
		},
	}
}

// TensorBoard pod details.
const (
	TensorBoardContainerName = "tensorboard"
	TensorBoardPortName      = "http"
)

// RenderTensorBoard renders the job's TensorBoard pod and its ClusterIP
// Service (both named job.TensorBoardName), or nils when the spec asks for
// none. The pod mounts the checkpoint claim read-only and serves
// <mount>/<logDir> (logDir is relative to the mount, as job.Validate
// requires).
// Its requests are job.TensorBoardResources, which job.Demand counts. It
// restarts in place (restartPolicy Always): it is a server, not a replica,
// and its restarts do not count against the job's backoff limit.
func RenderTensorBoard(j job.Job, ns string, opts PodOptions) (*corev1.Pod, *corev1.Service) {
	tb := j.Spec.TensorBoard
	if tb == nil {
		return nil, nil
	}
	opts = opts.withDefaults()
	name := job.TensorBoardName(j.Name)
	labels := jobLabels(j)
	labels[LabelComponent] = ComponentTensorBoard

	// job.Validate requires a checkpoint with TensorBoard; without one the
	// pod still renders, serving an empty directory.
	mount := job.DefaultCheckpointMount
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if cp := j.Spec.Checkpoint; cp != nil {
		mount = checkpointMount(cp)
		volumes = []corev1.Volume{checkpointVolume(cp, true)}
		mounts = []corev1.VolumeMount{{Name: CheckpointVolumeName, MountPath: mount, ReadOnly: true}}
	}
	logDir := path.Join(mount, tb.LogDir)
	image := tb.Image
	if image == "" {
		image = job.DefaultTensorBoardImage
	}
	// job.TensorBoardResources is a package constant in valid notation.
	res, err := resourceRequirements(job.TensorBoardResources)
	if err != nil {
		panic("kube: job.TensorBoardResources: " + err.Error())
	}
	c := corev1.Container{
		Name:    TensorBoardContainerName,
		Image:   image,
		Command: []string{"tensorboard", "--logdir", logDir, "--bind_all", "--port", fmt.Sprint(job.TensorBoardPort)},
		Ports: []corev1.ContainerPort{{
			Name: TensorBoardPortName, ContainerPort: job.TensorBoardPort, Protocol: corev1.ProtocolTCP,
		}},
		Resources:                res,
		VolumeMounts:             mounts,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          containerSecurity(false),
	}
	spec := podSpec(opts, c, volumes)
	spec.RestartPolicy = corev1.RestartPolicyAlways
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       spec,
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: cloneMap(labels)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{LabelJobUID: j.UID, LabelComponent: ComponentTensorBoard},
			Ports: []corev1.ServicePort{{
				Name:       TensorBoardPortName,
				Protocol:   corev1.ProtocolTCP,
				Port:       job.TensorBoardPort,
				TargetPort: intstr.FromString(TensorBoardPortName),
			}},
		},
	}
	return pod, svc
}
