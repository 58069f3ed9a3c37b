package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/job"
)

// Environment variables Trainyard sets in every replica. A user env var
// named TF_CONFIG or TRAINYARD_* is refused (job.Validate at submit, and
// RenderPod as a backstop), never silently overridden.
const (
	EnvTFConfig     = job.TFConfigEnv
	EnvJob          = "TRAINYARD_JOB"
	EnvReplicaType  = "TRAINYARD_REPLICA_TYPE"
	EnvReplicaIndex = "TRAINYARD_REPLICA_INDEX"
)

// Names inside replica pods.
const (
	PortName             = "tfjob-port"
	CheckpointVolumeName = "checkpoint"
)

// PodOptions are per-tenant settings of job pods.
type PodOptions struct {
	// ServiceAccount the pods run as (without a token). Defaults to
	// "trainyard-job", the account RenderTenant creates.
	ServiceAccount string
	// MaxGracePeriod caps the job's termination grace period (the
	// operator's bound; zero: the job's own, which validation bounds).
	MaxGracePeriod time.Duration
}

func (o PodOptions) withDefaults() PodOptions {
	if o.ServiceAccount == "" {
		o.ServiceAccount = DefaultJobServiceAccount
	}
	return o
}

// RenderPod renders the pod of replica t/index of job j in namespace ns, for
// the attempt-th run of that replica (its restart count, recorded in the
// trainyard.dev/attempt label). It does no I/O. The error wraps
// ErrInvalidSpec: no such replica, a quantity that does not parse, or a
// user label or env var that would shadow one of Trainyard's.
func RenderPod(j job.Job, ns string, t job.ReplicaType, index, attempt int32, opts PodOptions) (*corev1.Pod, error) {
	opts = opts.withDefaults()
	r, ok := replicaSpec(j.Spec, t)
	if !ok || index < 0 || index >= max(r.Count, 1) {
		return nil, fmt.Errorf("%w: job %s has no replica %s", ErrInvalidSpec, j.Name, job.ReplicaName(t, index))
	}
	name := job.PodName(j.Name, t, index)
	labels, err := mergeLabels(replicaLabels(j, t, index, attempt), r.PodLabels)
	if err != nil {
		return nil, err
	}
	env, err := replicaEnv(j, ns, r, index)
	if err != nil {
		return nil, err
	}
	res, err := resourceRequirements(r.Resources)
	if err != nil {
		return nil, fmt.Errorf("%w: %s resources: %v", ErrInvalidSpec, t, err)
	}
	volumes, mounts := replicaVolumes(j.Spec.Checkpoint, r.SecretVolumes)
	c := corev1.Container{
		Name:                     ContainerName,
		Image:                    r.Image,
		Command:                  slices.Clone(r.Command),
		Args:                     slices.Clone(r.Args),
		WorkingDir:               r.WorkingDir,
		Ports:                    []corev1.ContainerPort{{Name: PortName, ContainerPort: replicaPort(r), Protocol: corev1.ProtocolTCP}},
		Env:                      env,
		Resources:                res,
		VolumeMounts:             mounts,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          containerSecurity(r.Privileged),
		LivenessProbe:            probe(r.LivenessProbe),
		ReadinessProbe:           probe(r.ReadinessProbe),
		StartupProbe:             probe(r.StartupProbe),
	}
	spec := podSpec(opts, c, volumes)
	spec.Hostname = name
	spec.Subdomain = job.ReplicaService
	// Trainyard restarts a replica by recreating its pod, so that every
	// restart is seen, counted against backoffLimit and can be placed anew.
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.TerminationGracePeriodSeconds = new(int64(gracePeriod(j.Spec, opts).Seconds()))
	place := ReplicaPlacement(r)
	if m := j.Status.GPUType; m != "" && r.Resources.GPU > 0 {
		// The scheduler counted the job against this GPU model's quota:
		// its GPU pods go to that model's nodes.
		if place.NodeSelector == nil {
			place.NodeSelector = map[string]string{}
		}
		place.NodeSelector[LabelGPUProduct] = m
	}
	spec.NodeSelector, spec.Tolerations, spec.Affinity = place.NodeSelector, place.Tolerations, place.Affinity
	if r.MountServiceAccountToken {
		spec.AutomountServiceAccountToken = new(true)
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   ns,
			Labels:      labels,
			Annotations: cloneMap(r.PodAnnotations),
		},
		Spec: spec,
	}, nil
}

