//go:build integration

package agentclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/trainyard/trainyard/internal/api"
	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/pgtest"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, "agentclient", nil)) }

const (
	issuer  = "https://kubernetes.default.svc.cluster.local"
	subject = "system:serviceaccount:trainyard:trainyard-worker"
)

// saToken signs a ServiceAccount token as a cluster's API server would.
func saToken(t *testing.T, key *ecdsa.PrivateKey, aud string) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k"))
	require.NoError(t, err)
	claims, _ := json.Marshal(map[string]any{"iss": issuer, "sub": subject, "aud": []string{aud}, "exp": time.Now().Add(time.Hour).Unix()})
	jws, err := signer.Sign(claims)
	require.NoError(t, err)
	s, err := jws.CompactSerialize()
	require.NoError(t, err)
	return s
}

type bundle struct {
	ctx   context.Context
	store *store.Store
	addr  string
	key   *ecdsa.PrivateKey
	home  *fake.Clientset
}

// setup serves AgentService as `trainyard serve` does (the auth
// interceptor with the agent authenticator, the store per cluster) on a
// fresh schema where cluster "two" is registered with key's JWKS.
func setup(t *testing.T) *bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	pool, _ := pgtest.Schema(t)
	st := store.New(pool)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
	_, err = st.ClusterCreate(ctx, cluster.Cluster{Name: "two", AgentIdentity: cluster.AgentIdentity{Issuer: issuer, Subject: subject, JWKS: string(jwks)}})
	require.NoError(t, err)

	agents, err := auth.NewAgentAuthenticator(auth.AgentConfig{Identities: st})
	require.NoError(t, err)
	users := auth.TenantSourceFunc(func(ctx context.Context, id string) (tenant.Tenant, error) { return st.TenantGet(ctx, id) })
	ic := auth.NewInterceptor(auth.FirstOf(), auth.NewAuthorizer(users), auth.WithAgentAuthenticator(agents))
	// The API server's own cluster, where tenant secrets' values are.
	home := fake.NewClientset()
	srv, err := api.NewAgentServer(api.AgentConfig{Store: func(c string) api.AgentStore { return st.InCluster(c) }, RequeueAfter: 11 * time.Minute,
		Secrets: kube.NewClustersFor(cluster.Default, map[string]kubernetes.Interface{cluster.Default: home})})
	require.NoError(t, err)
	g := grpc.NewServer(grpc.ChainUnaryInterceptor(ic.Unary(), errorCodes))
	pb.RegisterAgentServiceServer(g, srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	return &bundle{ctx: ctx, store: st, addr: ln.Addr().String(), key: key, home: home}
}

// errorCodes is the server's error interceptor's mapping (api.Code).
func errorCodes(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err == nil {
		return resp, nil
	}
	if _, ok := status.FromError(err); ok {
		return nil, err
	}
	return nil, status.Error(api.Code(err), err.Error())
}

