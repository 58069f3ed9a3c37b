package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestParseJobFilter(t *testing.T) {
	for name, tc := range map[string]struct {
		in   string
		want jobFilter
		bad  string
	}{
		"empty":           {in: "", want: jobFilter{}},
		"state":           {in: "state = RUNNING", want: jobFilter{States: []job.State{job.Running}}},
		"enum spelling":   {in: "state=JOB_STATE_FAILED", want: jobFilter{States: []job.State{job.Failed}}},
		"lower case":      {in: "state = queued", want: jobFilter{States: []job.State{job.Queued}}},
		"or of states":    {in: "state = QUEUED OR state = RUNNING", want: jobFilter{States: []job.State{job.Queued, job.Running}}},
		"parenthesised":   {in: "(state = QUEUED OR state = RUNNING) AND labels.team = nlp", want: jobFilter{States: []job.State{job.Queued, job.Running}, LabelEquals: map[string]string{"team": "nlp"}}},
		"quoted label":    {in: `labels.team = "vision"`, want: jobFilter{LabelEquals: map[string]string{"team": "vision"}}},
		"label with path": {in: `labels.example.com/owner = "a-b"`, want: jobFilter{LabelEquals: map[string]string{"example.com/owner": "a-b"}}},
		"has label":       {in: "labels.team:*", want: jobFilter{LabelExists: []string{"team"}}},
		"everything": {
			in:   `state = SUCCEEDED AND labels.team = "nlp" AND labels.sweep:*`,
			want: jobFilter{States: []job.State{job.Succeeded}, LabelEquals: map[string]string{"team": "nlp"}, LabelExists: []string{"sweep"}},
		},
		"unknown state":   {in: "state = DONE", bad: "unknown state"},
		"unknown field":   {in: "owner = bob", bad: "cannot parse"},
		"state twice":     {in: "state = QUEUED AND state = RUNNING", bad: "may test state once"},
		"or across kinds": {in: "state = QUEUED OR labels.team = nlp", bad: "cannot parse"},
		"too long":        {in: strings.Repeat("labels.a = b AND ", 200) + "labels.a = b", bad: "longer than"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseJobFilter("filter", tc.in)
			if tc.bad != "" {
				require.Equal(t, codes.InvalidArgument, status.Code(err))
				require.Contains(t, status.Convert(err).Message(), tc.bad)
				return
			}
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tc.want, got))
		})
	}
}

func TestJobFilterMatches(t *testing.T) {
	j := job.Job{Labels: map[string]string{"team": "nlp"}, Status: job.Status{State: job.Running}}
	require.True(t, jobFilter{}.matches(j))
	require.True(t, jobFilter{States: []job.State{job.Queued, job.Running}}.matches(j))
	require.False(t, jobFilter{States: []job.State{job.Queued}}.matches(j))
	require.True(t, jobFilter{LabelEquals: map[string]string{"team": "nlp"}, LabelExists: []string{"team"}}.matches(j))
	require.False(t, jobFilter{LabelEquals: map[string]string{"team": "cv"}}.matches(j))
	require.False(t, jobFilter{LabelExists: []string{"sweep"}}.matches(j))
}

func TestPageTokens(t *testing.T) {
	q := queryHash("jobs", "acme", "state = RUNNING")
	tok := encodePageToken(42, q)
	got, err := decodePageToken("pageToken", tok, q)
	require.NoError(t, err)
	require.EqualValues(t, 42, got)

	require.Empty(t, encodePageToken(0, q), "no cursor, no next page")

	// Bound to its query: another tenant or filter is refused.
	for _, other := range []uint64{queryHash("jobs", "other", "state = RUNNING"), queryHash("jobs", "acme", "")} {
		_, err = decodePageToken("pageToken", tok, other)
		require.Equal(t, codes.InvalidArgument, status.Code(err))
	}
	for _, junk := range []string{"x", "e30", "!!!"} {
		_, err = decodePageToken("pageToken", junk, q)
		require.Equal(t, codes.InvalidArgument, status.Code(err), junk)
	}
	// Hash parts are separated: ("ab","c") differs from ("a","bc").
	require.NotEqual(t, queryHash("ab", "c"), queryHash("a", "bc"))

	s := encodeStringToken("tenant-9", q)
	after, err := decodeStringToken("pageToken", s, q)
	require.NoError(t, err)
	require.Equal(t, "tenant-9", after)
	_, err = decodeStringToken("pageToken", s, q+1)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = decodeStringToken("pageToken", encodeStringToken("a\x00", q), q)
	require.Equal(t, codes.InvalidArgument, status.Code(err), "a forged token carries no NUL to the store")
}

