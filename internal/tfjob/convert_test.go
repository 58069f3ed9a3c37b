package tfjob

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

var testOpts = Options{PriorityClasses: map[string]int32{"high": 500, "low": -100}}

func convertFile(t *testing.T, name string) Result {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	r, err := Convert(b, testOpts)
	require.NoError(t, err)
	return r
}

// fields lists issues as "severity field" for comparison.
func fields(is []Issue) []string {
	var out []string
	for _, i := range is {
		name := "unsupported"
		if i.Severity == Note {
			name = "note"
		}
		out = append(out, name+" "+i.Field)
	}
	return out
}

// valid defaults and validates the converted job as the API would.
func valid(t *testing.T, j job.Job) {
	t.Helper()
	j.Spec.Default()
	require.Empty(t, job.Validate(&j), "the converted job is one the API accepts")
}

func tf(name string, count int32, rp job.RestartPolicy, image string, command ...string) job.ReplicaSpec {
	return job.ReplicaSpec{Type: job.ReplicaType(name), Count: count, Image: image, Command: command, RestartPolicy: rp}
}

func TestConvertKubeflowExample(t *testing.T) {
	r := convertFile(t, "dist-mnist.yaml")
	ann := map[string]string{"sidecar.istio.io/inject": "false"}
	w := tf("worker", 4, job.RestartNever, "kubeflow/tf-dist-mnist-test:latest")
	w.PodAnnotations = ann
	ps := tf("ps", 2, job.RestartNever, "kubeflow/tf-dist-mnist-test:latest")
	ps.PodAnnotations = ann
	want := job.Job{Name: "dist-mnist-for-e2e-test", Spec: job.Spec{
		Replicas:  []job.ReplicaSpec{w, ps},
		RunPolicy: job.RunPolicy{BackoffLimit: job.DefaultBackoffLimit},
	}}
	require.Empty(t, cmp.Diff(want, r.Job, cmpopts.EquateEmpty()))
	// imagePullPolicy Always on a :latest image is Kubernetes' default: honoured, not reported.
	require.Equal(t, []string{"note metadata.namespace"}, fields(r.Issues))
	valid(t, r.Job)
}

func TestConvertMasterStyle(t *testing.T) {
	r := convertFile(t, "master.yaml")
	cmd := []string{"python", "trainer/task.py", "--train-steps=1000"}
	chief := tf("chief", 1, job.RestartOnFailure, "gcr.io/kubeflow-examples/census:v1", cmd...)
	chief.Port = 2222
	want := job.Job{Name: "census", Labels: map[string]string{"team": "tabular"}, Spec: job.Spec{
		Replicas: []job.ReplicaSpec{
			chief,
			tf("worker", 2, job.RestartOnFailure, "gcr.io/kubeflow-examples/census:v1", cmd...),
			tf("ps", 1, job.RestartNever, "gcr.io/kubeflow-examples/census:v1", "python", "trainer/task.py"),
		},
		RunPolicy: job.RunPolicy{BackoffLimit: job.DefaultBackoffLimit},
	}}
	require.Empty(t, cmp.Diff(want, r.Job, cmpopts.EquateEmpty()), "master (any case) is the chief; replicas in Trainyard's order")
	require.Equal(t, []string{"note spec.tfReplicaSpecs.master", "note spec.runPolicy.backoffLimit"}, fields(r.Issues),
		"the master's TF_CONFIG key, and TFJob's unlimited restarts, are said")
	valid(t, r.Job)
}

func TestConvertExitCode(t *testing.T) {
	r := convertFile(t, "exitcode.yaml")
	require.Empty(t, r.Issues)
	require.Equal(t, job.RestartExitCode, r.Job.Spec.Replicas[0].RestartPolicy)
	require.Empty(t, r.Job.Spec.Replicas[0].RetryableExitCodes, "TFJob's ExitCode retries 128-255, Trainyard's default for ExitCode")
	require.Equal(t, int32(5), r.Job.Spec.RunPolicy.BackoffLimit)
	valid(t, r.Job)
}