// podSpec holds what every Trainyard pod shares: its account without a
// token, no service links (thousands of env vars in busy namespaces, and
// nothing a job needs) and the RuntimeDefault seccomp profile.
func podSpec(opts PodOptions, c corev1.Container, volumes []corev1.Volume) corev1.PodSpec {
	return corev1.PodSpec{
		ServiceAccountName:           opts.ServiceAccount,
		AutomountServiceAccountToken: new(false),
		EnableServiceLinks:           new(false),
		SecurityContext: &corev1.PodSecurityContext{
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{c},
		Volumes:    volumes,
	}
}

// containerSecurity drops every capability and forbids privilege
// escalation. A privileged container (only when the spec asks) gets neither:
// Kubernetes refuses privileged with allowPrivilegeEscalation false, and the
// tenant namespace's Pod Security level (baseline) refuses the pod anyway,
// which is the intended outcome: the job fails with the admission message.
func containerSecurity(privileged bool) *corev1.SecurityContext {
	if privileged {
		return &corev1.SecurityContext{Privileged: new(true)}
	}
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func replicaSpec(s job.Spec, t job.ReplicaType) (job.ReplicaSpec, bool) {
	for _, r := range s.Replicas {
		if r.Type == t {
			return r, true
		}
	}
	return job.ReplicaSpec{}, false
}

func replicaPort(r job.ReplicaSpec) int32 {
	if r.Port == 0 {
		return job.DefaultPort
	}
	return r.Port
}

// mergeLabels adds the user's pod labels to Trainyard's. A user label may
// not use a key Trainyard sets: selectors and observation rely on them.
func mergeLabels(ours, user map[string]string) (map[string]string, error) {
	for k, v := range user {
		if _, taken := ours[k]; taken || strings.HasPrefix(k, "trainyard.dev/") {
			return nil, fmt.Errorf("%w: pod label %q is reserved for Trainyard", ErrInvalidSpec, k)
		}
		ours[k] = v
	}
	return ours, nil
}

// replicaEnv is TF_CONFIG (for jobs of more than one replica), Trainyard's
// own variables (its dependencies' results among them), then the user's
// in their order. Secret values are
// referenced, never copied: the Kubernetes Secret is named by the tenant
// secret's id.
func replicaEnv(j job.Job, ns string, r job.ReplicaSpec, index int32) ([]corev1.EnvVar, error) {
	var env []corev1.EnvVar
	if tf, ok := job.TFConfig(j.Name, ns, j.Spec, r.Type, index); ok {
		env = append(env, corev1.EnvVar{Name: EnvTFConfig, Value: tf})
	}
	env = append(env,
		corev1.EnvVar{Name: EnvJob, Value: j.Name},
		corev1.EnvVar{Name: EnvReplicaType, Value: string(r.Type)},
		corev1.EnvVar{Name: EnvReplicaIndex, Value: strconv.Itoa(int(index))},
	)
	// The results of spec.dependsOn, as admission copied them (job/deps.go).
	// Kubernetes keeps at most 4 KiB of a termination message, so outputs
	// stay small.
	for _, e := range job.DependencyEnv(j.Status.Dependencies) {
		env = append(env, corev1.EnvVar{Name: e.Name, Value: e.Value})
	}
	for _, e := range r.Env {
		if e.Name == EnvTFConfig || strings.HasPrefix(e.Name, job.ReservedEnvPrefix) {
			return nil, fmt.Errorf("%w: env var %s is reserved for Trainyard", ErrInvalidSpec, e.Name)
		}
		v := corev1.EnvVar{Name: e.Name, Value: e.Value}
		if e.Secret != nil {
			v.Value = ""
			v.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: e.Secret.Secret},
				Key:                  e.Secret.Key,
			}}
		}
		env = append(env, v)
	}
	return env, nil
}

// resourceRequirements requests what the spec asks. Limits: memory is
// capped at memoryLimit, else at the request (a training process that grows
// past its request would otherwise be the first the node kills, and late);
// CPU only when cpuLimit is set (throttling slows training and buys
// nothing); GPUs, being an extended resource, need limit = request.
func resourceRequirements(r job.Resources) (corev1.ResourceRequirements, error) {
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}
	set := func(l corev1.ResourceList, name corev1.ResourceName, s string) error {
		if s == "" {
			return nil
		}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return fmt.Errorf("%s %q: %v", name, s, err)
		}
		l[name] = q
		return nil
	}
	memLimit := r.MemoryLimit
	if memLimit == "" {
		memLimit = r.Memory
	}
	for _, f := range []struct {
		l    corev1.ResourceList
		name corev1.ResourceName
		s    string
	}{
		{req, corev1.ResourceCPU, r.CPU},
		{req, corev1.ResourceMemory, r.Memory},
		{lim, corev1.ResourceCPU, r.CPULimit},
		{lim, corev1.ResourceMemory, memLimit},
	} {
		if err := set(f.l, f.name, f.s); err != nil {
			return corev1.ResourceRequirements{}, err
		}
	}
	if r.GPU > 0 {
		gpu := *resource.NewQuantity(int64(r.GPU), resource.DecimalSI)
		req[ResourceGPU], lim[ResourceGPU] = gpu, gpu.DeepCopy()
	}
	var out corev1.ResourceRequirements
	if len(req) > 0 {
		out.Requests = req
	}
	if len(lim) > 0 {
		out.Limits = lim
	}
	return out, nil
}