func TestPageSize(t *testing.T) {
	for in, want := range map[int32]int{0: 50, 1: 1, 1000: 1000, 5000: 1000} {
		got, err := pageSize("pageSize", in)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
	}
	_, err := pageSize("pageSize", -1)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

func TestParseNames(t *testing.T) {
	tn, jn, err := parseJob("name", "tenants/acme/jobs/mnist")
	require.NoError(t, err)
	require.Equal(t, []string{"acme", "mnist"}, []string{tn, jn})
	tn, sn, err := parseSecret("name", "tenants/acme/secrets/s3")
	require.NoError(t, err)
	require.Equal(t, []string{"acme", "s3"}, []string{tn, sn})
	id, err := parseTenant("parent", "tenants/acme")
	require.NoError(t, err)
	require.Equal(t, "acme", id)

	for _, bad := range []string{"", "tenants/", "tenants/acme/jobs", "tenants/acme/jobs/", "projects/acme/jobs/x", "tenants/acme/secrets/x", "tenants/acme/jobs/x/extra"} {
		_, _, err := parseJob("name", bad)
		require.Equal(t, codes.InvalidArgument, status.Code(err), bad)
		br := badRequest(t, err)
		require.Equal(t, "name", br.GetFieldViolations()[0].GetField())
	}

	// An id that cannot exist names nothing: NOT_FOUND, with the input
	// escaped, and nothing reaches the store.
	for _, bad := range []string{"tenants/acme/jobs/a\x00b", "tenants/acme/jobs/a\xffb", "tenants/acme/jobs/Bad_Name"} {
		_, _, err := parseJob("name", bad)
		require.Equal(t, codes.NotFound, status.Code(err), bad)
		require.NotContains(t, status.Convert(err).Message(), "\x00")
	}
	_, _, err = parseSecret("name", "tenants/acme/secrets/a\x00b")
	require.Equal(t, codes.NotFound, status.Code(err))
}

func badRequest(t *testing.T, err error) *errdetails.BadRequest {
	t.Helper()
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			return br
		}
	}
	t.Fatalf("no BadRequest detail in %v", err)
	return nil
}

func TestInvalidListsEveryViolation(t *testing.T) {
	err := invalid(violation("a", "is wrong"), violation("b.c", "is worse"))
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, "a: is wrong (and more, see details)", status.Convert(err).Message())
	br := badRequest(t, err)
	require.Len(t, br.GetFieldViolations(), 2)
	require.Equal(t, "b.c", br.GetFieldViolations()[1].GetField())
}

func TestToStatusMasksInternalErrors(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx := context.Background()
	for err, want := range map[error]codes.Code{
		fmt.Errorf("job %q: %w", "x", store.ErrNotFound):              codes.NotFound,
		fmt.Errorf("%w: job x exists", store.ErrAlreadyExists):        codes.AlreadyExists,
		fmt.Errorf("%w: job is RUNNING", store.ErrFailedPrecondition): codes.FailedPrecondition,
		store.ErrConflict: codes.Aborted,
		context.Canceled:  codes.Canceled,
		status.Error(codes.PermissionDenied, "no"): codes.PermissionDenied,
	} {
		require.Equal(t, want, status.Code(toStatus(ctx, log, "/m", err)), err.Error())
	}
	require.NoError(t, toStatus(ctx, log, "/m", nil))

	leak := errors.New(`ERROR: duplicate key value violates unique constraint "jobs_pkey" (SQLSTATE 23505) at store.go:123`)
	st := status.Convert(toStatus(ctx, log, "/trainyard.v1.JobService/CreateJob", leak))
	require.Equal(t, codes.Internal, st.Code())
	require.NotContains(t, st.Message(), "SQLSTATE")
	require.NotContains(t, st.Message(), "store.go")
	// The id in the message is the one logged beside the real error.
	id := strings.TrimSuffix(strings.TrimPrefix(st.Message(), "internal error (id "), ")")
	require.Len(t, id, 12)
	require.Contains(t, logs.String(), "error_id="+id)
	require.Contains(t, logs.String(), "SQLSTATE 23505")

	down := fmt.Errorf("%w: tenant \"a\": dial tcp 10.0.3.7:5432: connect: connection refused", store.ErrUnavailable)
	st = status.Convert(toStatus(ctx, log, "/trainyard.v1.JobService/GetJob", down))
	require.Equal(t, codes.Unavailable, st.Code(), "clients and retry policies retry an outage")
	require.NotContains(t, st.Message(), "10.0.3.7")
	require.Contains(t, logs.String(), "10.0.3.7")
}

