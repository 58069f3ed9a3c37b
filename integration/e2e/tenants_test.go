//go:build integration

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// startWithDeployRBAC runs the API server and one worker with the
// identities and rights deploy/ gives them — the harness's default on the
// cluster, spelled out here because every test of this file is about
// what those identities may do.
func startWithDeployRBAC(t *testing.T) *harness.Env {
	t.Helper()
	env := harness.Start(t, harness.Options{Cluster: true, Workers: 1})
	require.NotEqual(t, env.Cluster.Kubeconfig, env.ServeKubeconfig, "the API server must not run as the cluster admin")
	require.NotEqual(t, env.Cluster.Kubeconfig, env.WorkerKubeconfig, "the worker must not run as the cluster admin")
	return env
}

// waitTenantNamespace waits until the worker's tenant reconciler has made
// the tenant's namespace (its ServiceAccount and NetworkPolicy exist).
func waitTenantNamespace(t *testing.T, env *harness.Env, tenantID string) {
	t.Helper()
	ns := env.Namespace(tenantID)
	waitFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := env.Cluster.Client().CoreV1().ServiceAccounts(ns).Get(ctx, "trainyard-job", metav1.GetOptions{}); err != nil {
			return fmt.Errorf("the worker has not made tenant %s's namespace %s (is the tenant reconciler running in `trainyard worker`?): %w", tenantID, ns, err)
		}
		_, err := env.Cluster.Client().NetworkingV1().NetworkPolicies(ns).Get(ctx, "trainyard-same-namespace", metav1.GetOptions{})
		return err
	})
}

func oneWorker(annotations map[string]string, res *pb.Resources, env ...*pb.EnvVar) *pb.Job {
	return &pb.Job{Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{
		Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 1, Image: "tensorflow/tensorflow:2.16.1",
		Command: []string{"python", "train.py"}, PodAnnotations: annotations, Resources: res, Env: env,
	}}}}
}

func runForever() map[string]string { return map[string]string{cluster.AnnotationRunForever: "true"} }

func createJob(t *testing.T, jobs pb.JobServiceClient, tenantID, id string, j *pb.Job) *pb.Job {
	t.Helper()
	out, err := jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: harness.TenantName(tenantID), JobId: id, Job: j})
	require.NoError(t, err, "create job %s", id)
	return out
}

func jobPods(t *testing.T, env *harness.Env, tenantID, jobID string) []corev1.Pod {
	t.Helper()
	pods, err := env.Cluster.Client().CoreV1().Pods(env.Namespace(tenantID)).List(ctxT(t),
		metav1.ListOptions{LabelSelector: "trainyard.dev/job=" + jobID})
	require.NoError(t, err)
	return pods.Items
}