// replicaVolumes mounts the checkpoint claim (read-write, shared by every
// replica) and each secret volume (read-only).
func replicaVolumes(cp *job.CheckpointVolume, secrets []job.SecretVolume) ([]corev1.Volume, []corev1.VolumeMount) {
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if cp != nil {
		volumes = append(volumes, checkpointVolume(cp, false))
		mounts = append(mounts, corev1.VolumeMount{Name: CheckpointVolumeName, MountPath: checkpointMount(cp)})
	}
	for i, s := range secrets {
		// Named by position: a secret id may be as long as a volume name
		// may be, so a prefix could overflow it.
		name := "secret-" + strconv.Itoa(i)
		volumes = append(volumes, corev1.Volume{
			Name:         name,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.Secret}},
		})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: s.MountPath, ReadOnly: true})
	}
	return volumes, mounts
}

func checkpointVolume(cp *job.CheckpointVolume, readOnly bool) corev1.Volume {
	return corev1.Volume{
		Name: CheckpointVolumeName,
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: cp.ClaimName,
			ReadOnly:  readOnly,
		}},
	}
}

func checkpointMount(cp *job.CheckpointVolume) string {
	if cp.MountPath == "" {
		return job.DefaultCheckpointMount
	}
	return cp.MountPath
}

// gracePeriod is the job's termination grace period within the operator's
// bound: how long replicas have to checkpoint on SIGTERM.
func gracePeriod(s job.Spec, opts PodOptions) time.Duration {
	g := s.GracePeriod()
	if opts.MaxGracePeriod > 0 {
		g = min(g, opts.MaxGracePeriod)
	}
	return g
}

// Placement is where a replica's pods may run, in the form the pods carry
// it. The scheduler (internal/admission) checks nodes against exactly what
// RenderPod writes into the pods.
type Placement struct {
	NodeSelector map[string]string
	Affinity     *corev1.Affinity
	Tolerations  []corev1.Toleration
}

// LabelGPUProduct is the node label that names a node's GPU model (GPU
// Feature Discovery's; admission.DefaultGPUTypeLabel).
const LabelGPUProduct = "nvidia.com/gpu.product"

// ReplicaPlacement is the placement of a replica's pods.
func ReplicaPlacement(r job.ReplicaSpec) Placement {
	return Placement{NodeSelector: cloneMap(r.NodeSelector), Affinity: affinity(r.Affinity), Tolerations: tolerations(r.Tolerations)}
}

func tolerations(ts []job.Toleration) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range ts {
		out = append(out, corev1.Toleration{
			Key:               t.Key,
			Operator:          corev1.TolerationOperator(t.Operator),
			Value:             t.Value,
			Effect:            corev1.TaintEffect(t.Effect),
			TolerationSeconds: clonePtr(t.TolerationSeconds),
		})
	}
	return out
}

func affinity(a *job.Affinity) *corev1.Affinity {
	if a == nil || (len(a.Required) == 0 && len(a.Preferred) == 0) {
		return nil
	}
	na := &corev1.NodeAffinity{}
	if len(a.Required) > 0 {
		sel := &corev1.NodeSelector{}
		for _, term := range a.Required {
			sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, nodeSelectorTerm(term))
		}
		na.RequiredDuringSchedulingIgnoredDuringExecution = sel
	}
	for _, p := range a.Preferred {
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: p.Weight, Preference: nodeSelectorTerm(p.Preference)})
	}
	return &corev1.Affinity{NodeAffinity: na}
}

func nodeSelectorTerm(t job.NodeSelectorTerm) corev1.NodeSelectorTerm {
	var out corev1.NodeSelectorTerm
	for _, e := range t.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, corev1.NodeSelectorRequirement{
			Key:      e.Key,
			Operator: corev1.NodeSelectorOperator(e.Operator),
			Values:   slices.Clone(e.Values),
		})
	}
	return out
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return new(*p)
}
