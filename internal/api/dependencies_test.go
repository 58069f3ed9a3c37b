package api

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func dependsOn(j *pb.Job, name string, c pb.DependencyCondition) *pb.Job {
	j.Spec.DependsOn = append(j.Spec.DependsOn, &pb.JobDependency{Job: name, Condition: c})
	return j
}

// A chain in one batch: each item's dependency on an earlier item gets
// that item's uid; one on an existing job gets its uid.
func TestBatchCreateJobsChain(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active}
	srv := NewJobServer(Deps{Store: st})
	ctx := context.Background()
	_, err := srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", JobId: "build", Job: oneWorker(0)})
	require.NoError(t, err)

	reqs := []*pb.CreateJobRequest{
		{JobId: "prep", Job: dependsOn(oneWorker(0), "build", pb.DependencyCondition_DEPENDENCY_CONDITION_UNSPECIFIED)},
		{JobId: "train", Job: dependsOn(oneWorker(0), "prep", pb.DependencyCondition_DEPENDENCY_CONDITION_SUCCEEDED)},
		{JobId: "eval", Job: dependsOn(oneWorker(0), "train", pb.DependencyCondition_DEPENDENCY_CONDITION_STARTED)},
	}
	reqs[2].Job.Spec.OnDependencyFailure = pb.OnDependencyFailure_ON_DEPENDENCY_FAILURE_CANCEL
	out, err := srv.BatchCreateJobs(ctx, &pb.BatchCreateJobsRequest{Parent: "tenants/a", Requests: reqs})
	require.NoError(t, err)
	jobs := out.GetJobs()
	require.Equal(t, st.jobs[0].UID, jobs[0].GetSpec().GetDependsOn()[0].GetJobUid())
	require.Equal(t, jobs[0].GetUid(), jobs[1].GetSpec().GetDependsOn()[0].GetJobUid())
	require.Equal(t, jobs[1].GetUid(), jobs[2].GetSpec().GetDependsOn()[0].GetJobUid())
	require.Equal(t, pb.DependencyCondition_DEPENDENCY_CONDITION_SUCCEEDED, jobs[0].GetSpec().GetDependsOn()[0].GetCondition(), "defaulted")
	require.Equal(t, pb.DependencyCondition_DEPENDENCY_CONDITION_STARTED, jobs[2].GetSpec().GetDependsOn()[0].GetCondition())
	require.Equal(t, pb.OnDependencyFailure_ON_DEPENDENCY_FAILURE_FAIL, jobs[1].GetSpec().GetOnDependencyFailure())
	require.Equal(t, pb.OnDependencyFailure_ON_DEPENDENCY_FAILURE_CANCEL, jobs[2].GetSpec().GetOnDependencyFailure())
	require.Equal(t, 1, st.count("JobUIDsByName"), "one read per batch")
}

func TestCreateJobDependencyViolations(t *testing.T) {
	tests := []struct {
		name   string
		reqs   []*pb.CreateJobRequest
		fields []string
		desc   string
	}{
		{name: "no such job", reqs: []*pb.CreateJobRequest{
			{JobId: "train", Job: dependsOn(oneWorker(0), "prep", 0)},
		}, fields: []string{"requests[0].spec.dependsOn[0].job"}, desc: `no job "prep" in tenant "a"`},
		{name: "later in the batch", reqs: []*pb.CreateJobRequest{
			{JobId: "train", Job: dependsOn(oneWorker(0), "prep", 0)},
			{JobId: "prep", Job: oneWorker(0)},
		}, fields: []string{"requests[0].spec.dependsOn[0].job"}, desc: "comes later in this batch"},
		{name: "itself", reqs: []*pb.CreateJobRequest{
			{JobId: "loop", Job: dependsOn(oneWorker(0), "loop", 0)},
		}, fields: []string{"requests[0].spec.dependsOn[0].job"}, desc: "itself"},
		{name: "unknown condition", reqs: []*pb.CreateJobRequest{
			{JobId: "prep", Job: oneWorker(0)},
			{JobId: "train", Job: dependsOn(oneWorker(0), "prep", 9)},
		}, fields: []string{"requests[1].spec.dependsOn[0].condition"}, desc: `"9" is not a condition`},
		{name: "another tenant's job", reqs: []*pb.CreateJobRequest{
			{JobId: "train", Job: dependsOn(oneWorker(0), "theirs", 0)},
		}, fields: []string{"requests[0].spec.dependsOn[0].job"}, desc: "no job"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newFakeStore()
			st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active}
			st.jobs = append(st.jobs, job.Job{Tenant: "b", Name: "theirs", UID: "uid-b"})
			srv := NewJobServer(Deps{Store: st})
			_, err := srv.BatchCreateJobs(context.Background(), &pb.BatchCreateJobsRequest{Parent: "tenants/a", Requests: tc.reqs})
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			var got []string
			for _, v := range badRequest(t, err).GetFieldViolations() {
				got = append(got, v.GetField())
				require.Contains(t, v.GetDescription(), tc.desc)
			}
			require.Equal(t, tc.fields, got)
			require.Zero(t, st.count("JobCreateMany"), "nothing written")
		})
	}
	// CreateJob names the field without a prefix.
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active}
	_, err := NewJobServer(Deps{Store: st}).CreateJob(context.Background(), &pb.CreateJobRequest{
		Parent: "tenants/a", JobId: "train", Job: dependsOn(oneWorker(0), "prep", 0)})
	require.Equal(t, "spec.dependsOn[0].job", badRequest(t, err).GetFieldViolations()[0].GetField())
}

func TestDependencyResultsToPB(t *testing.T) {
	now := time.Now()
	st := job.Status{State: job.Queued, Replicas: []job.ReplicaStatus{{Type: job.Chief, LastTermination: &job.Termination{Message: "model=s3://m/1", FinishTime: now}}},
		Dependencies: []job.DependencyResult{{Job: "prep", UID: "u", Condition: job.DependsFinished, State: job.Failed,
			ExitCodes: map[string]int32{"worker-0": 3}, Outputs: map[string]string{"rows": "10"}}}}
	out := statusToPB(st)
	require.Equal(t, map[string]string{"model": "s3://m/1"}, out.GetOutputs())
	d := out.GetDependencies()[0]
	require.Equal(t, "prep", d.GetJob())
	require.Equal(t, pb.JobState_JOB_STATE_FAILED, d.GetState())
	require.Equal(t, pb.DependencyCondition_DEPENDENCY_CONDITION_FINISHED, d.GetCondition())
	require.Equal(t, int32(3), d.GetExitCodes()["worker-0"])
	require.Equal(t, "10", d.GetOutputs()["rows"])
}
