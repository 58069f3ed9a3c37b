//go:build integration

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func workerJob(image string, workers int32) *pb.Job {
	return &pb.Job{
		Labels: map[string]string{"team": "nlp"},
		Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{
			{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: workers, Image: image, Command: []string{"python", "train.py"}},
		}},
	}
}

const restJob = `{"labels":{"team":"vision"},"spec":{"replicas":[
 {"type":"REPLICA_TYPE_CHIEF","image":"tensorflow/tensorflow:2.16.1","command":["python","train.py"]},
 {"type":"REPLICA_TYPE_WORKER","count":2,"image":"tensorflow/tensorflow:2.16.1","resources":{"cpu":"2","memory":"4Gi","gpu":1}}]}}`

// TestJobsOverRESTAndGRPC drives the real server through both front doors.
func TestJobsOverRESTAndGRPC(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Group("ml-team", pb.Role_ROLE_EDITOR))
	alice := env.Token("alice", "ml-team")
	rest := env.REST(alice)

	// Create over REST; the same requestId returns the same job.
	r := rest.Do(t, "POST", "/v1/tenants/acme/jobs?jobId=resnet&requestId=req-1", restJob)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var created pb.Job
	r.JSON(t, &created)
	require.Equal(t, "tenants/acme/jobs/resnet", created.GetName())
	require.Equal(t, pb.JobState_JOB_STATE_QUEUED, created.GetStatus().GetState())
	require.Equal(t, "alice", created.GetCreator())

	r = rest.Do(t, "POST", "/v1/tenants/acme/jobs?jobId=other-id&requestId=req-1", restJob)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var again pb.Job
	r.JSON(t, &again)
	require.Equal(t, created.GetUid(), again.GetUid(), "a retried request must return the first job")

	// A duplicate id is a conflict.
	r = rest.Do(t, "POST", "/v1/tenants/acme/jobs?jobId=resnet", restJob)
	require.Equal(t, http.StatusConflict, r.Status, string(r.Body))

	// Get over REST and over gRPC.
	r = rest.Do(t, "GET", "/v1/tenants/acme/jobs/resnet", nil)
	require.Equal(t, http.StatusOK, r.Status)
	jobs := env.Jobs(t, alice)
	got, err := jobs.GetJob(ctxT(t), &pb.GetJobRequest{Name: "tenants/acme/jobs/resnet"})
	require.NoError(t, err)
	require.Equal(t, created.GetUid(), got.GetUid())
	require.Len(t, got.GetSpec().GetReplicas(), 2)
	require.EqualValues(t, 1, got.GetSpec().GetReplicas()[1].GetResources().GetGpu())

	// Create over gRPC, then page through everything.
	for i := range 5 {
		_, err := jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{
			Parent: "tenants/acme", JobId: fmt.Sprintf("bert-%d", i), Job: workerJob("tensorflow/tensorflow:2.16.1", 2),
		})
		require.NoError(t, err)
	}
	seen := map[string]bool{}
	token := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		resp, err := jobs.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme", PageSize: 2, PageToken: token})
		require.NoError(t, err)
		require.LessOrEqual(t, len(resp.GetJobs()), 2)
		for _, j := range resp.GetJobs() {
			require.False(t, seen[j.GetName()], "%s listed twice", j.GetName())
			seen[j.GetName()] = true
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	require.Len(t, seen, 6)

	// Filters, over REST.
	r = rest.Do(t, "GET", `/v1/tenants/acme/jobs?filter=labels.team%3D%22vision%22`, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var listed pb.ListJobsResponse
	r.JSON(t, &listed)
	require.Len(t, listed.GetJobs(), 1)
	require.Equal(t, "tenants/acme/jobs/resnet", listed.GetJobs()[0].GetName())
	r = rest.Do(t, "GET", `/v1/tenants/acme/jobs?filter=state%3DNOPE`, nil)
	require.Equal(t, http.StatusBadRequest, r.Status)

	// A page token does not carry over to another filter.
	first, err := jobs.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme", PageSize: 1})
	require.NoError(t, err)
	_, err = jobs.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme", PageSize: 1, PageToken: first.GetNextPageToken(), Filter: "state = QUEUED"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))

	// Cancel a queued job: cancelled at once, with an event.
	r = rest.Do(t, "POST", "/v1/tenants/acme/jobs/resnet:cancel", "{}")
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var cancelled pb.Job
	r.JSON(t, &cancelled)
	require.Equal(t, pb.JobState_JOB_STATE_CANCELLED, cancelled.GetStatus().GetState())
	c2, err := jobs.CancelJob(ctxT(t), &pb.CancelJobRequest{Name: "tenants/acme/jobs/bert-0"})
	require.NoError(t, err)
	require.Equal(t, pb.JobState_JOB_STATE_CANCELLED, c2.GetStatus().GetState())
	events, err := jobs.ListJobEvents(ctxT(t), &pb.ListJobEventsRequest{Parent: "tenants/acme/jobs/resnet"})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(events.GetEvents()), 2)
	require.Equal(t, pb.JobState_JOB_STATE_CANCELLED, events.GetEvents()[len(events.GetEvents())-1].GetState())

	// Delete: refused while unfinished, allowed once final.
	_, err = jobs.DeleteJob(ctxT(t), &pb.DeleteJobRequest{Name: "tenants/acme/jobs/bert-1"})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
	_, err = jobs.DeleteJob(ctxT(t), &pb.DeleteJobRequest{Name: "tenants/acme/jobs/bert-0"})
	require.NoError(t, err)
	_, err = jobs.GetJob(ctxT(t), &pb.GetJobRequest{Name: "tenants/acme/jobs/bert-0"})
	require.Equal(t, codes.NotFound, status.Code(err))
}

