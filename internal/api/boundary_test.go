package api

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Every string a request carries to Postgres or Kubernetes is refused with
// a NUL byte, at its field: display names, commands, env values, pod
// annotations, labels (keys too), filters, member subjects.
func TestTextBoundary(t *testing.T) {
	const nul = "a\x00b"
	for _, c := range []struct {
		req    proto.Message
		fields []string
	}{
		{&pb.CreateJobRequest{Parent: "tenants/t", Job: &pb.Job{DisplayName: nul, Labels: map[string]string{nul: "x", "k": nul},
			Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Command: []string{"python", nul}, PodAnnotations: map[string]string{"k": nul},
				Env: []*pb.EnvVar{{Name: "A", Source: &pb.EnvVar_Value{Value: nul}}}}}}}},
			[]string{"job.displayName", "job.labels", "job.labels", "job.spec.replicas[0].command[1]", "job.spec.replicas[0].env[0].value", "job.spec.replicas[0].podAnnotations"}},
		{&pb.ListJobsRequest{Parent: "tenants/t", Filter: `labels.a = "` + nul + `"`}, []string{"filter"}},
		{&pb.CreateTenantRequest{TenantId: "t", Tenant: &pb.Tenant{Members: []*pb.Member{{Principal: &pb.Member_Subject{Subject: nul}}}}},
			[]string{"tenant.members[0].subject"}},
		{&pb.CreateJobRequest{Parent: "tenants/t", RequestId: nul}, []string{"requestId"}},
		{&pb.BatchCreateJobsRequest{Parent: "tenants/t", Requests: []*pb.CreateJobRequest{
			{Job: &pb.Job{Labels: map[string]string{"a": "b"}, Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Command: []string{"python"}}}}}},
			{JobId: "j", Job: &pb.Job{DisplayName: nul}},
		}}, []string{"requests[1].job.displayName"}},
	} {
		vs := textViolations(c.req)
		var got []string
		for _, v := range vs {
			got = append(got, v.Field)
			require.Contains(t, v.Description, "NUL")
			require.NotContains(t, v.Description, "\x00")
		}
		require.ElementsMatch(t, c.fields, got, "%v", c.req)
	}

	// Left to others: names (resname makes a bad id NOT_FOUND) and secret
	// values (bytes for Kubernetes).
	require.Empty(t, textViolations(&pb.GetJobRequest{Name: "tenants/t/jobs/" + nul}))
	require.Empty(t, textViolations(&pb.PutSecretRequest{Secret: &pb.Secret{Name: "tenants/t/secrets/s", Data: map[string]string{"k": nul}}}))
	require.Len(t, textViolations(&pb.PutSecretRequest{Secret: &pb.Secret{Data: map[string]string{nul: "v"}}}), 1, "keys are checked")
}

// The walk of a batch of 1,000 jobs, which every BatchCreateJobs pays
// before its handler runs.
func BenchmarkTextViolations(b *testing.B) {
	req := &pb.BatchCreateJobsRequest{Parent: "tenants/t"}
	for i := range 1000 {
		rep := func(t pb.ReplicaType, n int32) *pb.ReplicaSpec {
			return &pb.ReplicaSpec{Type: t, Count: n, Image: "tensorflow/tensorflow:2.16.1", Command: []string{"python", "/app/train.py"},
				Env: []*pb.EnvVar{{Name: "EPOCHS", Source: &pb.EnvVar_Value{Value: "10"}}}, Resources: &pb.Resources{Cpu: "1", Memory: "2Gi"}}
		}
		req.Requests = append(req.Requests, &pb.CreateJobRequest{JobId: fmt.Sprintf("j-%d", i), RequestId: fmt.Sprintf("r-%d", i), Job: &pb.Job{
			Labels: map[string]string{"team": "vision"},
			Spec:   &pb.JobSpec{Replicas: []*pb.ReplicaSpec{rep(pb.ReplicaType_REPLICA_TYPE_CHIEF, 1), rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 4)}},
		}})
	}
	b.ReportAllocs()
	for b.Loop() {
		if vs := textViolations(req); len(vs) > 0 {
			b.Fatal(vs)
		}
	}
}

// The whole check of the store bench's CreateJob (issue 47): the walk,
// and the wire encoding that lets a request without a zero byte skip it.
func BenchmarkCheckTextCreateJob(b *testing.B) {
	rep := func(t pb.ReplicaType, n int32) *pb.ReplicaSpec {
		return &pb.ReplicaSpec{Type: t, Count: n, Image: "tensorflow/tensorflow:2.16.1", Command: []string{"python", "/app/train.py"},
			Resources: &pb.Resources{Cpu: "10m", Memory: "64Mi"}}
	}
	req := &pb.CreateJobRequest{Parent: "tenants/bench", JobId: "api-0000001", Job: &pb.Job{
		Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{rep(pb.ReplicaType_REPLICA_TYPE_CHIEF, 1), rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 4)}},
	}}
	b.Run("walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if vs := textViolations(req); len(vs) > 0 {
				b.Fatal(vs)
			}
		}
	})
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := checkText(req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestTextBoundaryIsBounded(t *testing.T) {
	cmd := make([]string, 100000)
	for i := range cmd {
		cmd[i] = "\x00"
	}
	vs := textViolations(&pb.CreateJobRequest{Job: &pb.Job{Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Command: cmd}}}}})
	require.Len(t, vs, maxViolations+1)
	details := badRequest(t, invalid(vs...))
	require.Len(t, details.GetFieldViolations(), maxViolations+1)
	require.Contains(t, details.GetFieldViolations()[maxViolations].GetDescription(), "more problems")
}

// checkText lets a request without a zero byte in its encoding skip the
// walk; one whose string holds a NUL is still refused, naming the field.
func TestCheckTextSkipsOnlyWithoutZeroBytes(t *testing.T) {
	require.NoError(t, checkText(&pb.CreateJobRequest{Parent: "tenants/t", Job: &pb.Job{DisplayName: "fine"}}))
	require.NoError(t, checkText(&pb.ListJobsRequest{Parent: "tenants/t", PageSize: 0}), "zero values are left out")
	err := checkText(&pb.CreateJobRequest{Parent: "tenants/t", Job: &pb.Job{DisplayName: "a\x00b"}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, err.Error(), "job.displayName")
	// A zero byte elsewhere (256 is 0x80 0x02, no zero; a 0 in a list is)
	// makes the walk run; it finds nothing.
	require.NoError(t, checkText(&pb.CreateJobRequest{Parent: "tenants/t", Job: &pb.Job{Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Count: 256, Command: []string{""}}}}}}))
}
