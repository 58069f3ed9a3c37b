// Package agentclient is a remote cluster's agent's storage: the worker's
// store (worker.Store, worker.ClusterStore, and what the tenant reconciler
// reads: tenants and, for its copies, their secrets) over the API
// server's AgentService, so that the agent holds no database credentials
// (issue 45). `trainyard worker --control-plane` builds one.
//
//	worker / tenant reconciler / cluster agent
//	        │ worker.Store, ClusterStore, tenantctl.Store
//	        ▼
//	agentclient.Client ── gRPC, bearer: the cluster's ServiceAccount token ──► API server
//	                                                     AgentService ─► Postgres
//
// Errors come back as the store's sentinels (store.ErrNotFound,
// ErrLeaseLost, ErrConflict, ErrFailedPrecondition, ErrUnavailable), so the
// worker's reactions are those it has with Postgres: a call that could not
// reach the control plane is ErrUnavailable, retried. What needs the whole
// database (the queue's counts, offboarding's writes) is not available
// here: those parts run on the control plane's side.
//
// The token is read from its file (a projected ServiceAccount token, which
// the kubelet rotates) and read again when the file changes. The client
// remembers when the control plane last recorded its heartbeat
// (LastContact) and what that heartbeat answered (RequeueAfter), for the
// agent's self-fencing (worker.SelfFence).
package agentclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/agentwire"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Config configures a Client.
type Config struct {
	// Address is the API server's gRPC address (host:port). Required.
	Address string
	// TokenFile holds the agent's ServiceAccount token. Required.
	TokenFile string
	// CAFile verifies the server's certificate (PEM); empty: the system's
	// roots. Ignored with Plaintext.
	CAFile string
	// Plaintext connects without TLS (loopback, a mesh); the token then
	// travels in the clear.
	Plaintext bool
	// CallTimeout bounds a call whose context has no deadline. Defaults
	// to 15s.
	CallTimeout time.Duration
}

// Client is the agent's storage over AgentService. Safe for concurrent use.
type Client struct {
	cfg  Config
	conn *grpc.ClientConn
	api  pb.AgentServiceClient
	tok  *tokenFile

	contact      atomic.Int64 // unix nanos of the last heartbeat the control plane recorded
	requeueAfter atomic.Int64 // nanos, from the last heartbeat
}

// New connects (lazily: the first call dials).
func New(cfg Config) (*Client, error) {
	if cfg.Address == "" || cfg.TokenFile == "" {
		return nil, errors.New("agentclient: Address and TokenFile are required")
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 15 * time.Second
	}
	tok := &tokenFile{path: cfg.TokenFile}
	if _, err := tok.get(); err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if !cfg.Plaintext {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.CAFile != "" {
			pem, err := os.ReadFile(cfg.CAFile)
			if err != nil {
				return nil, fmt.Errorf("agentclient: CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("agentclient: CA file %s holds no PEM certificate", cfg.CAFile)
			}
			tc.RootCAs = pool
		}
		creds = credentials.NewTLS(tc)
	}
	conn, err := grpc.NewClient(cfg.Address, grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(bearer{tok: tok, requireTLS: !cfg.Plaintext}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, fmt.Errorf("agentclient: %w", err)
	}
	c := &Client{cfg: cfg, conn: conn, api: pb.NewAgentServiceClient(conn), tok: tok}
	c.contact.Store(time.Now().UnixNano())
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// LastContact is when the control plane last recorded a heartbeat of
// this agent's (or when the client was made): the control plane's clock
// towards requeueing the cluster's jobs runs from its last heartbeat, so
// the agent's self-fencing does too. Other calls do not count: a control
// plane that answers them but cannot record heartbeats (its database is
// down) still counts the cluster as silent.
func (c *Client) LastContact() time.Time { return time.Unix(0, c.contact.Load()) }

// RequeueAfter is what the last heartbeat said: how long after the
// cluster's last heartbeat the control plane gives its jobs to other
// clusters. 0 until a heartbeat answered.
func (c *Client) RequeueAfter() time.Duration { return time.Duration(c.requeueAfter.Load()) }

// ctx bounds a call without a deadline.
func (c *Client) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.cfg.CallTimeout)
}

// done translates the error.
func (c *Client) done(err error, what string) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%w: %s: %v", store.ErrUnavailable, what, err)
	}
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Unauthenticated, codes.Canceled:
		// Not heard, or not believed (a token being rotated): retried.
		return fmt.Errorf("%w: %s: %s: %s", store.ErrUnavailable, what, st.Code(), st.Message())
	}
	reason := ""
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == agentwire.ErrorDomain {
			reason = info.GetReason()
		}
	}
	switch {
	case st.Code() == codes.NotFound:
		return fmt.Errorf("%w: %s", store.ErrNotFound, st.Message())
	case reason == agentwire.ReasonLeaseLost:
		return fmt.Errorf("%w: %s", store.ErrLeaseLost, st.Message())
	case reason == agentwire.ReasonConflict, st.Code() == codes.Aborted:
		return fmt.Errorf("%w: %s", store.ErrConflict, st.Message())
	case st.Code() == codes.FailedPrecondition:
		return fmt.Errorf("%w: %s", store.ErrFailedPrecondition, st.Message())
	}
	return fmt.Errorf("agentclient: %s: %s: %s", what, st.Code(), st.Message())
}

