//go:build integration

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/deploytest"
	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/kube"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// The remote agent runs as the worker's ServiceAccount (deploy/agent),
// whose RBAC and admission policies deploy/cluster gives every cluster.
const (
	agentAccount = deploytest.WorkerAccount
	agentSubject = "system:serviceaccount:" + deploytest.Namespace + ":" + agentAccount
)

// agentToken makes the agent's ServiceAccount in c (unless it exists) and
// returns a TokenRequest token for it with audience, as deploy/agent's
// projected volume gives the agent.
func agentToken(t *testing.T, c *cluster.Cluster, audience string) string {
	t.Helper()
	ctx := ctxT(t)
	_, err := c.Client().CoreV1().ServiceAccounts(deploytest.Namespace).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: agentAccount}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	tr, err := c.Client().CoreV1().ServiceAccounts(deploytest.Namespace).CreateToken(ctx, agentAccount, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

// A remote cluster's agent holds no database credentials (issue 45): the
// second local cluster is registered as "two" with its service-account
// issuer and keys (its /openid/v1/jwks, inline: the control plane never
// reaches it), and its agent — `trainyard worker --control-plane`, with
// a TokenRequest token of its own ServiceAccount and no DATABASE_URL —
// provisions the tenant there and runs a job placed in "two" to
// SUCCEEDED. Then the authorization test: two's token cannot load, save,
// park, purge or claim a job of cluster default, nor renew a default
// worker's lease; a token of the other cluster (same issuer name,
// another key) or with the wrong audience is UNAUTHENTICATED; a user's
// token on AgentService is refused, and two's token on JobService. Tenant
// Secrets put through the API appear in two, as copies two's agent keeps
// (remoteAgentSecrets). Last, the self-fencing.
func TestClustersRemoteAgent(t *testing.T) {
	waitGPUsFree(t)
	// Agents hear that a silent cluster's jobs go elsewhere after 40 s:
	// the self-fencing part at the end waits half of it.
	e := startWorkersServing(t, 1, []string{"--agent-requeue-after", "40s"}, "--cluster-heartbeat", "1s")
	s := &schedEnv{workerEnv: e, tenant: workerTenant}
	second := harness.SecondCluster(t)
	// One context for the whole test, which runs for a minute or more
	// (ctxT's 30 s ran out under load).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	t.Cleanup(func() {
		_ = second.Client().CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{})
	})
	kubeconfig := deploytest.WorkerKubeconfig(t, second) // also makes deploy/'s namespace
	token := agentToken(t, second, "trainyard")
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	jwks, err := second.Client().Discovery().RESTClient().Get().AbsPath("/openid/v1/jwks").DoRaw(ctx)
	require.NoError(t, err)

	admin := pb.NewClusterServiceClient(e.Conn(t, e.AdminToken()))
	_, err = admin.CreateCluster(ctx, &pb.CreateClusterRequest{ClusterId: "two", Cluster: &pb.Cluster{
		Labels:        map[string]string{"region": "two"},
		AgentIdentity: &pb.AgentIdentity{Issuer: "https://kubernetes.default.svc.cluster.local", Subject: agentSubject, Jwks: string(jwks)},
	}})
	require.NoError(t, err)
	agent := e.StartRemoteAgent(t, "two", kubeconfig, tokenFile, "--cluster-heartbeat", "1s", "--lease-ttl", "3s")
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(agent.Pid()) + "/environ")
	require.NoError(t, err)
	require.NotContains(t, string(environ), "DATABASE_URL", "the agent has no database credentials")
	waitClusterState(t, admin, "two", pb.ClusterState_CLUSTER_STATE_READY, 60*time.Second)
	waitServiceAccount(t, second.Client(), e.ns)

	// Two replicas: they find each other through the EndpointSlice that
	// two's agent writes in two (no other process can).
	inTwo := gpuJob(2, 4, 0, annot(cluster.AnnotationRunFor, "6s"))
	inTwo.Clusters = []string{"two"}
	name := s.submitTo(t, "remote", inTwo)
	s.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	require.Eventually(t, func() bool {
		slices, err := second.Client().DiscoveryV1().EndpointSlices(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "trainyard.dev/job=remote"})
		return err == nil && len(slices.Items) == 1 && len(slices.Items[0].Endpoints) == 2
	}, 30*time.Second, 200*time.Millisecond, "two's agent writes the job's EndpointSlice in two, both replicas in it")
	j := s.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	require.Equal(t, "two", j.GetStatus().GetCluster())
	require.Len(t, podsIn(t, second.Client(), e.ns, "remote"), 2, "its pods ran in two")
	require.Empty(t, podsIn(t, e.Cluster.Client(), e.ns, "remote"))

	// A job of cluster default, running (owned by default's worker).
	inDefault := gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "60s"))
	inDefault.Clusters = []string{"default"}
	dj := s.wait(t, s.submitTo(t, "local", inDefault), 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	db, err := pgx.Connect(ctx, e.DatabaseURL)
	require.NoError(t, err)
	defer db.Close(context.Background())
	var owner string
	var version int64
	require.NoError(t, db.QueryRow(ctx, `SELECT worker_id, version FROM jobs WHERE uid = $1`, dj.GetUid()).Scan(&owner, &version))
	require.NotEmpty(t, owner)
	key := &pb.AgentJobKey{Tenant: workerTenant, Uid: dj.GetUid()}

	two := pb.NewAgentServiceClient(e.Conn(t, token))
	_, err = two.LoadJob(ctx, &pb.LoadJobRequest{Key: key})
	require.Equal(t, codes.NotFound, status.Code(err), "another cluster's job is not found: %v", err)
	for _, id := range []string{"intruder", owner} {
		_, err = two.SaveJob(ctx, &pb.SaveJobRequest{WorkerId: id, Key: key, Version: version,
			Status: []byte(`{"state":"FAILED","reason":"Hijacked"}`), Done: true})
		require.Equal(t, codes.Aborted, status.Code(err), "a save of default's job as %s: %v", id, err)
		_, err = two.ParkJob(ctx, &pb.ParkJobRequest{WorkerId: id, Key: key, Version: version, After: durationpb.New(time.Hour)})
		require.Equal(t, codes.Aborted, status.Code(err), "a park: %v", err)
		_, err = two.PurgeJob(ctx, &pb.PurgeJobRequest{WorkerId: id, Key: key})
		require.Error(t, err, "a purge")
		renewed, err := two.RenewLease(ctx, &pb.RenewLeaseRequest{WorkerId: id, Ttl: durationpb.New(time.Minute)})
		require.NoError(t, err)
		require.Empty(t, renewed.GetKeys(), "an agent's worker id is its cluster's: it never names default's jobs")
		claimed, err := two.ClaimJobs(ctx, &pb.ClaimJobsRequest{WorkerId: id, Limit: 100, Ttl: durationpb.New(3 * time.Second)})
		require.NoError(t, err)
		for _, cj := range claimed.GetJobs() {
			require.NotContains(t, string(cj.GetJob()), dj.GetUid())
		}
		_, err = two.ReleaseAllJobs(ctx, &pb.ReleaseAllJobsRequest{WorkerId: id})
		require.NoError(t, err)
	}
	briefs, err := two.ListJobsByKeys(ctx, &pb.ListJobsByKeysRequest{Keys: []*pb.AgentJobKey{key}})
	require.NoError(t, err)
	require.Len(t, briefs.GetJobs(), 1)
	require.True(t, briefs.GetJobs()[0].GetElsewhere())
	require.Empty(t, briefs.GetJobs()[0].GetState(), "nothing more of another cluster's job")
	var after string
	var afterVersion int64
	require.NoError(t, db.QueryRow(ctx, `SELECT worker_id, version FROM jobs WHERE uid = $1`, dj.GetUid()).Scan(&after, &afterVersion))
	require.Equal(t, owner, after, "default's job is still its worker's")
	require.Equal(t, version, afterVersion, "and was not written")
	require.Equal(t, pb.JobState_JOB_STATE_RUNNING, s.get(t, dj.GetName()).GetStatus().GetState())

	// Tokens that are not two's agent's.
	for what, tok := range map[string]string{
		"default's key (same issuer name, same ServiceAccount)": agentToken(t, e.Cluster, "trainyard"),
		"the wrong audience":                      agentToken(t, second, "https://kubernetes.default.svc"),
		"a user's token, even a platform admin's": e.AdminToken(),
	} {
		_, err := pb.NewAgentServiceClient(e.Conn(t, tok)).ListAgentTenants(ctx, &pb.ListAgentTenantsRequest{})
		require.Equal(t, codes.Unauthenticated, status.Code(err), "%s: %v", what, err)
	}
	_, err = pb.NewJobServiceClient(e.Conn(t, token)).ListJobs(ctx, &pb.ListJobsRequest{Parent: harness.TenantName(workerTenant)})
	require.Equal(t, codes.Unauthenticated, status.Code(err), "an agent's token on JobService: %v", err)
	require.Contains(t, e.Server.Logs(), "authentication failed")
	require.NotContains(t, e.Server.Logs(), token, "no token in the log")

	_, err = s.jobs.CancelJob(ctx, &pb.CancelJobRequest{Name: dj.GetName()})
	require.NoError(t, err)

	remoteAgentSecrets(t, e, second, two, agent)

	// Self-fencing: cut off from the control plane (the API server is
	// gone) past the requeue point less the pods' grace, two's agent
	// deletes the pods of its running job, so that a copy started
	// elsewhere never runs beside them. Here that is half the 40 s.
	long := gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "10m"))
	long.Clusters = []string{"two"}
	s.wait(t, s.submitTo(t, "fenced", long), 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	require.Len(t, podsIn(t, second.Client(), e.ns, "fenced"), 1)
	e.Server.Kill()
	cut := time.Now()
	require.Eventually(t, func() bool { return len(podsIn(t, second.Client(), e.ns, "fenced")) == 0 },
		90*time.Second, time.Second, "two's agent deletes its job's pods when it cannot reach the control plane")
	require.Greater(t, time.Since(cut), 10*time.Second, "not at the first failed call: at its fence point")
	require.Contains(t, agent.Logs(), "past the fence point")
}

