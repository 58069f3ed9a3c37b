package main

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/api"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// acceptingStore is just enough of the store for CreateJob to get past
// the request id lookup, validation, secret checks and the quota check to
// the insert. Any other
// method panics on the nil embedded interface: the test must not need it.
type acceptingStore struct {
	api.Store
	created *job.Job
	batch   []job.Job
}

func (s *acceptingStore) TenantGet(_ context.Context, id string) (tenant.Tenant, error) {
	return tenant.Tenant{ID: id, Quota: tenant.Quota{GPU: 8, CPU: "64", Memory: "256Gi", Pods: 32}}, nil
}

func (s *acceptingStore) JobGetByRequestID(context.Context, string, string) (job.Job, bool, error) {
	return job.Job{}, false, nil
}

func (s *acceptingStore) SecretList(context.Context, string) ([]tenant.Secret, error) {
	return nil, nil
}

func (s *acceptingStore) JobCreate(_ context.Context, p store.JobCreateParams) (job.Job, bool, error) {
	s.created = &p.Job
	return p.Job, true, nil
}

// TestExampleAcceptedByServer runs examples/mnist.yaml through the real
// ParseJobFile and CreateJob handlers (conversion, defaults, validation, quota), so the
// example cannot drift from what the server accepts.
func TestExampleAcceptedByServer(t *testing.T) {
	data, err := os.ReadFile("examples/mnist.yaml")
	require.NoError(t, err)
	st := &acceptingStore{}
	srv := api.NewJobServer(api.Deps{Store: st})
	parsed, err := srv.ParseJobFile(context.Background(), &pb.ParseJobFileRequest{Parent: "tenants/ml-team", Content: string(data)})
	require.NoError(t, err)
	require.Len(t, parsed.GetJobs(), 1)
	_, err = srv.CreateJob(context.Background(), &pb.CreateJobRequest{
		Parent: "tenants/ml-team", Job: parsed.GetJobs()[0], JobId: "mnist-1", RequestId: "0b4a3c1e-6f0e-4c1b-9a57-0c6f1f7d9a10",
	})
	require.NoError(t, err)
	require.NotNil(t, st.created)
	require.Len(t, st.created.Spec.Replicas, 3)
	require.Equal(t, int32(4), st.created.Spec.RunPolicy.BackoffLimit)
}

func (s *acceptingStore) JobGetByRequestIDs(context.Context, string, []string) (map[string]store.RequestedJob, error) {
	return nil, nil
}

func (s *acceptingStore) JobUIDsByName(context.Context, string, []string) (map[string]string, error) {
	return nil, nil
}

func (s *acceptingStore) JobCreateMany(_ context.Context, _ string, items []store.JobCreateParams) ([]store.JobCreated, error) {
	out := make([]store.JobCreated, len(items))
	for i, it := range items {
		s.batch = append(s.batch, it.Job)
		out[i] = store.JobCreated{Job: it.Job}
	}
	return out, nil
}

// TestExamplePipelineAcceptedByServer runs examples/pipeline.yaml through
// ParseJobFile and BatchCreateJobs as tyctl sends it: one batch, in order,
// each dependency resolved to the uid of the job before it.
func TestExamplePipelineAcceptedByServer(t *testing.T) {
	data, err := os.ReadFile("examples/pipeline.yaml")
	require.NoError(t, err)
	st := &acceptingStore{}
	srv := api.NewJobServer(api.Deps{Store: st})
	parsed, err := srv.ParseJobFile(context.Background(), &pb.ParseJobFileRequest{Parent: "tenants/ml-team", Content: string(data)})
	require.NoError(t, err)
	var reqs []*pb.CreateJobRequest
	for _, j := range parsed.GetJobs() {
		id := lastSegment(j.GetName())
		j.Name = ""
		reqs = append(reqs, &pb.CreateJobRequest{Job: j, JobId: id})
	}
	_, err = srv.BatchCreateJobs(context.Background(), &pb.BatchCreateJobsRequest{Parent: "tenants/ml-team", Requests: reqs})
	require.NoError(t, err)
	require.Len(t, st.batch, 4)
	byName := map[string]job.Job{}
	for _, j := range st.batch {
		byName[j.Name] = j
	}
	require.Empty(t, byName["prep"].Spec.DependsOn)
	require.Equal(t, byName["prep"].UID, byName["train"].Spec.DependsOn[0].UID)
	require.NotEmpty(t, byName["train"].UID)
	eval := byName["evaluate"].Spec
	require.Equal(t, job.Dependency{Job: "train", Condition: job.DependsStarted, UID: byName["train"].UID}, eval.DependsOn[0])
	require.Equal(t, job.DependencyCancel, eval.OnDependencyFailure)
	require.Equal(t, "train", byName["publish"].Spec.DependsOn[0].Job)
}
