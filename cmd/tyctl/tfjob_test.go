package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/document"
	"github.com/trainyard/trainyard/internal/jobfile"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// ImportTFJob of the fake: refuses unless warnings are allowed when the
// TFJob's name is "refused"; otherwise returns a job of one worker and a
// note.
func (f *fakeJobs) ImportTFJob(ctx context.Context, req *pb.ImportTFJobRequest) (*pb.ImportTFJobResponse, error) {
	f.record(ctx, "ImportTFJob", req)
	name := req.GetTfjob().GetFields()["metadata"].GetStructValue().GetFields()["name"].GetStringValue()
	warnings := []*pb.ImportWarning{{Field: "metadata.namespace", Description: "the job runs in its tenant's namespace"}}
	if name == "refused" {
		if !req.GetAllowWarnings() {
			st, _ := status.New(codes.InvalidArgument, "tfjob.spec.enableDynamicWorker: not supported").WithDetails(&errdetails.BadRequest{
				FieldViolations: []*errdetails.BadRequest_FieldViolation{
					{Field: "tfjob.spec.enableDynamicWorker", Description: "Trainyard runs a fixed set of workers"},
					{Field: "allowWarnings", Description: "is false"},
				}})
			return nil, st.Err()
		}
		warnings = append(warnings, &pb.ImportWarning{Field: "spec.enableDynamicWorker", Description: "Trainyard runs a fixed set of workers", Unsupported: true})
	}
	if req.GetJobId() != "" {
		name = req.GetJobId()
	}
	return &pb.ImportTFJobResponse{
		Job: &pb.Job{Name: req.GetParent() + "/jobs/" + name, Status: &pb.JobStatus{State: pb.JobState_JOB_STATE_QUEUED},
			Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 2, Image: "tf:2"}}}},
		Warnings: warnings,
	}, nil
}

const tfjobFile = "testdata/tfjob.yaml"

func TestSubmitDetectsATFJob(t *testing.T) {
	f := startFake(t)
	env := map[string]string{envToken: testToken, envTenant: "ml"}
	r := f.tyctl(t, env, "jobs", "submit", "-f", tfjobFile)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "job mnist submitted from TFJob (QUEUED)\n", r.stdout)
	require.Contains(t, r.stderr, "note: metadata.namespace: the job runs in its tenant's namespace\n")
	require.Empty(t, f.rec.methodCalls("CreateJob"))
	calls := f.rec.methodCalls("ImportTFJob")
	require.Len(t, calls, 1)
	req := calls[0].req.(*pb.ImportTFJobRequest)
	require.Equal(t, "tenants/ml", req.GetParent())
	require.Equal(t, "TFJob", req.GetTfjob().GetFields()["kind"].GetStringValue(), "the manifest goes as it is")
	require.NotEmpty(t, req.GetRequestId())
	require.False(t, req.GetAllowWarnings())
	require.False(t, req.GetValidateOnly())
}

func TestSubmitTFJobRefusedThenAllowed(t *testing.T) {
	f := startFake(t)
	env := map[string]string{envToken: testToken, envTenant: "ml"}
	r := f.tyctl(t, env, "jobs", "submit", "-f", "testdata/tfjob-refused.yaml")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "tfjob.spec.enableDynamicWorker")

	r = f.tyctl(t, env, "jobs", "submit", "-f", "testdata/tfjob-refused.yaml", "--allow-warnings", "--id", "mine")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "warning: spec.enableDynamicWorker: Trainyard runs a fixed set of workers\n")
	require.Equal(t, "job mine submitted from TFJob (QUEUED)\n", r.stdout)
}

func TestSubmitOtherKubeflowKindIsAnError(t *testing.T) {
	f := startFake(t)
	r := f.tyctl(t, map[string]string{envTenant: "ml"}, "jobs", "submit", "-f", "../../internal/tfjob/testdata/pytorchjob.yaml")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "kind PyTorchJob")
	require.Empty(t, f.rec.calls, "nothing is sent")
}

func TestConvertTFJobPrintsAJobFile(t *testing.T) {
	f := startFake(t)
	env := map[string]string{envToken: testToken, envTenant: "ml"}
	r := f.tyctl(t, env, "convert", "tfjob", "-f", tfjobFile)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "# Converted from a Kubeflow TFJob; submit it with: tyctl jobs submit -f FILE --id mnist\n")
	require.Contains(t, r.stdout, "type: REPLICA_TYPE_WORKER")
	require.NotContains(t, r.stdout, "status", "a job file, not the job")
	req := f.rec.methodCalls("ImportTFJob")[0].req.(*pb.ImportTFJobRequest)
	require.True(t, req.GetValidateOnly(), "convert creates nothing")
	require.Empty(t, req.GetRequestId())

	// The output is a job file jobs submit takes.
	jobs, err := jobfile.Parse([]byte(r.stdout), document.Limits{})
	require.NoError(t, err)
	require.Equal(t, int32(2), jobs[0].GetSpec().GetReplicas()[0].GetCount())
}
