package jobfile

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/trainyard/trainyard/internal/document"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// parseJobFile reads a file that holds one job.
func parseJobFile(data []byte) (*pb.Job, error) {
	jobs, err := Parse(data, document.Limits{})
	if err != nil {
		return nil, err
	}
	if len(jobs) != 1 {
		return nil, fmt.Errorf("%d jobs", len(jobs))
	}
	return jobs[0], nil
}

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
		{"empty", "  \n# only a comment\n", []string{"the file is empty"}},
		{"not an object", "- a\n- b\n", []string{"documents[0]: want a job object"}},
		{"yaml syntax", "spec: [\n", []string{"documents[0]: the body is not YAML"}},
		{"tfjob", "apiVersion: kubeflow.org/v1\nkind: TFJob\n", []string{"documents[0]: a Kubeflow TFJob"}},
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
				`documents[0].spec.replicas[0].imagee: unknown field (did you mean image?)`,
				`documents[0].spec.replicas[0].resources.gpus: unknown field (did you mean gpu?)`,
				`documents[0].spec.replicas[0].type: "WRKER" is not one of CHIEF, WORKER, PS, EVALUATOR`,
				`documents[0].spec.replicas[1].count: want a number, got "two"`,
				`documents[0].spec.replicas[1].command: want a list, got "python train.py"`,
				`documents[0].spec.runPolicy.backoffLimit: want a number, got a list`,
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
		"  documents[0].spec.priorty: unknown field (did you mean priority?)\n"+
		`  documents[0].spec.replicas[0].type: "X" is not one of CHIEF, WORKER, PS, EVALUATOR`)
}

func TestExampleMNIST(t *testing.T) {
	data, err := os.ReadFile("../../cmd/tyctl/examples/mnist.yaml")
	require.NoError(t, err)
	j, err := parseJobFile(data)
	require.NoError(t, err)

	replicas := j.GetSpec().GetReplicas()
	require.Len(t, replicas, 3)
	require.Equal(t, []pb.ReplicaType{pb.ReplicaType_REPLICA_TYPE_CHIEF, pb.ReplicaType_REPLICA_TYPE_WORKER, pb.ReplicaType_REPLICA_TYPE_PS},
		[]pb.ReplicaType{replicas[0].GetType(), replicas[1].GetType(), replicas[2].GetType()})
	workers := replicas[1]
	require.EqualValues(t, 1, workers.GetResources().GetGpu())
	require.True(t, strings.HasPrefix(workers.GetImage(), "tensorflow/tensorflow:"))
	require.Equal(t, "cloud.google.com/gke-spot", workers.GetTolerations()[0].GetKey())
	require.EqualValues(t, 4, j.GetSpec().GetRunPolicy().GetBackoffLimit())
	require.Zero(t, replicas[0].GetResources().GetGpu(), "the chief coordinates; GPUs are on the workers")

	// The same file as JSON parses to the same job.
	js, err := protojson.Marshal(j)
	require.NoError(t, err)
	again, err := parseJobFile(js)
	require.NoError(t, err)
	require.True(t, proto.Equal(j, again))
}

func TestParseSeveralDocuments(t *testing.T) {
	jobs, err := Parse([]byte(`# a sweep
---
name: lr-1
spec: {replicas: [{type: worker, image: tf, args: [--lr, 0.1]}]}
---
# only a comment: skipped, and not counted
---
name: lr-2
spec: {replicas: [{type: worker, image: tf, args: [--lr, 0.01]}]}
`), document.Limits{})
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	require.Equal(t, "lr-1", jobs[0].GetName())
	require.Equal(t, []string{"--lr", "0.01"}, jobs[1].GetSpec().GetReplicas()[0].GetArgs())
}

func TestParseSeveralDocumentsProblemsNameTheDocument(t *testing.T) {
	_, err := Parse([]byte(`spec: {replicas: [{type: worker, image: tf}]}
---
# comment
---
spec: {replicas: [{type: worker, image: tf, gpus: 1}]}
---
spec: {replicas: [{type: worker, image: tf}], spec: 1, spec: 2}
`), document.Limits{})
	var e Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, Error{
		{Field: "documents[1].spec.replicas[0].gpus", Reason: "unknown field"},
		{Field: "documents[2].spec.spec", Reason: "the key appears twice in one map (line 2)"},
	}, e)
}

func TestParseBounded(t *testing.T) {
	var b strings.Builder
	for range 3 {
		b.WriteString("spec: {replicas: [{type: worker, image: tf, args: [a, b, c, d, e, f, g, h]}]}\n---\n")
	}
	_, err := Parse([]byte(b.String()), document.Limits{MaxBytes: 100})
	require.ErrorContains(t, err, "larger than 100 bytes")

	_, err = Parse([]byte(b.String()), document.Limits{MaxValues: 5})
	require.ErrorContains(t, err, "documents[0]")
	require.ErrorContains(t, err, "more than 5 values")

	// The converted JSON of every document counts against one budget: the
	// file fits, the JSON of its three documents does not.
	_, err = Parse([]byte(b.String()), document.Limits{MaxBytes: len(b.String())})
	require.ErrorContains(t, err, "documents[2]: the body is larger than")
	jobs, err := Parse([]byte(b.String()), document.Limits{MaxBytes: 2 * len(b.String())})
	require.NoError(t, err)
	require.Len(t, jobs, 3)
}

func TestParseEnumAmbiguousAndUnknown(t *testing.T) {
	_, err := ParseEnum(pb.Role(0).Descriptor(), "owner")
	require.ErrorContains(t, err, `"owner" is not one of`)
	v, err := ParseEnum(pb.Role(0).Descriptor(), "Editor")
	require.NoError(t, err)
	require.Equal(t, pb.Role_ROLE_EDITOR, pb.Role(v.Number()))
}

// A job file selects clusters by label and by name; a label value written
// as a number is a string, as elsewhere.
func TestParseJobFileClusters(t *testing.T) {
	j, err := parseJobFile([]byte(`
spec:
  replicas: [{type: worker, image: tf}]
  clusterSelector: {region: eu-west-1, generation: 5}
  clusters: [gpu-east, gpu-west]
`))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"region": "eu-west-1", "generation": "5"}, j.GetSpec().GetClusterSelector())
	require.Equal(t, []string{"gpu-east", "gpu-west"}, j.GetSpec().GetClusters())
}
