package api

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func batchOf(n int) []*pb.CreateJobRequest {
	reqs := make([]*pb.CreateJobRequest, n)
	for i := range reqs {
		reqs[i] = &pb.CreateJobRequest{JobId: fmt.Sprintf("j%d", i), RequestId: fmt.Sprintf("r%d", i), Job: oneWorker(0)}
	}
	return reqs
}

// Every problem of every item comes back in one INVALID_ARGUMENT, each
// field under its item's index; nothing is written.
func TestBatchCreateJobsViolationsByItem(t *testing.T) {
	tests := []struct {
		name   string
		edit   func([]*pb.CreateJobRequest)
		n      int
		fields []string
	}{
		{name: "empty", n: 0, fields: []string{"requests"}},
		{name: "too many", n: 1001, fields: []string{"requests"}},
		{name: "a bad image and a bad id", n: 3, edit: func(r []*pb.CreateJobRequest) {
			r[1].Job.Spec.Replicas[0].Image = ""
			r[2].JobId = "Not_A_Label"
		}, fields: []string{"requests[1].spec.replicas[0].image", "requests[2].jobId"}},
		{name: "no job", n: 2, edit: func(r []*pb.CreateJobRequest) { r[1].Job = nil }, fields: []string{"requests[1].job"}},
		{name: "an id twice", n: 3, edit: func(r []*pb.CreateJobRequest) { r[2].JobId = "j0" }, fields: []string{"requests[2].jobId"}},
		{name: "a request id twice", n: 3, edit: func(r []*pb.CreateJobRequest) { r[2].RequestId = "r1" }, fields: []string{"requests[2].requestId"}},
		{name: "a bad request id", n: 2, edit: func(r []*pb.CreateJobRequest) { r[0].RequestId = "no spaces" }, fields: []string{"requests[0].requestId"}},
		{name: "another parent", n: 2, edit: func(r []*pb.CreateJobRequest) { r[1].Parent = "tenants/b" }, fields: []string{"requests[1].parent"}},
		{name: "a missing secret", n: 2, edit: func(r []*pb.CreateJobRequest) {
			r[1].Job.Spec.Replicas[0].SecretVolumes = []*pb.SecretVolume{{Secret: "gcs", MountPath: "/gcs"}}
		}, fields: []string{"requests[1].spec.replicas[0].secretVolumes[0].secret"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newFakeStore()
			st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active}
			srv := NewJobServer(Deps{Store: st})
			reqs := batchOf(tc.n)
			if tc.edit != nil {
				tc.edit(reqs)
			}
			_, err := srv.BatchCreateJobs(context.Background(), &pb.BatchCreateJobsRequest{Parent: "tenants/a", Requests: reqs})
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			var got []string
			for _, v := range badRequest(t, err).GetFieldViolations() {
				got = append(got, v.GetField())
			}
			require.Equal(t, tc.fields, got)
			require.Zero(t, st.count("JobCreateMany"), "nothing written")
		})
	}
}

// Request ids seen before return their jobs unvalidated; the others are
// created in one store call, in the order of the requests; the tenant and
// its secrets are read once for the batch.
func TestBatchCreateJobsReplaysAndOneWrite(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active, Quota: tenant.Quota{GPU: 4}}
	st.secrets["a/hf"] = tenant.Secret{Tenant: "a", Name: "hf", Keys: []string{"token"}}
	srv := NewJobServer(Deps{Store: st})
	ctx := context.Background()
	reqs := batchOf(4)
	for _, r := range reqs {
		r.Job.Spec.Replicas[0].SecretVolumes = []*pb.SecretVolume{{Secret: "hf", MountPath: "/hf"}}
	}
	first, err := srv.BatchCreateJobs(ctx, &pb.BatchCreateJobsRequest{Parent: "tenants/a", Requests: reqs[:2]})
	require.NoError(t, err)
	require.Len(t, first.GetJobs(), 2)
	require.Equal(t, 1, st.count("SecretList"))

	reqs[0].Job.Spec.Replicas[0].Image = "" // a replay is not validated again
	again, err := srv.BatchCreateJobs(ctx, &pb.BatchCreateJobsRequest{Parent: "tenants/a", Requests: reqs})
	require.NoError(t, err)
	require.Len(t, again.GetJobs(), 4)
	for i, j := range again.GetJobs() {
		require.Equal(t, fmt.Sprintf("tenants/a/jobs/j%d", i), j.GetName(), "in request order")
	}
	require.Equal(t, first.GetJobs()[0].GetUid(), again.GetJobs()[0].GetUid())
	require.Equal(t, first.GetJobs()[1].GetUid(), again.GetJobs()[1].GetUid())
	require.Len(t, st.jobs, 4, "two replays, two new jobs")
	require.Equal(t, 2, st.count("JobCreateMany"))
	require.Equal(t, 2, st.count("JobGetByRequestIDs"), "one lookup per batch")
	require.Equal(t, 2, st.count("SecretList"), "one secrets read per batch")

	// Over quota: the item is named.
	over := batchOf(2)
	over[1].JobId, over[1].RequestId = "big", "big"
	over[1].Job.Spec.Replicas[0].Resources.Gpu = 8
	_, err = srv.BatchCreateJobs(ctx, &pb.BatchCreateJobsRequest{Parent: "tenants/a", Requests: over[1:]})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "requests[0]: the job needs more than")

	// A replay of a deleted job is NOT_FOUND for its item.
	st.deleted[first.GetJobs()[1].GetUid()] = true
	_, err = srv.BatchCreateJobs(ctx, &pb.BatchCreateJobsRequest{Parent: "tenants/a", Requests: reqs[1:2]})
	require.Equal(t, codes.NotFound, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "requests[0].requestId")
}