func TestConvertEverySupportedField(t *testing.T) {
	r := convertFile(t, "full.yaml")
	require.Equal(t, []string{"note spec.runPolicy.schedulingPolicy.minAvailable"}, fields(r.Issues))
	s := r.Job.Spec
	image, cmd := "registry.example.com/vision/resnet:2.16", []string{"python", "train.py"}

	chief := tf("chief", 1, job.RestartNever, image, cmd...)
	chief.Args, chief.WorkingDir, chief.Port = []string{"--epochs", "90"}, "/workspace", 3000
	chief.PodLabels = map[string]string{"role": "chief"}
	chief.Env = []job.EnvVar{{Name: "EPOCHS", Value: "90"}, {Name: "WANDB_API_KEY", Secret: &job.SecretKeyRef{Secret: "wandb", Key: "api-key"}}}
	chief.Resources = job.Resources{CPU: "4", Memory: "16Gi", CPULimit: "8", MemoryLimit: "20Gi"}
	chief.SecretVolumes = []job.SecretVolume{{Secret: "gcs-creds", MountPath: "/var/secrets/gcs"}}
	chief.ReadinessProbe = &job.Probe{TCPSocket: &job.TCPSocketAction{Port: 3000}, PeriodSeconds: 5}

	worker := tf("worker", 2, job.RestartOnFailure, image, cmd...)
	worker.Port = 3000
	worker.PodAnnotations = map[string]string{"sim.trainyard.dev/run-for": "2s"}
	worker.Resources = job.Resources{Memory: "32Gi", MemoryLimit: "32Gi", GPU: 2}
	worker.NodeSelector = map[string]string{"pool": "gpu"}
	worker.Tolerations = []job.Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}}
	worker.Affinity = &job.Affinity{
		Required: []job.NodeSelectorTerm{{MatchExpressions: []job.NodeSelectorRequirement{{Key: "gpu-type", Operator: "In", Values: []string{"a100", "h100"}}}}},
		Preferred: []job.PreferredTerm{{Weight: 50, Preference: job.NodeSelectorTerm{MatchExpressions: []job.NodeSelectorRequirement{
			{Key: "lifecycle", Operator: "In", Values: []string{"spot"}}}}}},
	}
	worker.LivenessProbe = &job.Probe{HTTPGet: &job.HTTPGetAction{Path: "/healthz", Port: 8080}, InitialDelaySeconds: 60, FailureThreshold: 3}

	ps := tf("ps", 1, job.RestartAlways, image, cmd...)
	ps.Port = 3000
	eval := tf("evaluator", 1, job.RestartNever, image, "python", "eval.py")
	eval.StartupProbe = &job.Probe{Exec: &job.ExecAction{Command: []string{"test", "-f", "/tmp/started"}}, FailureThreshold: 30}

	want := job.Spec{
		Replicas:      []job.ReplicaSpec{chief, worker, ps, eval},
		SuccessPolicy: job.SuccessAllWorkers,
		RunPolicy: job.RunPolicy{BackoffLimit: 4, ActiveDeadlineSeconds: new(int64(7200)), TTLSecondsAfterFinished: new(int32(600)),
			CleanPodPolicy: job.CleanAll},
		Checkpoint:                    &job.CheckpointVolume{ClaimName: "resnet-ckpt", MountPath: "/ckpt"},
		Priority:                      500,
		TerminationGracePeriodSeconds: new(int64(60)),
	}
	require.Empty(t, cmp.Diff(want, s, cmpopts.EquateEmpty()))
	require.Equal(t, map[string]string{"team": "vision"}, r.Job.Labels)
	valid(t, r.Job)
}

func TestConvertUnsupported(t *testing.T) {
	r := convertFile(t, "unsupported.yaml")
	const c0, ps = "spec.tfReplicaSpecs.Worker.template.spec.containers[0]", "spec.tfReplicaSpecs.Worker.template.spec"
	require.Equal(t, []string{
		"unsupported " + c0 + ".imagr",
		"note metadata.namespace",
		"unsupported spec.runPolicy.suspend",
		"note spec.runPolicy.schedulingPolicy.queue",
		"unsupported spec.enableDynamicWorker",
		"unsupported " + ps + ".containers[1]",
		"unsupported " + c0 + ".imagePullPolicy",
		"unsupported " + c0 + ".env[0].name",
		"unsupported " + c0 + ".env[1].valueFrom",
		"unsupported " + c0 + ".envFrom",
		"unsupported " + c0 + ".resources.limits",
		"unsupported " + ps + ".volumes[0]",
		"unsupported " + c0 + ".lifecycle.preStop",
		"unsupported " + ps + ".serviceAccountName",
		"unsupported " + ps + ".affinity.podAntiAffinity",
		"unsupported " + ps + ".imagePullSecrets",
		"unsupported " + ps + ".initContainers",
		"unsupported " + ps + ".securityContext.runAsUser",
		"note spec.runPolicy.backoffLimit",
	}, fields(r.Issues))
	for _, i := range r.Issues {
		require.NotEmpty(t, i.Message, i.Field)
	}
	require.Len(t, issuesOf(r, Unsupported), 16)
	require.Len(t, issuesOf(r, Note), 3)
	// What could be carried over still is: the job runs with warnings allowed.
	require.Equal(t, "tensorflow/tensorflow:2.16.1", r.Job.Spec.Replicas[0].Image)
	valid(t, r.Job)
}

func TestConvertNotATFJob(t *testing.T) {
	for name, manifest := range map[string]string{
		"PyTorchJob":         mustRead(t, "pytorchjob.yaml"),
		"Deployment":         "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
		"Trainyard job file": "spec:\n  replicas:\n  - type: WORKER\n    image: tf\n",
		"older TFJob":        "apiVersion: kubeflow.org/v1alpha2\nkind: TFJob\nmetadata: {name: old}\n",
		"not YAML":           "{{{ nope",
		"empty":              "",
		"two documents":      "apiVersion: kubeflow.org/v1\nkind: TFJob\n---\napiVersion: kubeflow.org/v1\nkind: TFJob\n",
		"wrong type":         "apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: two\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Convert([]byte(manifest), testOpts)
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrNotTFJob), "%v", err)
		})
	}
}

func mustRead(t *testing.T, name string) string {
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return string(b)
}

func TestConvertJSON(t *testing.T) {
	r, err := Convert([]byte(`{"apiVersion":"kubeflow.org/v1","kind":"TFJob","metadata":{"name":"j"},
		"spec":{"tfReplicaSpecs":{"Worker":{"replicas":2,"template":{"spec":{"containers":[{"name":"tensorflow","image":"tf:2"}]}}}}}}`), testOpts)
	require.NoError(t, err)
	require.Empty(t, r.Issues)
	require.Equal(t, int32(2), r.Job.Spec.Replicas[0].Count)
}

// issuesOf returns r's issues of severity s.
func issuesOf(r Result, s Severity) []Issue {
	var out []Issue
	for _, i := range r.Issues {
		if i.Severity == s {
			out = append(out, i)
		}
	}
	return out
}
