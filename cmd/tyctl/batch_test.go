package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func (f *fakeJobs) BatchCreateJobs(ctx context.Context, req *pb.BatchCreateJobsRequest) (*pb.BatchCreateJobsResponse, error) {
	f.record(ctx, "BatchCreateJobs", req)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.createErrs) > 0 {
		err := f.createErrs[0]
		f.createErrs = f.createErrs[1:]
		return nil, err
	}
	resp := &pb.BatchCreateJobsResponse{}
	for _, r := range req.GetRequests() {
		j := proto.Clone(r.GetJob()).(*pb.Job)
		j.Name = req.GetParent() + "/jobs/" + r.GetJobId()
		j.Status = &pb.JobStatus{State: pb.JobState_JOB_STATE_QUEUED}
		resp.Jobs = append(resp.Jobs, j)
	}
	return resp, nil
}

const smallJob = "spec:\n  replicas:\n  - type: WORKER\n    image: tf\n"

// A directory of job files, one of them several documents, is one batch:
// ids from the documents' names, request ids "<id>-<n>" in document order.
func TestSubmitDirectoryIsOneBatch(t *testing.T) {
	f := startFake(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("name: a0\n"+smallJob+"---\n# nothing\n---\nname: tenants/ml/jobs/a1\n"+smallJob), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.json"), []byte(`{"name": "b0", "spec": {"replicas": [{"type": "CHIEF", "image": "tf"}]}}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a job"), 0o600))

	r := f.tyctl(t, nil, "--tenant", "ml", "--token", testToken, "jobs", "submit", "-f", dir, "--request-id", "sweep")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "job a0 submitted (QUEUED)\njob a1 submitted (QUEUED)\njob b0 submitted (QUEUED)\n", r.stdout)
	calls := f.rec.methodCalls("BatchCreateJobs")
	require.Len(t, calls, 1)
	require.Empty(t, f.rec.methodCalls("CreateJob"))
	req := calls[0].req.(*pb.BatchCreateJobsRequest)
	require.Equal(t, "tenants/ml", req.GetParent())
	var ids, rids []string
	for _, it := range req.GetRequests() {
		ids, rids = append(ids, it.GetJobId()), append(rids, it.GetRequestId())
		require.Empty(t, it.GetJob().GetName(), "the name travels as the job id")
	}
	require.Equal(t, []string{"a0", "a1", "b0"}, ids)
	require.Equal(t, []string{"sweep-0", "sweep-1", "sweep-2"}, rids)

	r = f.tyctl(t, nil, "--tenant", "ml", "jobs", "submit", "-f", dir, "--id", "x")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "--id names one job")
}

// More than 1,000 documents take several calls; the server's item indexes
// come back as the documents they are.
func TestSubmitManyDocumentsInChunksAndNamesTheDocument(t *testing.T) {
	f := startFake(t)
	path := filepath.Join(t.TempDir(), "many.yaml")
	var data []byte
	for i := range 1500 {
		data = append(data, fmt.Sprintf("---\nname: j%d\n%s", i, smallJob)...)
	}
	require.NoError(t, os.WriteFile(path, data, 0o600))
	r := f.tyctl(t, nil, "--tenant", "ml", "jobs", "submit", "-f", path, "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	calls := f.rec.methodCalls("BatchCreateJobs")
	require.Len(t, calls, 2)
	require.Len(t, calls[0].req.(*pb.BatchCreateJobsRequest).GetRequests(), 1000)
	second := calls[1].req.(*pb.BatchCreateJobsRequest).GetRequests()
	require.Len(t, second, 500)
	require.Regexp(t, `-1000$`, second[0].GetRequestId(), "request ids count documents, not calls")

	st, err := status.New(codes.InvalidArgument, "requests[3].spec.replicas[0].image: is required").
		WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "requests[3].spec.replicas[0].image", Description: "is required"}}})
	require.NoError(t, err)
	f.jobs.createErrs = []error{nil, st.Err()}[1:]
	r = f.tyctl(t, nil, "--tenant", "ml", "jobs", "submit", "-f", path, "--request-id", "r")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "tyctl: InvalidArgument: "+path+"#3: spec.replicas[0].image: is required\n")
	require.Contains(t, r.stderr, "  "+path+"#3: spec.replicas[0].image: is required\n")
}
