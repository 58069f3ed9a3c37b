package kube

import (
	"time"

	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trainyard/trainyard/internal/job"
)

const testNS = "ty-vision"

// distributedJob is 1 chief + 2 GPU workers (on spot nodes, with secrets) +
// 1 PS on its own port, with a checkpoint volume and TensorBoard.
func distributedJob() job.Job {
	return job.Job{
		UID:    "0b7c6f1e-uid",
		Tenant: "vision",
		Name:   "mnist",
		Spec: job.Spec{
			Replicas: []job.ReplicaSpec{
				{
					Type: job.Chief, Count: 1, Image: "tf:2.16",
					Command: []string{"python", "train.py"}, Args: []string{"--epochs=3"}, WorkingDir: "/work",
					Resources:     job.Resources{CPU: "2", Memory: "4Gi"},
					Port:          2222,
					RestartPolicy: job.RestartNever,
				},
				{
					Type: job.Worker, Count: 2, Image: "tf:2.16-gpu",
					Command:   []string{"python", "train.py"},
					Resources: job.Resources{CPU: "4", Memory: "16Gi", CPULimit: "8", MemoryLimit: "20Gi", GPU: 1},
					Env: []job.EnvVar{
						{Name: "EPOCHS", Value: "3"},
						{Name: "WANDB_API_KEY", Secret: &job.SecretKeyRef{Secret: "wandb", Key: "api-key"}},
					},
					NodeSelector: map[string]string{"pool": "gpu"},
					Tolerations: []job.Toleration{
						{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"},
						{Key: "spot", Operator: "Equal", Value: "true", Effect: "NoExecute", TolerationSeconds: new(int64(30))},
					},
					Affinity: &job.Affinity{
						Required: []job.NodeSelectorTerm{{MatchExpressions: []job.NodeSelectorRequirement{
							{Key: "gpu-type", Operator: "In", Values: []string{"a100", "h100"}},
						}}},
						Preferred: []job.PreferredTerm{{Weight: 50, Preference: job.NodeSelectorTerm{MatchExpressions: []job.NodeSelectorRequirement{
							{Key: "lifecycle", Operator: "In", Values: []string{"spot"}},
						}}}},
					},
					PodLabels:      map[string]string{"team": "vision"},
					PodAnnotations: map[string]string{"sim.trainyard.dev/exit-code": "0"},
					SecretVolumes:  []job.SecretVolume{{Secret: "gcs-creds", MountPath: "/var/secrets/gcs"}},
					Port:           2222,
					RestartPolicy:  job.RestartOnFailure,
				},
				{
					Type: job.PS, Count: 1, Image: "tf:2.16",
					Resources:     job.Resources{CPU: "1", Memory: "2Gi"},
					Port:          2223,
					RestartPolicy: job.RestartAlways,
				},
			},
			Checkpoint:  &job.CheckpointVolume{ClaimName: "mnist-ckpt", MountPath: "/checkpoints"},
			TensorBoard: &job.TensorBoard{Image: "tf:2.16", LogDir: "logs"},
		},
	}
}

// TestDistributedJobIsValid keeps the fixture honest: it is a job the API
// accepts, so the renderings below are ones the worker will really produce.
func TestDistributedJobIsValid(t *testing.T) {
	j := distributedJob()
	j.Spec.Default()
	require.Empty(t, job.Validate(&j))
	require.Equal(t, distributedJob().Spec.Replicas, j.Spec.Replicas, "fixture is already defaulted")
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func TestRenderPodGolden(t *testing.T) {
	j := distributedJob()
	got, err := RenderPod(j, testNS, job.Worker, 1, 2, PodOptions{ServiceAccount: "trainyard-job"})
	require.NoError(t, err)

	tfConfig := `{"cluster":{"chief":["mnist-chief-0.replicas.ty-vision.svc:2222"],` +
		`"worker":["mnist-worker-0.replicas.ty-vision.svc:2222","mnist-worker-1.replicas.ty-vision.svc:2222"],` +
		`"ps":["mnist-ps-0.replicas.ty-vision.svc:2223"]},"task":{"type":"worker","index":1},"environment":"cloud"}`
	want := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "mnist-worker-1",
			Namespace: testNS,
			Labels: map[string]string{
				"app.kubernetes.io/managed-by": "trainyard",
				"trainyard.dev/tenant":         "vision",
				"trainyard.dev/job":            "mnist",
				"trainyard.dev/job-uid":        "0b7c6f1e-uid",
				"trainyard.dev/component":      "replica",
				"trainyard.dev/replica-type":   "worker",
				"trainyard.dev/replica-index":  "1",
				"trainyard.dev/attempt":        "2",
				"team":                         "vision",
			},
			Annotations: map[string]string{"sim.trainyard.dev/exit-code": "0"},
		},
		Spec: corev1.PodSpec{
			Hostname:                      "mnist-worker-1",
			Subdomain:                     "replicas",
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64(30)),
			ServiceAccountName:            "trainyard-job",
			AutomountServiceAccountToken:  new(false),
			EnableServiceLinks:            new(false),
			SecurityContext: &corev1.PodSecurityContext{
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			NodeSelector: map[string]string{"pool": "gpu"},
			Tolerations: []corev1.Toleration{
				{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(30))},
			},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"a100", "h100"}}},
				}}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
					Weight: 50,
					Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "lifecycle", Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
					}},
				}},
			}},
			Volumes: []corev1.Volume{
				{Name: "checkpoint", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "mnist-ckpt"}}},
				{Name: "secret-0", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "gcs-creds"}}},
			},
			Containers: []corev1.Container{{
				Name:    "tensorflow",
				Image:   "tf:2.16-gpu",
				Command: []string{"python", "train.py"},
				Ports:   []corev1.ContainerPort{{Name: "tfjob-port", ContainerPort: 2222, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "TF_CONFIG", Value: tfConfig},
					{Name: "TRAINYARD_JOB", Value: "mnist"},
					{Name: "TRAINYARD_REPLICA_TYPE", Value: "worker"},
					{Name: "TRAINYARD_REPLICA_INDEX", Value: "1"},
					{Name: "EPOCHS", Value: "3"},
					{Name: "WANDB_API_KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "wandb"}, Key: "api-key",
					}}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"cpu": q("4"), "memory": q("16Gi"), "nvidia.com/gpu": q("1")},
					Limits:   corev1.ResourceList{"cpu": q("8"), "memory": q("20Gi"), "nvidia.com/gpu": q("1")},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "checkpoint", MountPath: "/checkpoints"},
					{Name: "secret-0", MountPath: "/var/secrets/gcs", ReadOnly: true},
				},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: new(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RenderPod(worker-1) mismatch (-want +got):\n%s", diff)
	}
}