// TestValidationErrors checks that bad input names its fields, over both transports.
func TestValidationErrors(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	alice := env.Token("alice")

	bad := &pb.Job{Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{
		{Type: pb.ReplicaType_REPLICA_TYPE_CHIEF, Count: 2, Image: "tensorflow/tensorflow"},
		{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 1, Image: "Not An Image", Resources: &pb.Resources{Gpu: 100, Cpu: "lots"}},
	}}}
	_, err := env.Jobs(t, alice).CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/acme", Job: bad, JobId: "Bad_Name"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	fields := map[string]bool{}
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields[v.GetField()] = true
			}
		}
	}
	for _, f := range []string{"jobId", "spec.replicas[0].count", "spec.replicas[1].image", "spec.replicas[1].resources.gpu", "spec.replicas[1].resources.cpu"} {
		require.True(t, fields[f], "no violation for %s in %v", f, fields)
	}

	// The same over REST: 400 with the violations in the JSON body.
	r := env.REST(alice).Do(t, "POST", "/v1/tenants/acme/jobs", `{"spec":{"replicas":[{"type":"REPLICA_TYPE_WORKER","image":"tf","resources":{"gpu":100}}]}}`)
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Contains(t, string(r.Body), `"field":"spec.replicas[0].resources.gpu"`)
	require.Contains(t, string(r.Body), "google.rpc.BadRequest")

	// Unknown JSON fields are refused rather than dropped.
	r = env.REST(alice).Do(t, "POST", "/v1/tenants/acme/jobs", `{"spec":{"replica":[]}}`)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))

	// Too large: 413 over REST, RESOURCE_EXHAUSTED over gRPC.
	huge := `{"displayName":"` + strings.Repeat("x", 5<<20) + `"}`
	r = env.REST(alice).Do(t, "POST", "/v1/tenants/acme/jobs", huge)
	require.Equal(t, http.StatusRequestEntityTooLarge, r.Status)
	big := workerJob("tensorflow/tensorflow", 1)
	big.DisplayName = strings.Repeat("x", 5<<20)
	_, err = env.Jobs(t, alice).CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/acme", Job: big})
	require.Equal(t, codes.ResourceExhausted, status.Code(err))

	// Internal details never leak: a missing job is a plain NOT_FOUND.
	_, err = env.Jobs(t, alice).GetJob(ctxT(t), &pb.GetJobRequest{Name: "tenants/acme/jobs/nope"})
	require.Equal(t, codes.NotFound, status.Code(err))
	require.NotContains(t, strings.ToLower(status.Convert(err).Message()), "sql")
}
