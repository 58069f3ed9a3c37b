package api

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// A retried create finds its first job before anything is validated: not
// the quota that shrank since, not even a body that is no longer valid.
func TestCreateJobReplayReturnsFirstJob(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "ty-a", State: tenant.Active, Quota: tenant.Quota{GPU: 8}}
	srv := NewJobServer(Deps{Store: st})
	ctx := context.Background()

	first, err := srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", JobId: "j1", RequestId: "r1", Job: oneWorker(4)})
	require.NoError(t, err)

	st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "ty-a", State: tenant.Active, Quota: tenant.Quota{GPU: 1}}
	again, err := srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", JobId: "j1", RequestId: "r1", Job: oneWorker(4)})
	require.NoError(t, err)
	require.Equal(t, first.GetUid(), again.GetUid())
	again, err = srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", RequestId: "r1"})
	require.NoError(t, err, "no body at all: still the first job")
	require.Equal(t, first.GetUid(), again.GetUid())
	require.Equal(t, 1, st.count("JobCreate"))

	// A new request is checked against the new quota.
	_, err = srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", RequestId: "r2", Job: oneWorker(4)})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))

	// The first job deleted: NOT_FOUND, and no second job.
	st.deleted[first.GetUid()] = true
	_, err = srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", JobId: "j1", RequestId: "r1", Job: oneWorker(1)})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, 1, st.count("JobCreate"))

	_, err = srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", RequestId: "bad id!", Job: oneWorker(1)})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, 5, st.count("JobGetByRequestID"), "a malformed request id is not looked up")
}

// The authorizer loaded the tenant already: CreateJob uses that one.
func TestCreateJobUsesTheAuthorizedTenant(t *testing.T) {
	st := newFakeStore()
	srv := NewJobServer(Deps{Store: st})
	ctx := auth.WithAccess(context.Background(), auth.Access{TenantID: "a",
		Tenant: tenant.Tenant{ID: "a", State: tenant.Active, Quota: tenant.Quota{GPU: 2}}})
	_, err := srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", Job: oneWorker(1)})
	require.NoError(t, err)
	_, err = srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", Job: oneWorker(3)})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "the quota of the authorized tenant applies")
	require.Zero(t, st.count("TenantGet"))
	require.Zero(t, st.count("SecretList"), "no secret referenced, no secret read")
	require.Zero(t, st.count("JobGetByRequestID"), "no request id, no lookup")
}

func TestCreateJobChecksSecretsAndKeysInOneRead(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active}
	st.secrets["a/hf"] = tenant.Secret{Tenant: "a", Name: "hf", Keys: []string{"token", "user"}}
	srv := NewJobServer(Deps{Store: st})
	j := oneWorker(0)
	j.Spec.Replicas[0].Env = []*pb.EnvVar{
		{Name: "OK", Source: &pb.EnvVar_Secret{Secret: &pb.SecretKeyRef{Secret: "hf", Key: "token"}}},
		{Name: "NOKEY", Source: &pb.EnvVar_Secret{Secret: &pb.SecretKeyRef{Secret: "hf", Key: "password"}}},
		{Name: "NOSECRET", Source: &pb.EnvVar_Secret{Secret: &pb.SecretKeyRef{Secret: "aws", Key: "id"}}},
	}
	j.Spec.Replicas[0].SecretVolumes = []*pb.SecretVolume{{Secret: "hf", MountPath: "/hf"}, {Secret: "gcs", MountPath: "/gcs"}}
	_, err := srv.CreateJob(context.Background(), &pb.CreateJobRequest{Parent: "tenants/a", Job: j})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	got := map[string]string{}
	for _, v := range badRequest(t, err).GetFieldViolations() {
		got[v.GetField()] = v.GetDescription()
	}
	require.Len(t, got, 3, "%v", got)
	require.Contains(t, got["spec.replicas[0].env[1].secret.key"], `has no key "password" (it has: token, user)`)
	require.Contains(t, got["spec.replicas[0].env[2].secret.secret"], `secret "aws" does not exist`)
	require.Contains(t, got["spec.replicas[0].secretVolumes[1].secret"], `secret "gcs" does not exist`)
	require.Equal(t, 1, st.count("SecretList"))
	require.Zero(t, st.count("SecretGet"))
	require.Zero(t, st.count("JobCreate"))
}

func TestListJobEventsIsOneRead(t *testing.T) {
	st := newFakeStore()
	st.events = []job.Event{{ID: 1, Tenant: "a", Job: "j", JobUID: "u1", Reason: "Queued"}}
	srv := NewJobServer(Deps{Store: st})
	resp, err := srv.ListJobEvents(context.Background(), &pb.ListJobEventsRequest{Parent: "tenants/a/jobs/j"})
	require.NoError(t, err)
	require.Len(t, resp.GetEvents(), 1)
	_, err = srv.ListJobEvents(context.Background(), &pb.ListJobEventsRequest{Parent: "tenants/a/jobs/nope"})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Zero(t, st.count("JobGet"))
}

// GetJob gives each replica the TF_CONFIG its pod gets (job.TFConfig, in
// the tenant's namespace); lists leave it out.
func TestGetJobCarriesEachReplicasTFConfig(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "ty-a", State: tenant.Active}
	srv := NewJobServer(Deps{Store: st, NamespacePrefix: "ty-"})
	ctx := context.Background()
	_, err := srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", JobId: "j1", Job: oneWorker(0)})
	require.NoError(t, err)
	st.jobs[0].Spec.Replicas[0].Count = 2
	st.jobs[0].Status.Replicas = []job.ReplicaStatus{{Type: job.Worker, Index: 0}, {Type: job.Worker, Index: 1}}

	got, err := srv.GetJob(ctx, &pb.GetJobRequest{Name: "tenants/a/jobs/j1"})
	require.NoError(t, err)
	for i, r := range got.GetStatus().GetReplicas() {
		want, ok := job.TFConfig("j1", "ty-a", st.jobs[0].Spec, job.Worker, int32(i))
		require.True(t, ok)
		require.Equal(t, want, r.GetTfConfig())
	}
	list, err := srv.ListJobs(ctx, &pb.ListJobsRequest{Parent: "tenants/a"})
	require.NoError(t, err)
	for _, j := range list.GetJobs() {
		for _, r := range j.GetStatus().GetReplicas() {
			require.Empty(t, r.GetTfConfig())
		}
	}
}
