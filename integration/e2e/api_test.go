//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/trainyard/trainyard/integration/deploytest"
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

// TestTenantPatchOverREST: a PATCH without updateMask updates what the body
// holds — the gateway makes the mask from it, descending into the quota —
// and leaves the rest; with updateMask it updates exactly the named fields.
func TestTenantPatchOverREST(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenantWith(t, "acme", &pb.Tenant{
		DisplayName: "Acme", Labels: map[string]string{"cost-center": "42"},
		Quota:   &pb.Quota{Gpu: 4, Cpu: "64", Memory: "256Gi", Pods: 20},
		Members: []*pb.Member{harness.Group("ml-team", pb.Role_ROLE_ADMIN)},
	})
	admin := env.REST(env.AdminToken())
	patch := func(query, body string) (int, *pb.Tenant, string) {
		t.Helper()
		r := admin.Do(t, "PATCH", "/v1/tenants/acme"+query, body)
		var out pb.Tenant
		if r.Status == http.StatusOK {
			r.JSON(t, &out)
		}
		return r.Status, &out, string(r.Body)
	}

	// No mask: quota.gpu only; cpu, memory, pods, name, labels and members stay.
	code, got, body := patch("", `{"quota":{"gpu":8}}`)
	require.Equal(t, http.StatusOK, code, body)
	requireQuota(t, &pb.Quota{Gpu: 8, Cpu: "64", Memory: "256Gi", Pods: 20}, got.GetQuota())
	require.Equal(t, "Acme", got.GetDisplayName())
	require.Equal(t, map[string]string{"cost-center": "42"}, got.GetLabels())
	require.Len(t, got.GetMembers(), 1)

	code, got, body = patch("", `{"displayName":"Acme Research","quota":{"cpu":"128","pods":40}}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "Acme Research", got.GetDisplayName())
	requireQuota(t, &pb.Quota{Gpu: 8, Cpu: "128", Memory: "256Gi", Pods: 40}, got.GetQuota())

	// With updateMask: exactly the named fields, whatever else the body holds.
	code, got, body = patch("?updateMask=quota", `{"quota":{"gpu":2},"displayName":"ignored"}`)
	require.Equal(t, http.StatusOK, code, body)
	requireQuota(t, &pb.Quota{Gpu: 2}, got.GetQuota(), "quota as a whole is replaced")
	require.Equal(t, "Acme Research", got.GetDisplayName())
	code, got, body = patch("?updateMask=displayName,quota.memory", `{"displayName":"Acme","quota":{"memory":"1Ti","gpu":99},"labels":{}}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "Acme", got.GetDisplayName())
	requireQuota(t, &pb.Quota{Gpu: 2, Memory: "1Ti"}, got.GetQuota())
	require.Equal(t, map[string]string{"cost-center": "42"}, got.GetLabels())

	// The tenant as read, sent back with one change: output-only fields
	// (name, namespace, state, times) in the implied mask are ignored.
	r := admin.Do(t, "GET", "/v1/tenants/acme", nil)
	require.Equal(t, http.StatusOK, r.Status)
	var read map[string]any
	r.JSON(t, &read)
	read["displayName"] = "Acme Labs"
	code, got, body = patch("", jsonOf(t, read))
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "Acme Labs", got.GetDisplayName())
	requireQuota(t, &pb.Quota{Gpu: 2, Memory: "1Ti"}, got.GetQuota())
	require.Len(t, got.GetMembers(), 1)

	// Refused: a field that cannot be updated, an invalid value, a non-admin.
	code, _, body = patch("?updateMask=quota.tpu", `{"quota":{"gpu":1}}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "quota.tpu")
	code, _, body = patch("", `{"quota":{"gpu":-1}}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, `"field":"tenant.quota.gpu"`)
	code, _, body = patch("", `{"podReaderGroups":["system:authenticated"]}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, `"field":"tenant.podReaderGroups[0]"`)
	r = env.REST(env.Token("alice", "ml-team")).Do(t, "PATCH", "/v1/tenants/acme", `{"quota":{"gpu":100}}`)
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Body))
}

func requireQuota(t *testing.T, want, got *pb.Quota, msg ...any) {
	t.Helper()
	require.True(t, proto.Equal(want, got), "quota: want %v, got %v %v", want, got, msg)
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestIdempotentReplayAfterQuotaShrank: a retried create returns the job
// the first one made even though the tenant's quota no longer admits such
// a job (the retry is not validated again); a new request is refused; once
// the job is deleted a retry is NOT_FOUND rather than a second job.
func TestIdempotentReplayAfterQuotaShrank(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenantWith(t, "acme", &pb.Tenant{Quota: &pb.Quota{Gpu: 4},
		Members: []*pb.Member{harness.Group("ml-team", pb.Role_ROLE_EDITOR)}})
	alice := env.Token("alice", "ml-team")
	jobs := env.Jobs(t, alice)
	big := workerJob("tensorflow/tensorflow:2.16.1", 1)
	big.Spec.Replicas[0].Resources = &pb.Resources{Gpu: 4}
	req := &pb.CreateJobRequest{Parent: "tenants/acme", JobId: "big", RequestId: "req-big", Job: big}
	first, err := jobs.CreateJob(ctxT(t), req)
	require.NoError(t, err)

	_, err = env.Tenants(t, env.AdminToken()).UpdateTenant(ctxT(t), &pb.UpdateTenantRequest{
		Tenant:     &pb.Tenant{Name: "tenants/acme", Quota: &pb.Quota{Gpu: 1}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"quota.gpu"}},
	})
	require.NoError(t, err)

	again, err := jobs.CreateJob(ctxT(t), req)
	require.NoError(t, err, "the retry of a committed create must not be re-validated against the new quota")
	require.Equal(t, first.GetUid(), again.GetUid())
	r := env.REST(alice).Do(t, "POST", "/v1/tenants/acme/jobs?jobId=big&requestId=req-big", jsonOf(t, map[string]any{
		"spec": map[string]any{"replicas": []any{map[string]any{"type": "REPLICA_TYPE_WORKER", "image": "tensorflow/tensorflow:2.16.1", "resources": map[string]any{"gpu": 4}}}},
	}))
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var overREST pb.Job
	r.JSON(t, &overREST)
	require.Equal(t, first.GetUid(), overREST.GetUid())

	_, err = jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/acme", JobId: "big-2", RequestId: "req-big-2", Job: big})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "a new request meets the new quota")

	// Still the first job once it is final; NOT_FOUND once it is deleted.
	_, err = jobs.CancelJob(ctxT(t), &pb.CancelJobRequest{Name: "tenants/acme/jobs/big"})
	require.NoError(t, err)
	again, err = jobs.CreateJob(ctxT(t), req)
	require.NoError(t, err)
	require.Equal(t, pb.JobState_JOB_STATE_CANCELLED, again.GetStatus().GetState())
	_, err = jobs.DeleteJob(ctxT(t), &pb.DeleteJobRequest{Name: "tenants/acme/jobs/big"})
	require.NoError(t, err)
	_, err = jobs.CreateJob(ctxT(t), req)
	require.Equal(t, codes.NotFound, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "has been deleted")
	list, err := jobs.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme"})
	require.NoError(t, err)
	require.Empty(t, list.GetJobs(), "no second job")
}

// waitAPISecretsPolicy waits until the API server enforces deploy/'s
// trainyard-api-secrets admission policy in namespace ns. The harness
// applies the policies just before starting Trainyard, and kube-apiserver
// loads them from its informer some time later: until then a write the
// policy refuses goes through. The probe is a dry-run create, as the API
// server's ServiceAccount, of a Secret without Trainyard's labels.
func waitAPISecretsPolicy(t *testing.T, env *harness.Env, ns string) {
	t.Helper()
	cfg := env.Cluster.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + deploytest.Namespace + ":" + deploytest.APIAccount}
	as, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	waitFor(t, 30*time.Second, func() error {
		_, err := as.CoreV1().Secrets(ns).Create(ctxT(t), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "policy-probe"}, StringData: map[string]string{"k": "v"}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "trainyard-api-secrets") {
			return nil
		}
		return fmt.Errorf("an unlabelled Secret is not refused yet: %v", err)
	})
}

// TestSecretOrphansAndRefusals: a Kubernetes Secret whose metadata row is
// missing (a PutSecret whose Postgres write failed after the Kubernetes one)
// is still deleted by DeleteSecret; NOT_FOUND only when neither exists. A
// Secret that is not Trainyard's is refused as FAILED_PRECONDITION, and a
// job naming a key the secret lacks is refused at submit, naming the field.
func TestSecretOrphansAndRefusals(t *testing.T) {
	env := harness.Start(t, harness.Options{Cluster: true, Workers: 1})
	env.CreateTenant(t, "acme", harness.Group("acme-admins", pb.Role_ROLE_ADMIN))
	rest := env.REST(env.Token("carol", "acme-admins"))
	waitTenantNamespace(t, env, "acme")
	ns := env.Namespace("acme")

	waitFor(t, 30*time.Second, func() error {
		r := rest.Do(t, "PUT", "/v1/tenants/acme/secrets/orphan", map[string]any{"data": map[string]string{"token": "x"}})
		if r.Status != http.StatusOK {
			return fmt.Errorf("PUT secret: %d %s", r.Status, r.Body)
		}
		return nil
	})
	conn, err := pgx.Connect(ctxT(t), env.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctxT(t), `DELETE FROM secrets WHERE tenant_id = 'acme' AND name = 'orphan'`)
	require.NoError(t, err)

	r := rest.Do(t, "DELETE", "/v1/tenants/acme/secrets/orphan", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	_, err = env.Cluster.Client().CoreV1().Secrets(ns).Get(ctxT(t), "orphan", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the orphaned Kubernetes Secret is gone: %v", err)
	r = rest.Do(t, "DELETE", "/v1/tenants/acme/secrets/orphan", nil)
	require.Equal(t, http.StatusNotFound, r.Status, string(r.Body))

	waitAPISecretsPolicy(t, env, ns)
	_, err = env.Cluster.Client().CoreV1().Secrets(ns).Create(ctxT(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "not-ours"}, StringData: map[string]string{"token": "theirs"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	r = rest.Do(t, "PUT", "/v1/tenants/acme/secrets/not-ours", map[string]any{"data": map[string]string{"token": "mine"}})
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), `"code":9`, "FAILED_PRECONDITION")
	require.NotContains(t, string(r.Body), "serviceaccount", "RBAC details stay in the log")

	r = rest.Do(t, "PUT", "/v1/tenants/acme/secrets/hf", map[string]any{"data": map[string]string{"token": "x"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r = rest.Do(t, "POST", "/v1/tenants/acme/jobs?jobId=train",
		`{"spec":{"replicas":[{"type":"REPLICA_TYPE_WORKER","image":"tensorflow/tensorflow:2.16.1","env":[{"name":"X","secret":{"secret":"hf","key":"password"}}]}]}}`)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), `"field":"spec.replicas[0].env[0].secret.key"`)
}
