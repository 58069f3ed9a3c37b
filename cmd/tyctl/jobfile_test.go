package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestParseJobFileShortEnums(t *testing.T) {
	for _, tc := range []struct {
		written string
		want    pb.RestartPolicy
	}{
		{"ON_FAILURE", pb.RestartPolicy_RESTART_POLICY_ON_FAILURE},
		{"on_failure", pb.RestartPolicy_RESTART_POLICY_ON_FAILURE},
		{"OnFailure", pb.RestartPolicy_RESTART_POLICY_ON_FAILURE},
		{"on-failure", pb.RestartPolicy_RESTART_POLICY_ON_FAILURE},
		{"RESTART_POLICY_ON_FAILURE", pb.RestartPolicy_RESTART_POLICY_ON_FAILURE},
		{"ExitCode", pb.RestartPolicy_RESTART_POLICY_EXIT_CODE},
		{"never", pb.RestartPolicy_RESTART_POLICY_NEVER},
	} {
		t.Run(tc.written, func(t *testing.T) {
			j, err := parseJobFile([]byte("spec:\n  replicas:\n  - type: worker\n    image: tf\n    restartPolicy: " + tc.written + "\n"))
			require.NoError(t, err)
			require.Equal(t, pb.ReplicaType_REPLICA_TYPE_WORKER, j.GetSpec().GetReplicas()[0].GetType())
			require.Equal(t, tc.want, j.GetSpec().GetReplicas()[0].GetRestartPolicy())
		})
	}
}

func TestParseJobFileEveryEnumField(t *testing.T) {
	j, err := parseJobFile([]byte(`
spec:
  replicas: [{type: PS, image: tf}, {type: Evaluator, image: tf}, {type: REPLICA_TYPE_CHIEF, image: tf}]
  runPolicy: {cleanPodPolicy: all}
  successPolicy: AllWorkers
`))
	require.NoError(t, err)
	s := j.GetSpec()
	require.Equal(t, []pb.ReplicaType{pb.ReplicaType_REPLICA_TYPE_PS, pb.ReplicaType_REPLICA_TYPE_EVALUATOR, pb.ReplicaType_REPLICA_TYPE_CHIEF},
		[]pb.ReplicaType{s.GetReplicas()[0].GetType(), s.GetReplicas()[1].GetType(), s.GetReplicas()[2].GetType()})
	require.Equal(t, pb.CleanPodPolicy_CLEAN_POD_POLICY_ALL, s.GetRunPolicy().GetCleanPodPolicy())
	require.Equal(t, pb.SuccessPolicy_SUCCESS_POLICY_ALL_WORKERS, s.GetSuccessPolicy())
}

func TestParseJobFileScalarsBecomeStrings(t *testing.T) {
	j, err := parseJobFile([]byte(`
labels: {year: 2024, nightly: true}
spec:
  replicas:
  - type: WORKER
    image: tf
    args: [--epochs, 10, --lr, 0.001]
    resources: {cpu: 2, memory: 8Gi, gpu: 1}
    env: [{name: SEED, value: 42}]
    podAnnotations: {sim.trainyard.dev/exit-code: 137}
  runPolicy: {backoff_limit: 0}
`))
	require.NoError(t, err)
	r := j.GetSpec().GetReplicas()[0]
	require.Equal(t, map[string]string{"year": "2024", "nightly": "true"}, j.GetLabels())
	require.Equal(t, []string{"--epochs", "10", "--lr", "0.001"}, r.GetArgs())
	require.Equal(t, "2", r.GetResources().GetCpu())
	require.EqualValues(t, 1, r.GetResources().GetGpu())
	require.Equal(t, "42", r.GetEnv()[0].GetValue())
	require.Equal(t, "137", r.GetPodAnnotations()["sim.trainyard.dev/exit-code"])
	// snake_case proto names work, and an explicit 0 survives (optional field).
	require.NotNil(t, j.GetSpec().GetRunPolicy().BackoffLimit)
	require.EqualValues(t, 0, j.GetSpec().GetRunPolicy().GetBackoffLimit())
}

func TestParseJobFileJSON(t *testing.T) {
	j, err := parseJobFile([]byte(`{"spec": {"replicas": [{"type": "REPLICA_TYPE_WORKER", "count": 4, "image": "tf"}]}}`))
	require.NoError(t, err)
	require.EqualValues(t, 4, j.GetSpec().GetReplicas()[0].GetCount())
}

func TestParseJobFileProblems(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"empty", "  \n", []string{"the file is empty"}},
		{"not an object", "- a\n- b\n", []string{"want a job object"}},
		{"yaml syntax", "spec: [\n", []string{"yaml"}},
		{
			"typos and bad values, all at once",
			`
spec:
  replicas:
  - type: WRKER
    imagee: tf
    resources: {gpus: 1}
  - type: CHIEF
    count: two
    command: python train.py
  runPolicy: {backoffLimit: [1]}
`,
			[]string{
				"6 problems:",
				`spec.replicas[0].imagee: unknown field (did you mean image?)`,
				`spec.replicas[0].resources.gpus: unknown field (did you mean gpu?)`,
				`spec.replicas[0].type: "WRKER" is not one of CHIEF, WORKER, PS, EVALUATOR`,
				`spec.replicas[1].count: want a number, got "two"`,
				`spec.replicas[1].command: want a list, got "python train.py"`,
				`spec.runPolicy.backoffLimit: want a number, got a list`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseJobFile([]byte(tc.file))
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseJobFileProblemsOneLineEach(t *testing.T) {
	_, err := parseJobFile([]byte("spec: {replicas: [{type: X, image: tf}], priorty: 1}\n"))
	require.EqualError(t, err, "2 problems:\n"+
		"  spec.priorty: unknown field (did you mean priority?)\n"+
		`  spec.replicas[0].type: "X" is not one of CHIEF, WORKER, PS, EVALUATOR`)
}

func TestExampleMNIST(t *testing.T) {
	data, err := os.ReadFile("examples/mnist.yaml")
	require.NoError(t, err)
	j, err := parseJobFile(data)
	require.NoError(t, err)

	replicas := j.GetSpec().GetReplicas()
	require.Len(t, replicas, 3)
	require.Equal(t, "chief 0/1, worker 0/2, ps 0/1", replicaSummary(j))
	workers := replicas[1]
	require.EqualValues(t, 1, workers.GetResources().GetGpu())
	require.True(t, strings.HasPrefix(workers.GetImage(), "tensorflow/tensorflow:"))
	require.Equal(t, "cloud.google.com/gke-spot", workers.GetTolerations()[0].GetKey())
	require.EqualValues(t, 4, j.GetSpec().GetRunPolicy().GetBackoffLimit())
	require.Zero(t, replicas[0].GetResources().GetGpu(), "the chief coordinates; GPUs are on the workers")

	// The same file as JSON parses to the same job.
	js, err := marshalJSON(j, true)
	require.NoError(t, err)
	again, err := parseJobFile(js)
	require.NoError(t, err)
	require.True(t, proto.Equal(j, again))
}