type tfConfigJSON struct {
	Cluster map[string][]string `json:"cluster"`
	Task    struct {
		Type  string
		Index int32
	} `json:"task"`
	Environment string `json:"environment"`
}

func TestRenderPodEveryReplica(t *testing.T) {
	j := distributedJob()
	cluster := map[string][]string{
		"chief":  {"mnist-chief-0.replicas.ty-vision.svc:2222"},
		"worker": {"mnist-worker-0.replicas.ty-vision.svc:2222", "mnist-worker-1.replicas.ty-vision.svc:2222"},
		"ps":     {"mnist-ps-0.replicas.ty-vision.svc:2223"},
	}
	for _, tc := range []struct {
		typ   job.ReplicaType
		index int32
		name  string
		port  int32
		gpu   bool
	}{
		{job.Chief, 0, "mnist-chief-0", 2222, false},
		{job.Worker, 0, "mnist-worker-0", 2222, true},
		{job.Worker, 1, "mnist-worker-1", 2222, true},
		{job.PS, 0, "mnist-ps-0", 2223, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, err := RenderPod(j, testNS, tc.typ, tc.index, 0, PodOptions{})
			require.NoError(t, err)
			require.Equal(t, tc.name, pod.Name)
			require.Equal(t, tc.name, pod.Spec.Hostname)
			require.Equal(t, "replicas", pod.Spec.Subdomain)
			require.Equal(t, DefaultJobServiceAccount, pod.Spec.ServiceAccountName)
			require.Equal(t, new(false), pod.Spec.AutomountServiceAccountToken, "no token unless asked")
			require.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
			requireValidNames(t, &pod.ObjectMeta)
			require.Empty(t, validation.IsDNS1123Label(pod.Spec.Hostname))

			l := pod.Labels
			require.Equal(t, string(tc.typ), l[LabelReplicaType])
			require.Equal(t, fmt.Sprint(tc.index), l[LabelReplicaIndex])
			require.Equal(t, "0", l[LabelAttempt])
			require.Equal(t, ComponentReplica, l[LabelComponent])
			require.True(t, JobSelector(j.UID).Matches(labelsSet(l)))
			require.True(t, ManagedSelector().Matches(labelsSet(l)))

			c := pod.Spec.Containers[0]
			require.Equal(t, tc.port, c.Ports[0].ContainerPort)
			env := envMap(c.Env)
			require.Equal(t, "mnist", env["TRAINYARD_JOB"])
			require.Equal(t, string(tc.typ), env["TRAINYARD_REPLICA_TYPE"])
			require.Equal(t, fmt.Sprint(tc.index), env["TRAINYARD_REPLICA_INDEX"])
			var cfg tfConfigJSON
			require.NoError(t, json.Unmarshal([]byte(env["TF_CONFIG"]), &cfg))
			require.Equal(t, cluster, cfg.Cluster)
			require.Equal(t, string(tc.typ), cfg.Task.Type)
			require.Equal(t, tc.index, cfg.Task.Index)
			require.Equal(t, "cloud", cfg.Environment)

			// The checkpoint claim is mounted read-write in every replica.
			require.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "checkpoint", MountPath: "/checkpoints"})
			require.Equal(t, "mnist-ckpt", pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
			require.False(t, pod.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly)

			_, hasGPU := c.Resources.Limits[ResourceGPU]
			require.Equal(t, tc.gpu, hasGPU)
			require.Equal(t, new(false), c.SecurityContext.AllowPrivilegeEscalation)
		})
	}
}