// A secret put over REST lands in a Kubernetes Secret of the tenant's
// namespace and reaches the job's pod as a secretKeyRef; its value is in
// no API response, no Postgres table and no log line of the server or the
// worker.
func TestTenantSecretReachesThePodAndNothingElse(t *testing.T) {
	env := startWithDeployRBAC(t)
	env.CreateTenantWith(t, "acme", &pb.Tenant{
		Members:         []*pb.Member{harness.Group("acme-admins", pb.Role_ROLE_ADMIN)},
		PodReaderGroups: []string{"acme-readers"},
	})
	waitTenantNamespace(t, env, "acme")
	alice := env.Token("alice", "acme-admins")
	rest := env.REST(alice)

	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	value := "hf_" + hex.EncodeToString(raw)
	var bodies []string // every API response of the test

	// PUT the secret.
	var r harness.Response
	waitFor(t, 30*time.Second, func() error {
		r = rest.Do(t, "PUT", "/v1/tenants/acme/secrets/hf-token", map[string]any{"data": map[string]string{"token": value, "user": "alice"}})
		if r.Status != http.StatusOK {
			return fmt.Errorf("PUT secret: %d %s", r.Status, r.Body)
		}
		return nil
	})
	bodies = append(bodies, string(r.Body))
	var sec pb.Secret
	r.JSON(t, &sec)
	require.Equal(t, "tenants/acme/secrets/hf-token", sec.GetName())
	require.Empty(t, sec.GetData(), "values are write-only")

	r = rest.Do(t, "GET", "/v1/tenants/acme/secrets", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	bodies = append(bodies, string(r.Body))
	var list pb.ListSecretsResponse
	r.JSON(t, &list)
	require.Len(t, list.GetSecrets(), 1)
	require.Equal(t, []string{"token", "user"}, list.GetSecrets()[0].GetKeys())

	// The Kubernetes Secret holds the value.
	ns := env.Namespace("acme")
	ks, err := env.Cluster.Client().CoreV1().Secrets(ns).Get(ctxT(t), "hf-token", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, value, string(ks.Data["token"]))
	require.Equal(t, "trainyard", ks.Labels["app.kubernetes.io/managed-by"])

	// PUT again replaces it. The API server cannot read Secrets: it
	// overwrites without looking, and the cluster's admission policy is
	// what checks the Secret is Trainyard's.
	raw2 := make([]byte, 16)
	_, _ = rand.Read(raw2)
	value2 := "hf_" + hex.EncodeToString(raw2)
	r = rest.Do(t, "PUT", "/v1/tenants/acme/secrets/hf-token", map[string]any{"data": map[string]string{"token": value2}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	bodies = append(bodies, string(r.Body))
	ks, err = env.Cluster.Client().CoreV1().Secrets(ns).Get(ctxT(t), "hf-token", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{"token": []byte(value2)}, ks.Data, "replaced, not merged")
	require.Equal(t, "acme", ks.Labels["trainyard.dev/tenant"])

	// A Secret of the same kind of name that Trainyard did not make is not
	// overwritten, and keeps its value.
	_, err = env.Cluster.Client().CoreV1().Secrets(ns).Create(ctxT(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "not-ours"}, StringData: map[string]string{"token": "theirs"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	r = rest.Do(t, "PUT", "/v1/tenants/acme/secrets/not-ours", map[string]any{"data": map[string]string{"token": "mine"}})
	require.NotEqual(t, http.StatusOK, r.Status, "overwrote a Secret that is not Trainyard's: %s", r.Body)
	theirs, err := env.Cluster.Client().CoreV1().Secrets(ns).Get(ctxT(t), "not-ours", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "theirs", string(theirs.Data["token"]))

	// A job naming a secret that does not exist is refused at submit.
	r = rest.Do(t, "POST", "/v1/tenants/acme/jobs?jobId=missing",
		`{"spec":{"replicas":[{"type":"REPLICA_TYPE_WORKER","image":"tensorflow/tensorflow:2.16.1","env":[{"name":"X","secret":{"secret":"nope","key":"k"}}]}]}}`)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), `secret \"nope\" does not exist`)

	// A job with the secret as env, over REST.
	r = rest.Do(t, "POST", "/v1/tenants/acme/jobs?jobId=train", fmt.Sprintf(`{"spec":{"replicas":[{
		"type":"REPLICA_TYPE_WORKER","image":"tensorflow/tensorflow:2.16.1","command":["python","train.py"],
		"podAnnotations":{%q:"true"},
		"env":[{"name":"HF_TOKEN","secret":{"secret":"hf-token","key":"token"}},{"name":"MODE","value":"train"}]}]}}`,
		cluster.AnnotationRunForever))
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	bodies = append(bodies, string(r.Body))

	jobs := env.Jobs(t, alice)
	running := harness.WaitJob(t, jobs, harness.JobName("acme", "train"), 90*time.Second, harness.InState(pb.JobState_JOB_STATE_RUNNING))
	bodies = append(bodies, protojson.Format(running))

	pods := jobPods(t, env, "acme", "train")
	require.Len(t, pods, 1)
	pod := pods[0]
	require.Equal(t, corev1.PodRunning, pod.Status.Phase)
	require.Equal(t, "trainyard-job", pod.Spec.ServiceAccountName, "job pods run as the tenant's ServiceAccount")
	require.NotNil(t, pod.Spec.AutomountServiceAccountToken)
	require.False(t, *pod.Spec.AutomountServiceAccountToken)
	var hf *corev1.EnvVar
	for i, e := range pod.Spec.Containers[0].Env {
		if e.Name == "HF_TOKEN" {
			hf = &pod.Spec.Containers[0].Env[i]
		}
	}
	require.NotNil(t, hf, "HF_TOKEN in the pod's env")
	require.Empty(t, hf.Value, "the value must not be in the pod spec")
	require.NotNil(t, hf.ValueFrom)
	require.NotNil(t, hf.ValueFrom.SecretKeyRef)
	require.Equal(t, "hf-token", hf.ValueFrom.SecretKeyRef.Name)
	require.Equal(t, "token", hf.ValueFrom.SecretKeyRef.Key)

	// The API server streams the running replica's log: it reads pod logs
	// through the RoleBinding the worker put into the tenant's namespace
	// (it has no cluster-wide right to).
	logs, err := jobs.GetJobLogs(ctxT(t), &pb.GetJobLogsRequest{Name: harness.JobName("acme", "train"), TailLines: 20})
	require.NoError(t, err)
	var logText strings.Builder
	for {
		chunk, err := logs.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "reading the job's log through the API server")
		logText.Write(chunk.GetData())
	}
	require.Contains(t, logText.String(), cluster.LogLineStep, "the running replica's log")

	// More responses: the job over REST, the list, the events.
	for _, path := range []string{"/v1/tenants/acme/jobs/train", "/v1/tenants/acme/jobs", "/v1/tenants/acme/jobs/train/events", "/v1/tenants/acme"} {
		r = rest.Do(t, "GET", path, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", path, r.Body)
		bodies = append(bodies, string(r.Body))
	}
	_, err = jobs.CancelJob(ctxT(t), &pb.CancelJobRequest{Name: harness.JobName("acme", "train")})
	require.NoError(t, err)
	harness.WaitJob(t, jobs, harness.JobName("acme", "train"), 60*time.Second, harness.InState(pb.JobState_JOB_STATE_CANCELLED))

	for _, value := range []string{value, value2} {
		for i, b := range bodies {
			require.NotContains(t, b, value, "API response %d holds the secret value", i)
		}
		requireNotInDatabase(t, env.DatabaseURL, value)
		require.NotContains(t, env.Server.Logs(), value, "the API server logged the secret value")
		for _, w := range env.Workers {
			require.NotContains(t, w.Logs(), value, "%s logged the secret value", w.Name)
		}
	}
}

// requireNotInDatabase looks for s in every row of every table of the
// test's database (each row as text).
func requireNotInDatabase(t *testing.T, databaseURL, s string) {
	t.Helper()
	ctx := ctxT(t)
	conn, err := pgx.Connect(ctx, databaseURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name)
		FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.NotEmpty(t, tables)
	checked := 0
	for _, table := range tables {
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM `+table+` t WHERE strpos(t::text, $1) > 0`, s).Scan(&n))
		require.Zero(t, n, "table %s holds the secret value in %d rows", table, n)
		checked++
	}
	t.Logf("secret value absent from all %d tables", checked)
}

// Two jobs that together need more GPUs than the tenant's quota run one
// after the other: the second waits QUEUED, saying why. A job that needs
// more than the whole quota is refused at submit.
func TestTenantQuotaRunsJobsOneAfterTheOther(t *testing.T) {
	env := startWithDeployRBAC(t)
	env.CreateTenantWith(t, "quota", &pb.Tenant{
		Members: []*pb.Member{harness.Group("quota-team", pb.Role_ROLE_EDITOR)},
		Quota:   &pb.Quota{Gpu: 2},
	})
	waitTenantNamespace(t, env, "quota")
	jobs := env.Jobs(t, env.Token("bob", "quota-team"))

	// Submitted together; either may be admitted first.
	twoGPUs := &pb.Resources{Gpu: 2, Cpu: "1", Memory: "1Gi"}
	names := []string{harness.JobName("quota", "first"), harness.JobName("quota", "second")}
	createJob(t, jobs, "quota", "first", oneWorker(map[string]string{cluster.AnnotationRunFor: "4s"}, twoGPUs))
	createJob(t, jobs, "quota", "second", oneWorker(map[string]string{cluster.AnnotationRunFor: "4s"}, twoGPUs))

	quotaCondition := func(j *pb.Job) *pb.Condition {
		for _, c := range j.GetStatus().GetConditions() {
			if c.GetReason() == "QuotaExceeded" && !c.GetStatus() {
				return c
			}
		}
		return nil
	}
	// One runs while the other waits QUEUED, saying for what.
	var waiting *pb.Job
	waitFor(t, 60*time.Second, func() error {
		var got [2]*pb.Job
		for i, name := range names {
			j, err := jobs.GetJob(ctxT(t), &pb.GetJobRequest{Name: name})
			if err != nil {
				return err
			}
			got[i] = j
		}
		for i := range got {
			run, wait := got[i], got[1-i]
			if run.GetStatus().GetState() == pb.JobState_JOB_STATE_RUNNING &&
				wait.GetStatus().GetState() == pb.JobState_JOB_STATE_QUEUED && quotaCondition(wait) != nil {
				waiting = wait
				return nil
			}
		}
		return fmt.Errorf("want one RUNNING and one QUEUED for quota, got %s and %s",
			protojson.Format(got[0].GetStatus()), protojson.Format(got[1].GetStatus()))
	})
	msg := quotaCondition(waiting).GetMessage()
	require.Contains(t, msg, "waiting for quota")
	require.Contains(t, msg, "needs 2 GPUs, 2 of 2 in use")
	waitingID := waiting.GetName()[strings.LastIndex(waiting.GetName(), "/")+1:]
	require.Empty(t, jobPods(t, env, "quota", waitingID), "a job waiting for quota has no pods")

	// Both succeed, one after the other.
	var done []*pb.Job
	for _, name := range names {
		done = append(done, harness.WaitJob(t, jobs, name, 90*time.Second, harness.InState(pb.JobState_JOB_STATE_SUCCEEDED)))
	}
	earlier, later := done[0], done[1]
	if later.GetStatus().GetStartTime().AsTime().Before(earlier.GetStatus().GetStartTime().AsTime()) {
		earlier, later = later, earlier
	}
	require.False(t, later.GetStatus().GetStartTime().AsTime().Before(earlier.GetStatus().GetCompletionTime().AsTime()),
		"%s started at %s, before %s finished at %s: both ran at once", later.GetName(),
		later.GetStatus().GetStartTime().AsTime(), earlier.GetName(), earlier.GetStatus().GetCompletionTime().AsTime())

	// Larger than the whole quota: refused at once.
	_, err := jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: harness.TenantName("quota"), JobId: "huge",
		Job: oneWorker(nil, &pb.Resources{Gpu: 3})})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "whole quota")
}

// Offboarding a tenant cancels its jobs, removes its namespace and marks it
// DELETED; another tenant's job keeps running, its namespace untouched.
func TestTenantOffboardingLeavesOthersRunning(t *testing.T) {
	env := startWithDeployRBAC(t)
	for _, id := range []string{"leaving", "staying"} {
		env.CreateTenantWith(t, id, &pb.Tenant{Members: []*pb.Member{harness.Group(id+"-team", pb.Role_ROLE_EDITOR)}})
		waitTenantNamespace(t, env, id)
	}
	leaving := env.Jobs(t, env.Token("lee", "leaving-team"))
	staying := env.Jobs(t, env.Token("sam", "staying-team"))
	createJob(t, leaving, "leaving", "train", oneWorker(runForever(), nil))
	createJob(t, staying, "staying", "train", oneWorker(runForever(), nil))
	harness.WaitJob(t, leaving, harness.JobName("leaving", "train"), 60*time.Second, harness.InState(pb.JobState_JOB_STATE_RUNNING))
	harness.WaitJob(t, staying, harness.JobName("staying", "train"), 60*time.Second, harness.InState(pb.JobState_JOB_STATE_RUNNING))
	stayingPod := jobPods(t, env, "staying", "train")
	require.Len(t, stayingPod, 1)

	admin := env.Tenants(t, env.AdminToken())
	tn, err := admin.DeleteTenant(ctxT(t), &pb.DeleteTenantRequest{Name: harness.TenantName("leaving")})
	require.NoError(t, err)
	require.Equal(t, pb.TenantState_TENANT_STATE_OFFBOARDING, tn.GetState())

	// No new jobs while offboarding.
	_, err = leaving.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: harness.TenantName("leaving"), JobId: "late", Job: oneWorker(nil, nil)})
	require.Error(t, err)

	harness.WaitJob(t, leaving, harness.JobName("leaving", "train"), 60*time.Second, harness.InState(pb.JobState_JOB_STATE_CANCELLED))
	waitFor(t, 2*time.Minute, func() error {
		got, err := admin.GetTenant(ctxT(t), &pb.GetTenantRequest{Name: harness.TenantName("leaving")})
		if err != nil {
			return err
		}
		if got.GetState() != pb.TenantState_TENANT_STATE_DELETED {
			return fmt.Errorf("tenant is %s", got.GetState())
		}
		return nil
	})
	_, err = env.Cluster.Client().CoreV1().Namespaces().Get(ctxT(t), env.Namespace("leaving"), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the offboarded tenant's namespace must be gone, got %v", err)

	// The other tenant: still running, same pod, namespace in place.
	j, err := staying.GetJob(ctxT(t), &pb.GetJobRequest{Name: harness.JobName("staying", "train")})
	require.NoError(t, err)
	require.Equal(t, pb.JobState_JOB_STATE_RUNNING, j.GetStatus().GetState())
	now := jobPods(t, env, "staying", "train")
	require.Len(t, now, 1)
	require.Equal(t, stayingPod[0].UID, now[0].UID, "the other tenant's pod was replaced")
	require.Nil(t, now[0].DeletionTimestamp)
	ns, err := env.Cluster.Client().CoreV1().Namespaces().Get(ctxT(t), env.Namespace("staying"), metav1.GetOptions{})
	require.NoError(t, err)
	require.Nil(t, ns.DeletionTimestamp)
	got, err := admin.GetTenant(ctxT(t), &pb.GetTenantRequest{Name: harness.TenantName("staying")})
	require.NoError(t, err)
	require.Equal(t, pb.TenantState_TENANT_STATE_ACTIVE, got.GetState())

	_, err = staying.CancelJob(ctxT(t), &pb.CancelJobRequest{Name: harness.JobName("staying", "train")})
	require.NoError(t, err)
}

// A job that asks for privileged mode is refused by Pod Security Admission
// (baseline is enforced in tenant namespaces) and fails saying so.
func TestTenantPrivilegedJobFailsWithPodSecurityReason(t *testing.T) {
	env := startWithDeployRBAC(t)
	env.CreateTenantWith(t, "psa", &pb.Tenant{Members: []*pb.Member{harness.Group("psa-team", pb.Role_ROLE_EDITOR)}})
	waitTenantNamespace(t, env, "psa")
	jobs := env.Jobs(t, env.Token("pat", "psa-team"))

	j := oneWorker(nil, nil)
	j.Spec.Replicas[0].Privileged = true
	_, err := jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: harness.TenantName("psa"), JobId: "priv", Job: j})
	if err != nil {
		// Refused at submit is as good, if it says why.
		require.Contains(t, strings.ToLower(status.Convert(err).Message()), "privileged")
		return
	}
	failed := harness.WaitJob(t, jobs, harness.JobName("psa", "priv"), 60*time.Second, harness.InState(pb.JobState_JOB_STATE_FAILED))
	st := failed.GetStatus()
	require.Equal(t, "PodSecurityForbidden", st.GetReason(), "status: %s", protojson.Format(st))
	require.Contains(t, st.GetMessage(), "violates PodSecurity")
	require.Contains(t, st.GetMessage(), "privileged")
	require.Empty(t, jobPods(t, env, "psa", "priv"), "no pod was admitted")
}

// A job whose pod name is taken by a pod Trainyard did not make fails with
// NameConflict. The worker finds out with a live read of the pod (its
// informer's handlers ignore what is not Trainyard's), which deploy/'s
// worker role must allow: without "get" on pods the read is refused and
// the job retries forever (and the harness fails the test on the worker's
// RBAC refusal).
func TestTenantJobNameConflictUnderDeployRBAC(t *testing.T) {
	env := startWithDeployRBAC(t)
	env.CreateTenantWith(t, "clash", &pb.Tenant{Members: []*pb.Member{harness.Group("clash-team", pb.Role_ROLE_EDITOR)}})
	waitTenantNamespace(t, env, "clash")
	_, err := env.Cluster.Client().CoreV1().Pods(env.Namespace("clash")).Create(ctxT(t), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "taken-worker-1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	jobs := env.Jobs(t, env.Token("cy", "clash-team"))
	j := oneWorker(runForever(), nil)
	j.Spec.Replicas[0].Count = 2
	createJob(t, jobs, "clash", "taken", j)
	failed := harness.WaitJob(t, jobs, harness.JobName("clash", "taken"), 60*time.Second, harness.InState(pb.JobState_JOB_STATE_FAILED))
	require.Equal(t, "NameConflict", failed.GetStatus().GetReason(), "status: %s", protojson.Format(failed.GetStatus()))

	pod, err := env.Cluster.Client().CoreV1().Pods(env.Namespace("clash")).Get(ctxT(t), "taken-worker-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.Empty(t, pod.Labels, "the other pod is left as it was")
}