func jobsOf(in []*pb.AgentJob) ([]store.WorkerJob, error) {
	out := make([]store.WorkerJob, 0, len(in))
	for _, j := range in {
		w, err := agentwire.JobOf(j)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// JobClaim claims jobs of the agent's cluster.
func (c *Client) JobClaim(ctx context.Context, workerID string, limit int, ttl time.Duration) ([]store.WorkerJob, error) {
	if limit <= 0 {
		return nil, nil
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.api.ClaimJobs(ctx, &pb.ClaimJobsRequest{WorkerId: workerID, Limit: int32(min(limit, 1000)), Ttl: agentwire.Dur(ttl)})
	if err := c.done(err, "job claim"); err != nil {
		return nil, err
	}
	return jobsOf(r.GetJobs())
}

// JobLeaseExtend extends a live lease.
func (c *Client) JobLeaseExtend(ctx context.Context, workerID string, ttl time.Duration) (bool, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.api.ExtendLease(ctx, &pb.ExtendLeaseRequest{WorkerId: workerID, Ttl: agentwire.Dur(ttl)})
	return r.GetLive(), c.done(err, "lease renewal")
}

// JobLeaseRenew renews the lease and lists the jobs owned.
func (c *Client) JobLeaseRenew(ctx context.Context, workerID string, ttl time.Duration) ([]store.JobKey, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.api.RenewLease(ctx, &pb.RenewLeaseRequest{WorkerId: workerID, Ttl: agentwire.Dur(ttl)})
	if err := c.done(err, "lease renewal"); err != nil {
		return nil, err
	}
	return agentwire.KeysOf(r.GetKeys()), nil
}

// JobRelease gives jobs up.
func (c *Client) JobRelease(ctx context.Context, workerID string, keys ...store.JobKey) error {
	if len(keys) == 0 {
		return nil
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	_, err := c.api.ReleaseJobs(ctx, &pb.ReleaseJobsRequest{WorkerId: workerID, Keys: agentwire.Keys(keys)})
	return c.done(err, "job release")
}

// JobReleaseAll gives everything up, and the lease.
func (c *Client) JobReleaseAll(ctx context.Context, workerID string) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	_, err := c.api.ReleaseAllJobs(ctx, &pb.ReleaseAllJobsRequest{WorkerId: workerID})
	return c.done(err, "job release")
}

// JobLoad reads one job of the agent's cluster (another cluster's is
// store.ErrNotFound).
func (c *Client) JobLoad(ctx context.Context, tenantID, uid string) (store.WorkerJob, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.api.LoadJob(ctx, &pb.LoadJobRequest{Key: agentwire.Key(store.JobKey{Tenant: tenantID, UID: uid})})
	if err := c.done(err, "job load"); err != nil {
		return store.WorkerJob{}, err
	}
	return agentwire.JobOf(r.GetJob())
}

// JobSave writes a job's status (fenced).
func (c *Client) JobSave(ctx context.Context, p store.JobSaveParams) (int64, error) {
	req, err := agentwire.Save(p)
	if err != nil {
		return 0, err
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.api.SaveJob(ctx, req)
	return r.GetVersion(), c.done(err, "job save")
}

// JobPark lets a finished job go for a while (fenced).
func (c *Client) JobPark(ctx context.Context, workerID, tenantID, uid string, version int64, after time.Duration) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	_, err := c.api.ParkJob(ctx, &pb.ParkJobRequest{WorkerId: workerID, Key: agentwire.Key(store.JobKey{Tenant: tenantID, UID: uid}),
		Version: version, After: agentwire.Dur(after)})
	return c.done(err, "job park")
}

// JobPurge removes a deleted job's row (fenced).
func (c *Client) JobPurge(ctx context.Context, workerID, tenantID, uid string) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	_, err := c.api.PurgeJob(ctx, &pb.PurgeJobRequest{WorkerId: workerID, Key: agentwire.Key(store.JobKey{Tenant: tenantID, UID: uid})})
	return c.done(err, "job purge")
}

// JobListByKeys says what is known of keys, in batches the server takes.
func (c *Client) JobListByKeys(ctx context.Context, keys []store.JobKey) ([]store.JobBrief, error) {
	var out []store.JobBrief
	for len(keys) > 0 {
		n := min(len(keys), 5000)
		batch := keys[:n]
		keys = keys[n:]
		cctx, cancel := c.ctx(ctx)
		r, err := c.api.ListJobsByKeys(cctx, &pb.ListJobsByKeysRequest{Keys: agentwire.Keys(batch)})
		cancel()
		if err := c.done(err, "jobs"); err != nil {
			return nil, err
		}
		for _, b := range r.GetJobs() {
			out = append(out, agentwire.BriefOf(b))
		}
	}
	return out, nil
}

// errRemote: what only the control plane does.
var errRemote = errors.New("not available to a remote agent: the control plane does it")

// JobCounts is the queue's, not a remote agent's: always an error (the
// worker's queue metrics then say trainyard_queue_up 0 in a remote agent).
func (c *Client) JobCounts(context.Context) (map[job.State]int64, int64, error) {
	return nil, 0, fmt.Errorf("job counts: %w", errRemote)
}

// TenantGet reads a tenant (without its members).
func (c *Client) TenantGet(ctx context.Context, id string) (tenant.Tenant, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.api.GetAgentTenant(ctx, &pb.GetAgentTenantRequest{Tenant: id})
	if err := c.done(err, "tenant"); err != nil {
		return tenant.Tenant{}, err
	}
	var t tenant.Tenant
	if err := json.Unmarshal(r.GetTenant(), &t); err != nil {
		return tenant.Tenant{}, fmt.Errorf("agentclient: tenant: %w", err)
	}
	return t, nil
}

// TenantListAll lists every tenant (without members).
func (c *Client) TenantListAll(ctx context.Context) ([]tenant.Tenant, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.api.ListAgentTenants(ctx, &pb.ListAgentTenantsRequest{})
	if err := c.done(err, "tenants"); err != nil {
		return nil, err
	}
	var ts []tenant.Tenant
	if err := json.Unmarshal(r.GetTenants(), &ts); err != nil {
		return nil, fmt.Errorf("agentclient: tenants: %w", err)
	}
	return ts, nil
}

// TenantSecrets reads a tenant's secrets for the copies the agent keeps:
// values only of those not at the version have names. A tenant that is
// not ACTIVE or not allowed in the agent's cluster is store.ErrNotFound.
func (c *Client) TenantSecrets(ctx context.Context, tenantID string, have map[string]string) ([]tenant.SecretCopy, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.api.ListAgentSecrets(ctx, &pb.ListAgentSecretsRequest{Tenant: tenantID, Have: have})
	if err := c.done(err, "tenant secrets"); err != nil {
		return nil, err
	}
	out := make([]tenant.SecretCopy, 0, len(r.GetSecrets()))
	for _, s := range r.GetSecrets() {
		out = append(out, tenant.SecretCopy{Name: s.GetName(), Version: s.GetVersion(), Data: s.GetData(), Unchanged: s.GetUnchanged()})
	}
	return out, nil
}

// ClusterHeartbeat reports the agent's cluster (the server decides which:
// p.Cluster is not sent).
func (c *Client) ClusterHeartbeat(ctx context.Context, p store.ClusterHeartbeatParams) (bool, error) {
	req, err := agentwire.Heartbeat(p)
	if err != nil {
		return false, err
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	// The control plane stamps the heartbeat after this: a lower bound.
	sent := time.Now()
	r, err := c.api.AgentHeartbeat(ctx, req)
	if err := c.done(err, "cluster heartbeat"); err != nil {
		return false, err
	}
	c.contact.Store(sent.UnixNano())
	c.requeueAfter.Store(int64(agentwire.Duration(r.GetRequeueAfter())))
	return r.GetNodesWritten(), nil
}

// ClusterSweep and ClusterRequeueLost are the scheduler lease holder's,
// which a remote agent never holds.
func (c *Client) ClusterSweep(context.Context, time.Duration) ([]store.ClusterHealth, error) {
	return nil, fmt.Errorf("cluster sweep: %w", errRemote)
}

// ClusterRequeueLost: see ClusterSweep.
func (c *Client) ClusterRequeueLost(context.Context, string, string, time.Duration) ([]store.JobKey, error) {
	return nil, fmt.Errorf("lost cluster requeue: %w", errRemote)
}

// The tenant reconciler's offboarding writes are the control plane's
// (tenantctl.Config.Remote keeps a remote agent from calling them).

// TenantUpdate: see errRemote.
func (c *Client) TenantUpdate(context.Context, string, func(*tenant.Tenant) error) (tenant.Tenant, error) {
	return tenant.Tenant{}, fmt.Errorf("tenant update: %w", errRemote)
}

// JobListActiveByTenant: see errRemote.
func (c *Client) JobListActiveByTenant(context.Context, string) ([]store.JobKey, error) {
	return nil, fmt.Errorf("jobs of a tenant: %w", errRemote)
}

// JobCancel: see errRemote.
func (c *Client) JobCancel(context.Context, string, string) (job.Job, error) {
	return job.Job{}, fmt.Errorf("job cancel: %w", errRemote)
}

// SecretList: see errRemote.
func (c *Client) SecretList(context.Context, string) ([]tenant.Secret, error) {
	return nil, fmt.Errorf("secrets: %w", errRemote)
}

// SecretDelete: see errRemote.
func (c *Client) SecretDelete(context.Context, string, string) error {
	return fmt.Errorf("secret delete: %w", errRemote)
}

// tokenFile reads the token, again when the file changed (the kubelet
// rewrites a projected token before it expires).
type tokenFile struct {
	path string

	mu    sync.Mutex
	token string
	mod   time.Time
	read  time.Time
}

func (t *tokenFile) get() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && time.Since(t.read) < 5*time.Second {
		return t.token, nil
	}
	fi, err := os.Stat(t.path)
	if err != nil {
		if t.token != "" {
			return t.token, nil // being swapped; the next call reads it
		}
		return "", fmt.Errorf("agentclient: token file: %w", err)
	}
	t.read = time.Now()
	if t.token != "" && fi.ModTime().Equal(t.mod) {
		return t.token, nil
	}
	b, err := os.ReadFile(t.path)
	if err != nil {
		return "", fmt.Errorf("agentclient: token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("agentclient: token file %s is empty", t.path)
	}
	t.token, t.mod = tok, fi.ModTime()
	return tok, nil
}

// bearer sends the token with every call.
type bearer struct {
	tok        *tokenFile
	requireTLS bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	tok, err := b.tok.get()
	if err != nil {
		return nil, err
	}
	return map[string]string{"authorization": "Bearer " + tok}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.requireTLS }