func TestRenderPodSingleReplicaHasNoTFConfig(t *testing.T) {
	j := job.Job{UID: "u1", Tenant: "vision", Name: "solo", Spec: job.Spec{Replicas: []job.ReplicaSpec{
		{Type: job.Worker, Count: 1, Image: "tf"},
	}}}
	pod, err := RenderPod(j, testNS, job.Worker, 0, 0, PodOptions{ServiceAccount: "custom"})
	require.NoError(t, err)
	c := pod.Spec.Containers[0]
	require.NotContains(t, envMap(c.Env), "TF_CONFIG")
	require.Equal(t, []string{"TRAINYARD_JOB", "TRAINYARD_REPLICA_TYPE", "TRAINYARD_REPLICA_INDEX"}, envNames(c.Env))
	require.Equal(t, "custom", pod.Spec.ServiceAccountName)
	// Not defaulted yet: the port is still 2222; no checkpoint, no volumes.
	require.Equal(t, int32(job.DefaultPort), c.Ports[0].ContainerPort)
	require.Nil(t, pod.Spec.Volumes)
	require.Nil(t, c.VolumeMounts)
	require.Nil(t, c.Resources.Requests)
	require.Nil(t, c.Resources.Limits)
	require.Nil(t, pod.Spec.Affinity)
}

// A dependent's pods get its dependencies' results, after Trainyard's own
// variables and before the user's.
func TestRenderPodDependencyEnv(t *testing.T) {
	j := job.Job{UID: "u2", Tenant: "vision", Name: "train", Spec: job.Spec{Replicas: []job.ReplicaSpec{
		{Type: job.Worker, Count: 1, Image: "tf", Env: []job.EnvVar{{Name: "EPOCHS", Value: "3"}}},
	}}}
	j.Status.Dependencies = []job.DependencyResult{{Job: "prep-data", State: job.Succeeded, Condition: job.DependsSucceeded,
		ExitCodes: map[string]int32{"worker-0": 0}, Outputs: map[string]string{"dataset": "gs://d/7"}}}
	pod, err := RenderPod(j, testNS, job.Worker, 0, 0, PodOptions{})
	require.NoError(t, err)
	env := pod.Spec.Containers[0].Env
	require.Equal(t, []string{"TRAINYARD_JOB", "TRAINYARD_REPLICA_TYPE", "TRAINYARD_REPLICA_INDEX",
		"TRAINYARD_DEPENDENCIES", "TRAINYARD_DEP_PREP_DATA_STATE", "TRAINYARD_DEP_PREP_DATA_EXIT_CODE",
		"TRAINYARD_DEP_PREP_DATA_EXIT_CODES", "TRAINYARD_DEP_PREP_DATA_OUTPUT_DATASET", "EPOCHS"}, envNames(env))
	require.Equal(t, "gs://d/7", envMap(env)["TRAINYARD_DEP_PREP_DATA_OUTPUT_DATASET"])
	require.Equal(t, "SUCCEEDED", envMap(env)["TRAINYARD_DEP_PREP_DATA_STATE"])
}