// remoteAgentSecrets: a tenant secret put through the API (written in
// default by the API server) appears in the tenant's namespace in two,
// its new value follows a put, and it goes when it is deleted. Two's
// agent never gets the secrets of a tenant allowed only in default: the
// control plane answers NOT_FOUND, and it has no namespace in two.
func remoteAgentSecrets(t *testing.T, e *workerEnv, second *cluster.Cluster, two pb.AgentServiceClient, agent *harness.Process) {
	t.Helper()
	// Three copies, each within the agent's 10 s resync: longer than ctxT.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tenants := e.Tenants(t, e.AdminToken())
	put := func(tenantID, value string) {
		t.Helper()
		_, err := tenants.PutSecret(ctx, &pb.PutSecretRequest{Secret: &pb.Secret{
			Name: harness.TenantName(tenantID) + "/secrets/wandb", Data: map[string]string{"api-key": value}}})
		require.NoError(t, err)
	}
	put(workerTenant, "first-value")
	waitSecretCopy(t, second, e.ns, "first-value")
	put(workerTenant, "second-value")
	waitSecretCopy(t, second, e.ns, "second-value")
	_, err := tenants.DeleteSecret(ctx, &pb.DeleteSecretRequest{Name: harness.TenantName(workerTenant) + "/secrets/wandb"})
	require.NoError(t, err)
	waitSecretCopy(t, second, e.ns, "")

	// A tenant kept to default.
	const homeOnly = "homeonly"
	t.Cleanup(func() {
		_ = e.Cluster.Client().CoreV1().Namespaces().Delete(context.Background(), e.Namespace(homeOnly), metav1.DeleteOptions{})
	})
	e.CreateTenantWith(t, homeOnly, &pb.Tenant{Clusters: []string{"default"}})
	e.waitNS(t, e.Namespace(homeOnly))
	put(homeOnly, "default-only")
	_, err = two.ListAgentSecrets(ctx, &pb.ListAgentSecretsRequest{Tenant: homeOnly})
	require.Equal(t, codes.NotFound, status.Code(err), "two's agent asking for a default-only tenant's secrets: %v", err)
	list, err := two.ListAgentSecrets(ctx, &pb.ListAgentSecretsRequest{Tenant: workerTenant})
	require.NoError(t, err)
	require.Empty(t, list.GetSecrets(), "the deleted secret is gone from the control plane's answer too")
	_, err = second.Client().CoreV1().Namespaces().Get(ctx, e.Namespace(homeOnly), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "a default-only tenant has no namespace in two: %v", err)
	require.NotContains(t, e.Server.Logs(), "default-only", "no value in the API server's log")
	for _, logs := range []string{e.Server.Logs(), agent.Logs()} {
		require.NotContains(t, logs, "first-value")
		require.NotContains(t, logs, "second-value")
	}
	require.Contains(t, agent.Logs(), "wrote the copy of a tenant secret")
}

// waitSecretCopy waits until the copy of the tenant secret "wandb" in
// namespace ns of cluster c holds value under "api-key", labelled as a
// copy of workerTenant's; with value "", until there is no copy.
func waitSecretCopy(t *testing.T, c *cluster.Cluster, ns, value string) {
	t.Helper()
	waitFor(t, 60*time.Second, func() error {
		sec, err := c.Client().CoreV1().Secrets(ns).Get(ctxT(t), "wandb", metav1.GetOptions{})
		switch {
		case value == "" && apierrors.IsNotFound(err):
			return nil
		case value == "" && err == nil:
			return errors.New("the copy is still there")
		case err != nil:
			return err
		case string(sec.Data["api-key"]) != value:
			return fmt.Errorf("the copy holds %d bytes, not the value put last", len(sec.Data["api-key"]))
		case sec.Labels[kube.LabelSecretCopy] != "true" || sec.Labels[kube.LabelTenant] != workerTenant:
			return fmt.Errorf("the copy's labels: %v", sec.Labels)
		}
		return nil
	})
}