func (b *bundle) client(t *testing.T, token string) *Client {
	t.Helper()
	f := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(f, []byte(token), 0o600))
	c, err := New(Config{Address: b.addr, TokenFile: f, Plaintext: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (b *bundle) job(t *testing.T, name, where string) store.JobKey {
	t.Helper()
	spec := job.Spec{Replicas: []job.ReplicaSpec{{Type: job.Worker, Count: 1, Image: "tensorflow/tensorflow:2.16.1",
		Resources: job.Resources{CPU: "1", Memory: "1Gi"}, Port: job.DefaultPort, RestartPolicy: job.RestartOnFailure}}}
	j, _, err := b.store.JobCreate(b.ctx, store.JobCreateParams{Job: job.Job{Tenant: "acme", Name: name, Spec: spec, Creator: "alice"}})
	require.NoError(t, err)
	key := store.JobKey{Tenant: "acme", UID: j.UID}
	lease, ok, err := b.store.SchedulerLeaseAcquire(b.ctx, "test-scheduler", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	clusters := map[store.JobKey]string{}
	if where != cluster.Default {
		clusters[key] = where
	}
	_, err = b.store.SchedulerCommit(b.ctx, store.SchedulerCommitParams{Lease: lease, Admit: []store.JobKey{key}, Clusters: clusters})
	require.NoError(t, err)
	return key
}

// The worker's whole storage protocol over AgentService, as cluster two's
// agent: claim, load, save (fenced), renew, list, release, tenants,
// heartbeat. Cluster default's job is never claimed, loaded or written.
func TestClientOverAgentService(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "acme", Namespace: "ty-acme",
		Members: []tenant.Member{{Subject: "alice", Role: tenant.RoleEditor}}})
	require.NoError(t, err)
	here := b.job(t, "here", cluster.Default)
	there := b.job(t, "there", "two")
	c := b.client(t, saToken(t, b.key, "trainyard"))
	ctx := b.ctx

	claimed, err := c.JobClaim(ctx, "w1", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, there, claimed[0].Key())
	require.Equal(t, "w1", claimed[0].WorkerID, "the agent sees its own id, unscoped")
	require.Equal(t, "there", claimed[0].Job.Name)
	require.Equal(t, "two", claimed[0].Job.Status.Cluster)

	_, err = c.JobLoad(ctx, here.Tenant, here.UID)
	require.ErrorIs(t, err, store.ErrNotFound, "another cluster's job")
	w, err := c.JobLoad(ctx, there.Tenant, there.UID)
	require.NoError(t, err)
	require.Equal(t, claimed[0].Version, w.Version)

	st := w.Job.Status
	st.State = job.Running
	v, err := c.JobSave(ctx, store.JobSaveParams{WorkerID: "w1", Tenant: there.Tenant, UID: there.UID, Version: w.Version, Status: st,
		Events: []job.Event{{Reason: "Started", Message: "over the control plane"}}})
	require.NoError(t, err)
	require.Greater(t, v, w.Version)
	_, err = c.JobSave(ctx, store.JobSaveParams{WorkerID: "w1", Tenant: there.Tenant, UID: there.UID, Version: w.Version, Status: st})
	require.ErrorIs(t, err, store.ErrConflict, "a stale version")
	_, err = c.JobSave(ctx, store.JobSaveParams{WorkerID: "w2", Tenant: there.Tenant, UID: there.UID, Version: v, Status: st})
	require.ErrorIs(t, err, store.ErrLeaseLost, "another worker id")
	require.ErrorIs(t, c.JobPark(ctx, "w1", here.Tenant, here.UID, 1, time.Hour), store.ErrLeaseLost)
	require.ErrorIs(t, c.JobPurge(ctx, "w1", here.Tenant, here.UID), store.ErrLeaseLost)
	got, err := b.store.JobLoad(ctx, there.Tenant, there.UID)
	require.NoError(t, err)
	require.Equal(t, job.Running, got.Job.Status.State)
	require.Equal(t, "agent:two:w1", got.WorkerID, "the server scoped the id")

	live, err := c.JobLeaseExtend(ctx, "w1", time.Minute)
	require.NoError(t, err)
	require.True(t, live)
	keys, err := c.JobLeaseRenew(ctx, "w1", time.Minute)
	require.NoError(t, err)
	require.Equal(t, []store.JobKey{there}, keys)

	briefs, err := c.JobListByKeys(ctx, []store.JobKey{here, there})
	require.NoError(t, err)
	require.Len(t, briefs, 2)
	for _, br := range briefs {
		if br.Key == here {
			require.Equal(t, store.JobBrief{Key: here, Elsewhere: true}, br, "nothing more of another cluster's job")
		} else {
			require.False(t, br.Elsewhere)
			require.Equal(t, job.Running, br.State)
		}
	}

	tn, err := c.TenantGet(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, "ty-acme", tn.Namespace)
	require.Empty(t, tn.Members, "members are none of a cluster's business")
	all, err := c.TenantListAll(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	_, err = c.TenantGet(ctx, "ghost")
	require.ErrorIs(t, err, store.ErrNotFound)

	before := c.LastContact()
	wrote, err := c.ClusterHeartbeat(ctx, store.ClusterHeartbeatParams{Cluster: cluster.Default, Agent: "w1",
		Capacity: job.Vector{}, NodeCount: 1, Nodes: []cluster.Node{{Name: "n1"}}, NodesDigest: "d1"})
	require.NoError(t, err)
	require.True(t, wrote)
	require.Equal(t, 11*time.Minute, c.RequeueAfter())
	require.True(t, c.LastContact().After(before), "a recorded heartbeat is contact, for the self-fencing")
	two, err := b.store.ClusterGet(ctx, "two")
	require.NoError(t, err)
	require.Equal(t, "agent:two:w1", two.Agent, "the heartbeat is two's, whatever it named")
	def, err := b.store.ClusterGet(ctx, cluster.Default)
	require.NoError(t, err)
	require.True(t, def.HeartbeatTime.IsZero(), "default was not touched")

	require.NoError(t, c.JobRelease(ctx, "w1", there))
	require.NoError(t, c.JobReleaseAll(ctx, "w1"))
	_, _, err = c.JobCounts(ctx)
	require.Error(t, err)

	// A token with the wrong audience reaches nothing: unavailable to the
	// worker (retried), unauthenticated on the wire.
	bad := b.client(t, saToken(t, b.key, "https://kubernetes.default.svc"))
	_, err = bad.JobLoad(ctx, there.Tenant, there.UID)
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.ErrorContains(t, err, "Unauthenticated")
}

// Secret values go to an agent only for a tenant that is ACTIVE and
// allowed in its cluster, and only for versions it does not hold; a
// tenant kept to cluster default, or being offboarded, is NOT_FOUND to
// cluster two's agent although its values are right there at home.
func TestClientTenantSecretsOnlyWhereAllowed(t *testing.T) {
	b := setup(t)
	ctx := b.ctx
	for _, tn := range []tenant.Tenant{
		{ID: "acme", Namespace: "ty-acme"},
		{ID: "both", Namespace: "ty-both", Clusters: []string{cluster.Default, "two"}},
		{ID: "homeonly", Namespace: "ty-homeonly", Clusters: []string{cluster.Default}},
		{ID: "leaving", Namespace: "ty-leaving"},
	} {
		_, err := b.store.TenantCreate(ctx, tn)
		require.NoError(t, err)
		// As PutSecret: the values in the home cluster, the names in Postgres.
		_, err = b.home.CoreV1().Secrets(tn.Namespace).Create(ctx,
			kube.RenderSecret(tn.ID, tn.Namespace, "db", map[string]string{"password": "pw-of-" + tn.ID}), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = b.store.SecretPut(ctx, tenant.Secret{Tenant: tn.ID, Name: "db", Keys: []string{"password"}})
		require.NoError(t, err)
	}
	_, err := b.store.TenantUpdate(ctx, "leaving", func(tn *tenant.Tenant) error { tn.State = tenant.Offboarding; return nil })
	require.NoError(t, err)
	c := b.client(t, saToken(t, b.key, "trainyard"))

	for _, id := range []string{"acme", "both"} {
		got, err := c.TenantSecrets(ctx, id, nil)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "db", got[0].Name)
		require.Equal(t, map[string][]byte{"password": []byte("pw-of-" + id)}, got[0].Data)
		require.NotEmpty(t, got[0].Version)

		again, err := c.TenantSecrets(ctx, id, map[string]string{"db": got[0].Version})
		require.NoError(t, err)
		require.Equal(t, []tenant.SecretCopy{{Name: "db", Version: got[0].Version, Unchanged: true}}, again, "no value for a version held")
	}
	for _, id := range []string{"homeonly", "leaving", "ghost"} {
		got, err := c.TenantSecrets(ctx, id, nil)
		require.ErrorIs(t, err, store.ErrNotFound, "tenant %s", id)
		require.Empty(t, got)
	}
	reads := 0
	for _, a := range b.home.Actions() {
		if a.GetVerb() == "get" {
			reads++
			require.Contains(t, []string{"ty-acme", "ty-both"}, a.GetNamespace(), "never read for a tenant two does not host")
		}
	}
	require.Equal(t, 2, reads, "one read per secret, none for a version held")

	_, err = b.client(t, saToken(t, b.key, "https://kubernetes.default.svc")).TenantSecrets(ctx, "acme", nil)
	require.ErrorIs(t, err, store.ErrUnavailable, "another audience's token")
}