func TestRenderPodPrivileged(t *testing.T) {
	j := distributedJob()
	j.Spec.Replicas[0].Privileged = true
	pod, err := RenderPod(j, testNS, job.Chief, 0, 0, PodOptions{})
	require.NoError(t, err)
	// allowPrivilegeEscalation=false with privileged is invalid in Kubernetes;
	// the namespace's Pod Security level is what refuses this pod.
	require.Equal(t, &corev1.SecurityContext{Privileged: new(true)}, pod.Spec.Containers[0].SecurityContext)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.Spec.SecurityContext.SeccompProfile.Type)
}

// A replica that asks for a token gets one of the tenant's job
// ServiceAccount; the other replicas of the job still get none.
func TestRenderPodServiceAccountTokenWhenAsked(t *testing.T) {
	j := distributedJob()
	j.Spec.Replicas[0].MountServiceAccountToken = true
	asked, err := RenderPod(j, testNS, j.Spec.Replicas[0].Type, 0, 0, PodOptions{})
	require.NoError(t, err)
	require.Equal(t, new(true), asked.Spec.AutomountServiceAccountToken)
	require.Equal(t, DefaultJobServiceAccount, asked.Spec.ServiceAccountName)
	other, err := RenderPod(j, testNS, j.Spec.Replicas[1].Type, 0, 0, PodOptions{})
	require.NoError(t, err)
	require.Equal(t, new(false), other.Spec.AutomountServiceAccountToken)
}

func TestResourceRequirements(t *testing.T) {
	for name, tc := range map[string]struct {
		in       job.Resources
		req, lim corev1.ResourceList
	}{
		"none":                        {},
		"memory limit is the request": {in: job.Resources{CPU: "500m", Memory: "1Gi"}, req: corev1.ResourceList{"cpu": q("500m"), "memory": q("1Gi")}, lim: corev1.ResourceList{"memory": q("1Gi")}},
		"explicit limits":             {in: job.Resources{CPU: "1", Memory: "1Gi", CPULimit: "2", MemoryLimit: "2Gi"}, req: corev1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}, lim: corev1.ResourceList{"cpu": q("2"), "memory": q("2Gi")}},
		"limit only":                  {in: job.Resources{MemoryLimit: "3Gi"}, lim: corev1.ResourceList{"memory": q("3Gi")}},
		"gpus only":                   {in: job.Resources{GPU: 4}, req: corev1.ResourceList{"nvidia.com/gpu": q("4")}, lim: corev1.ResourceList{"nvidia.com/gpu": q("4")}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := resourceRequirements(tc.in)
			require.NoError(t, err)
			if diff := cmp.Diff(corev1.ResourceRequirements{Requests: tc.req, Limits: tc.lim}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderPodErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		edit  func(*job.Job)
		typ   job.ReplicaType
		index int32
	}{
		"no such type":        {typ: job.Evaluator},
		"index out of range":  {typ: job.Worker, index: 2},
		"negative index":      {typ: job.Worker, index: -1},
		"bad quantity":        {typ: job.Worker, edit: func(j *job.Job) { j.Spec.Replicas[1].Resources.CPU = "four" }},
		"reserved label":      {typ: job.Worker, edit: func(j *job.Job) { j.Spec.Replicas[1].PodLabels[LabelJobUID] = "other" }},
		"managed-by label":    {typ: job.Worker, edit: func(j *job.Job) { j.Spec.Replicas[1].PodLabels[LabelManagedBy] = "me" }},
		"reserved env":        {typ: job.Worker, edit: func(j *job.Job) { j.Spec.Replicas[1].Env[0].Name = "TF_CONFIG" }},
		"reserved env prefix": {typ: job.Worker, edit: func(j *job.Job) { j.Spec.Replicas[1].Env[0].Name = "TRAINYARD_X" }},
	} {
		t.Run(name, func(t *testing.T) {
			j := distributedJob()
			if tc.edit != nil {
				tc.edit(&j)
			}
			_, err := RenderPod(j, testNS, tc.typ, tc.index, 0, PodOptions{})
			require.ErrorIs(t, err, ErrInvalidSpec)
			require.True(t, IsTerminal(err))
			require.Equal(t, ReasonInvalidSpec, Reason(err))
		})
	}
}

func TestRenderPodDeterministic(t *testing.T) {
	j := distributedJob()
	j.Spec.Replicas[1].PodLabels = map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}
	first, err := RenderPod(j, testNS, job.Worker, 0, 0, PodOptions{})
	require.NoError(t, err)
	firstJSON, err := json.Marshal(first)
	require.NoError(t, err)
	for range 20 {
		again, err := RenderPod(j, testNS, job.Worker, 0, 0, PodOptions{})
		require.NoError(t, err)
		againJSON, err := json.Marshal(again)
		require.NoError(t, err)
		require.Equal(t, string(firstJSON), string(againJSON))
	}
	// Rendering does not alias the spec: editing the pod leaves the job alone.
	first.Spec.NodeSelector["pool"] = "cpu"
	first.Annotations["x"] = "y"
	require.Equal(t, "gpu", j.Spec.Replicas[1].NodeSelector["pool"])
	require.NotContains(t, j.Spec.Replicas[1].PodAnnotations, "x")
}

