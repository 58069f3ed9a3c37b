package api

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestParseJobFile(t *testing.T) {
	srv, st := importServer()
	ctx := context.Background()
	resp, err := srv.ParseJobFile(ctx, &pb.ParseJobFileRequest{Parent: "tenants/a", Content: `
name: lr-1
spec:
  replicas: [{type: worker, count: 2, image: tf, resources: {cpu: 2}}]
  runPolicy: {backoff_limit: 3}
---
# a comment only: not a job
---
{"spec": {"replicas": [{"type": "CHIEF", "image": "tf"}]}}
`})
	require.NoError(t, err)
	require.Len(t, resp.GetJobs(), 2)
	first := resp.GetJobs()[0]
	require.Equal(t, "lr-1", first.GetName(), "the name as written, for the client to use as the job id")
	require.Equal(t, pb.ReplicaType_REPLICA_TYPE_WORKER, first.GetSpec().GetReplicas()[0].GetType())
	require.Equal(t, "2", first.GetSpec().GetReplicas()[0].GetResources().GetCpu())
	require.EqualValues(t, 3, first.GetSpec().GetRunPolicy().GetBackoffLimit())
	require.Equal(t, pb.ReplicaType_REPLICA_TYPE_CHIEF, resp.GetJobs()[1].GetSpec().GetReplicas()[0].GetType())
	require.Empty(t, st.jobs, "parsing creates nothing")
}

func TestParseJobFileViolationsNameTheDocument(t *testing.T) {
	srv, _ := importServer()
	ctx := context.Background()
	_, err := srv.ParseJobFile(ctx, &pb.ParseJobFileRequest{Parent: "tenants/a", Content: `
spec: {replicas: [{type: worker, image: tf}]}
---
spec:
  replicas: [{type: wrker, imagee: tf}]
`})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	got := map[string]string{}
	for _, v := range badRequest(t, err).GetFieldViolations() {
		got[v.GetField()] = v.GetDescription()
	}
	require.Equal(t, map[string]string{
		"documents[1].spec.replicas[0].imagee": "unknown field (did you mean image?)",
		"documents[1].spec.replicas[0].type":   `"wrker" is not one of CHIEF, WORKER, PS, EVALUATOR`,
	}, got)

	_, err = srv.ParseJobFile(ctx, &pb.ParseJobFileRequest{Parent: "tenants/a", Content: "# nothing\n", Filename: "sweep.yaml"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, "sweep.yaml: content: the file is empty (it holds no job, only comments or blank lines)", status.Convert(err).Message())
	require.Equal(t, "content", badRequest(t, err).GetFieldViolations()[0].GetField())

	_, err = srv.ParseJobFile(ctx, &pb.ParseJobFileRequest{Parent: "nope", Content: "spec: {}\n"})
	require.Error(t, err)
}