func TestSpecConversionRoundTrip(t *testing.T) {
	backoff, deadline, ttl := int32(5), int64(600), int32(60)
	in := &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{{
			Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 4, Image: "tensorflow/tensorflow:2.16.1",
			Command: []string{"python"}, Args: []string{"train.py"}, WorkingDir: "/app",
			Env: []*pb.EnvVar{
				{Name: "A", Source: &pb.EnvVar_Value{Value: "1"}},
				{Name: "TOKEN", Source: &pb.EnvVar_Secret{Secret: &pb.SecretKeyRef{Secret: "hf", Key: "token"}}},
			},
			Resources:    &pb.Resources{Cpu: "4", Memory: "16Gi", Gpu: 1, CpuLimit: "8", MemoryLimit: "20Gi"},
			NodeSelector: map[string]string{"pool": "gpu"},
			Tolerations:  []*pb.Toleration{{Key: "spot", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: 30}},
			Affinity: &pb.Affinity{
				Required:  []*pb.NodeSelectorTerm{{MatchExpressions: []*pb.NodeSelectorRequirement{{Key: "zone", Operator: "In", Values: []string{"a"}}}}},
				Preferred: []*pb.PreferredTerm{{Weight: 10, Preference: &pb.NodeSelectorTerm{MatchExpressions: []*pb.NodeSelectorRequirement{{Key: "spot", Operator: "Exists"}}}}},
			},
			PodLabels: map[string]string{"x": "y"}, PodAnnotations: map[string]string{"a": "b"},
			Port: 2223, RestartPolicy: pb.RestartPolicy_RESTART_POLICY_EXIT_CODE, RetryableExitCodes: []int32{137},
			SecretVolumes:            []*pb.SecretVolume{{Secret: "creds", MountPath: "/creds"}},
			MountServiceAccountToken: true,
		}},
		RunPolicy: &pb.RunPolicy{
			BackoffLimit: &backoff, ActiveDeadlineSeconds: &deadline, TtlSecondsAfterFinished: &ttl,
			CleanPodPolicy: pb.CleanPodPolicy_CLEAN_POD_POLICY_ALL,
		},
		SuccessPolicy: pb.SuccessPolicy_SUCCESS_POLICY_ALL_WORKERS,
		Checkpoint:    &pb.CheckpointVolume{ClaimName: "ckpt", MountPath: "/ckpt"},
		Tensorboard:   &pb.TensorBoard{Enabled: true, Image: "tb", LogDir: "logs"},
		Priority:      7,
	}
	out := specToPB(specFromPB(in))
	require.Empty(t, cmp.Diff(in, out, protocmp.Transform()))
}

func TestSpecConversionDefaults(t *testing.T) {
	s := specFromPB(&pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_CHIEF, Image: "tf"}}})
	require.EqualValues(t, job.DefaultBackoffLimit, s.RunPolicy.BackoffLimit, "an unset backoffLimit gets the default")
	require.Equal(t, job.RestartNever, s.Replicas[0].RestartPolicy)
	zero := int32(0)
	s = specFromPB(&pb.JobSpec{RunPolicy: &pb.RunPolicy{BackoffLimit: &zero}})
	require.EqualValues(t, 0, s.RunPolicy.BackoffLimit, "an explicit 0 stays 0")
	// An unknown enum number becomes "" so validation names the field.
	s = specFromPB(&pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType(99)}}})
	require.Equal(t, job.ReplicaType(""), s.Replicas[0].Type)
	require.Nil(t, specFromPB(&pb.JobSpec{Tensorboard: &pb.TensorBoard{Enabled: false, Image: "x"}}).TensorBoard)
}

func TestTailLines(t *testing.T) {
	log := "a\nb\nc\n"
	require.Equal(t, log, tailLines(log, 0))
	require.Equal(t, "c\n", tailLines(log, 1))
	require.Equal(t, "b\nc\n", tailLines(log, 2))
	require.Equal(t, log, tailLines(log, 10))
	require.Equal(t, "c", tailLines("a\nb\nc", 1))
}

func TestCopyChunks(t *testing.T) {
	var got []string
	err := copyChunks(strings.NewReader("hello"), func(b []byte) error { got = append(got, string(b)); return nil })
	require.NoError(t, err)
	require.Equal(t, []string{"hello"}, got)
	err = copyChunks(io.MultiReader(strings.NewReader("x"), errReader{}), func([]byte) error { return nil })
	require.EqualError(t, err, "connection reset", "GetJobLogs turns it into UNAVAILABLE (logsError)")

	srv := NewJobServer(Deps{})
	err = srv.logsError(context.Background(), "a", "j-worker-0", "log stream ended", err)
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.NotContains(t, status.Convert(err).Message(), "connection reset")
	gone := status.Error(codes.Canceled, "client went away")
	require.Equal(t, gone, srv.logsError(context.Background(), "a", "j-worker-0", "log stream ended", gone), "a failed send passes as it is")
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestPickReplica(t *testing.T) {
	j := job.Job{
		Name: "mnist",
		Spec: job.Spec{Replicas: []job.ReplicaSpec{{Type: job.Chief, Count: 1}, {Type: job.Worker, Count: 2}}},
		Status: job.Status{Replicas: []job.ReplicaStatus{
			{Type: job.Chief, Index: 0, Pod: "mnist-chief-0"},
			{Type: job.Worker, Index: 0, Pod: "mnist-worker-0"},
		}},
	}
	r, err := pickReplica(j, "")
	require.NoError(t, err)
	require.Equal(t, "mnist-chief-0", r.Pod, "the chief by default")
	r, err = pickReplica(j, "worker-1")
	require.NoError(t, err)
	require.Equal(t, job.ReplicaStatus{Type: job.Worker, Index: 1}, r, "declared, not started")
	_, err = pickReplica(j, "worker-2")
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = pickReplica(j, "gpu-0")
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}