func envMap(env []corev1.EnvVar) map[string]string {
	m := map[string]string{}
	for _, e := range env {
		m[e.Name] = e.Value
	}
	return m
}

func envNames(env []corev1.EnvVar) []string {
	var names []string
	for _, e := range env {
		names = append(names, e.Name)
	}
	return names
}

// requireValidNames checks what the API server would: a DNS-1123 name and
// well-formed label keys and values.
func requireValidNames(t *testing.T, m *metav1.ObjectMeta) {
	t.Helper()
	require.Empty(t, validation.IsDNS1123Label(m.Name), "name %q", m.Name)
	if m.Namespace != "" {
		require.Empty(t, validation.IsDNS1123Label(m.Namespace), "namespace %q", m.Namespace)
	}
	for k, v := range m.Labels {
		require.Empty(t, validation.IsQualifiedName(k), "label key %q", k)
		require.Empty(t, validation.IsValidLabelValue(v), "label %q value %q", k, v)
	}
}

func TestRenderPodGracePeriod(t *testing.T) {
	j := job.Job{Name: "g", Spec: job.Spec{Replicas: []job.ReplicaSpec{{Type: job.Worker, Count: 1, Image: "tf"}}}}
	for name, tc := range map[string]struct {
		spec *int64
		max  time.Duration
		want int64
	}{
		"unset: Kubernetes' default":        {nil, 0, 30},
		"the job's own":                     {new(int64(120)), 0, 120},
		"bounded by the operator's maximum": {new(int64(600)), 5 * time.Minute, 300},
		"zero: killed at once":              {new(int64(0)), 5 * time.Minute, 0},
	} {
		t.Run(name, func(t *testing.T) {
			j.Spec.TerminationGracePeriodSeconds = tc.spec
			pod, err := RenderPod(j, "ns", job.Worker, 0, 0, PodOptions{MaxGracePeriod: tc.max})
			require.NoError(t, err)
			require.Equal(t, tc.want, *pod.Spec.TerminationGracePeriodSeconds)
		})
	}
}

// A job the scheduler counted against a GPU model's quota has its GPU
// pods pinned to that model's nodes; its pods without GPUs go anywhere.
func TestRenderPodPinsTheAdmittedGPUModel(t *testing.T) {
	j := job.Job{UID: "u1", Tenant: "vision", Name: "gpus", Spec: job.Spec{Replicas: []job.ReplicaSpec{
		{Type: job.Chief, Count: 1, Image: "tf"},
		{Type: job.Worker, Count: 2, Image: "tf", Resources: job.Resources{GPU: 8}, NodeSelector: map[string]string{"zone": "a"}},
	}}, Status: job.Status{GPUType: "H100"}}
	pod, err := RenderPod(j, testNS, job.Worker, 1, 0, PodOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"zone": "a", LabelGPUProduct: "H100"}, pod.Spec.NodeSelector)
	require.Equal(t, map[string]string{"zone": "a"}, j.Spec.Replicas[1].NodeSelector, "the spec is not written")
	chief, err := RenderPod(j, testNS, job.Chief, 0, 0, PodOptions{})
	require.NoError(t, err)
	require.Empty(t, chief.Spec.NodeSelector)
}
