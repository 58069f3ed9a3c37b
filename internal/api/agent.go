package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/agentwire"
	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// AgentService (issue 45): the remote clusters' agents' storage, served
// by the API server so that an agent holds no database credentials. The
// interceptor let only an agent in (auth.PermAgent), and Principal.Cluster
// is the one cluster its token speaks for. Every call is scoped to it:
//
//   - claims, renewals and the orphan sweep's reads go through a store
//     scoped to the cluster (store.InCluster): the claim's SQL takes only
//     jobs admitted there, a load finds only them (JobLoadInCluster: any
//     other job is NOT_FOUND, as a missing one);
//   - worker ids are the server's: "agent:<cluster>:<id>". A row's
//     worker_id gets such an id only from a claim in that cluster, and
//     every fenced write (save, park, purge) matches the row's worker_id
//     in SQL, so an agent can write only jobs its own cluster claimed, and
//     can neither renew nor write under another cluster's or a local
//     worker's lease;
//   - the heartbeat names the agent's cluster, whatever the request says;
//   - tenants come without their members;
//   - secret values go only to an agent of a cluster the tenant is
//     allowed in, for an ACTIVE tenant; any other tenant is NOT_FOUND.
//     They are read in the API server's own cluster (the home cluster,
//     where PutSecret writes them) only for secrets whose version the
//     agent does not hold.

// AgentStore is the part of *store.Store that AgentServer uses, for one
// cluster (store.Store.InCluster).
type AgentStore interface {
	JobClaim(ctx context.Context, workerID string, limit int, ttl time.Duration) ([]store.WorkerJob, error)
	JobLeaseExtend(ctx context.Context, workerID string, ttl time.Duration) (bool, error)
	JobLeaseRenew(ctx context.Context, workerID string, ttl time.Duration) ([]store.JobKey, error)
	JobRelease(ctx context.Context, workerID string, keys ...store.JobKey) error
	JobReleaseAll(ctx context.Context, workerID string) error
	JobLoadInCluster(ctx context.Context, tenantID, uid string) (store.WorkerJob, error)
	JobSave(ctx context.Context, p store.JobSaveParams) (int64, error)
	JobPark(ctx context.Context, workerID, tenantID, uid string, version int64, after time.Duration) error
	JobPurge(ctx context.Context, workerID, tenantID, uid string) error
	JobListByKeys(ctx context.Context, keys []store.JobKey) ([]store.JobBrief, error)
	TenantGet(ctx context.Context, id string) (tenant.Tenant, error)
	TenantListAll(ctx context.Context) ([]tenant.Tenant, error)
	SecretList(ctx context.Context, tenantID string) ([]tenant.Secret, error)
	ClusterHeartbeat(ctx context.Context, p store.ClusterHeartbeatParams) (bool, error)
}

// AgentConfig configures an AgentServer.
type AgentConfig struct {
	// Store returns the store of one cluster's workers. Required.
	Store func(cluster string) AgentStore
	// RequeueAfter is when a silent cluster's jobs go elsewhere (the
	// workers' --cluster-timeout plus --cluster-lost-grace), told to
	// agents with each heartbeat for their self-fencing.
	RequeueAfter time.Duration
	// Secrets reads tenant secrets' values in the home cluster
	// (*kube.Clusters). Optional: without it ListAgentSecrets is
	// FAILED_PRECONDITION.
	Secrets SecretCopier
	Logger  *slog.Logger
}

// SecretCopier reads tenant Secrets where the API server writes them
// (kube.HomeSecrets.Copies).
type SecretCopier interface {
	SecretCopies(ctx context.Context, namespace string, secrets []tenant.Secret, have map[string]string) ([]tenant.SecretCopy, error)
}

// AgentServer implements trainyard.v1.AgentService.
type AgentServer struct {
	pb.UnimplementedAgentServiceServer
	cfg AgentConfig
	log *slog.Logger
}

// NewAgentServer returns the AgentService implementation.
func NewAgentServer(cfg AgentConfig) (*AgentServer, error) {
	if cfg.Store == nil {
		return nil, errors.New("api: AgentConfig.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &AgentServer{cfg: cfg, log: cfg.Logger.With("component", "agent-service")}, nil
}

// MaxAgentWorkerID bounds the worker id an agent names.
const MaxAgentWorkerID = 120

// agentCall is one call's cluster and its store.
type agentCall struct {
	cluster string
	st      AgentStore
}

// call finds the calling agent's cluster. The interceptor admits only
// agents; this refuses anything else again, in case it is ever bypassed.
func (s *AgentServer) call(ctx context.Context) (agentCall, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Cluster == "" {
		return agentCall{}, status.Error(codes.PermissionDenied, "permission denied: only a cluster agent may call AgentService")
	}
	return agentCall{cluster: p.Cluster, st: s.cfg.Store(p.Cluster)}, nil
}

// worker scopes the agent's worker id to its cluster.
func (c agentCall) worker(id string) (string, error) {
	switch {
	case id == "":
		return "", invalid(job.FieldViolation{Field: "workerId", Description: "is required"})
	case len(id) > MaxAgentWorkerID:
		return "", invalid(job.FieldViolation{Field: "workerId", Description: fmt.Sprintf("is %d bytes; at most %d are allowed", len(id), MaxAgentWorkerID)})
	}
	return c.prefix() + id, nil
}

func (c agentCall) prefix() string { return "agent:" + c.cluster + ":" }

// owner is a row's owner as the agent may see it: its own ids unscoped,
// anyone else's as "-".
func (c agentCall) owner(workerID string) string {
	if workerID == "" {
		return ""
	}
	if id, ok := strings.CutPrefix(workerID, c.prefix()); ok {
		return id
	}
	return "-"
}

func (c agentCall) jobs(ws []store.WorkerJob) ([]*pb.AgentJob, error) {
	out := make([]*pb.AgentJob, 0, len(ws))
	for _, w := range ws {
		j, err := agentwire.Job(w, c.owner(w.WorkerID))
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// fenceError gives the fence's errors a reason the agent's client can
// tell apart (both ABORTED), and passes the others to the one mapping.
func fenceError(err error) error {
	reason := ""
	code := codes.Aborted
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		reason = agentwire.ReasonLeaseLost
	case errors.Is(err, store.ErrConflict):
		reason = agentwire.ReasonConflict
	case errors.Is(err, store.ErrFailedPrecondition):
		reason, code = agentwire.ReasonPrecondFail, codes.FailedPrecondition
	default:
		return err
	}
	st := status.New(code, err.Error())
	if d, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: agentwire.ErrorDomain}); derr == nil {
		st = d
	}
	return st.Err()
}

func invalidTTL(field string) error {
	return invalid(job.FieldViolation{Field: field, Description: "must be between 1s and 10m"})
}

func ttlOf(field string, d time.Duration) (time.Duration, error) {
	if d < time.Second || d > 10*time.Minute {
		return 0, invalidTTL(field)
	}
	return d, nil
}

func (s *AgentServer) ClaimJobs(ctx context.Context, req *pb.ClaimJobsRequest) (*pb.ClaimJobsResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	wid, err := c.worker(req.GetWorkerId())
	if err != nil {
		return nil, err
	}
	ttl, err := ttlOf("ttl", agentwire.Duration(req.GetTtl()))
	if err != nil {
		return nil, err
	}
	limit := int(req.GetLimit())
	if limit < 0 || limit > 1000 {
		return nil, invalid(job.FieldViolation{Field: "limit", Description: "must be between 0 and 1000"})
	}
	ws, err := c.st.JobClaim(ctx, wid, limit, ttl)
	if err != nil {
		return nil, err
	}
	jobs, err := c.jobs(ws)
	if err != nil {
		return nil, err
	}
	return &pb.ClaimJobsResponse{Jobs: jobs}, nil
}

func (s *AgentServer) ExtendLease(ctx context.Context, req *pb.ExtendLeaseRequest) (*pb.ExtendLeaseResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	wid, err := c.worker(req.GetWorkerId())
	if err != nil {
		return nil, err
	}
	ttl, err := ttlOf("ttl", agentwire.Duration(req.GetTtl()))
	if err != nil {
		return nil, err
	}
	live, err := c.st.JobLeaseExtend(ctx, wid, ttl)
	if err != nil {
		return nil, err
	}
	return &pb.ExtendLeaseResponse{Live: live}, nil
}

func (s *AgentServer) RenewLease(ctx context.Context, req *pb.RenewLeaseRequest) (*pb.RenewLeaseResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	wid, err := c.worker(req.GetWorkerId())
	if err != nil {
		return nil, err
	}
	ttl, err := ttlOf("ttl", agentwire.Duration(req.GetTtl()))
	if err != nil {
		return nil, err
	}
	keys, err := c.st.JobLeaseRenew(ctx, wid, ttl)
	if err != nil {
		return nil, err
	}
	return &pb.RenewLeaseResponse{Keys: agentwire.Keys(keys)}, nil
}

func (s *AgentServer) ReleaseJobs(ctx context.Context, req *pb.ReleaseJobsRequest) (*pb.ReleaseJobsResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	wid, err := c.worker(req.GetWorkerId())
	if err != nil {
		return nil, err
	}
	if err := c.st.JobRelease(ctx, wid, agentwire.KeysOf(req.GetKeys())...); err != nil {
		return nil, err
	}
	return &pb.ReleaseJobsResponse{}, nil
}

func (s *AgentServer) ReleaseAllJobs(ctx context.Context, req *pb.ReleaseAllJobsRequest) (*pb.ReleaseAllJobsResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	wid, err := c.worker(req.GetWorkerId())
	if err != nil {
		return nil, err
	}
	if err := c.st.JobReleaseAll(ctx, wid); err != nil {
		return nil, err
	}
	return &pb.ReleaseAllJobsResponse{}, nil
}

func (s *AgentServer) LoadJob(ctx context.Context, req *pb.LoadJobRequest) (*pb.LoadJobResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	k := agentwire.KeyOf(req.GetKey())
	w, err := c.st.JobLoadInCluster(ctx, k.Tenant, k.UID)
	if err != nil {
		return nil, err
	}
	j, err := agentwire.Job(w, c.owner(w.WorkerID))
	if err != nil {
		return nil, err
	}
	return &pb.LoadJobResponse{Job: j}, nil
}

func (s *AgentServer) SaveJob(ctx context.Context, req *pb.SaveJobRequest) (*pb.SaveJobResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	wid, err := c.worker(req.GetWorkerId())
	if err != nil {
		return nil, err
	}
	p, err := agentwire.SaveOf(req)
	if err != nil {
		return nil, invalid(job.FieldViolation{Field: "status", Description: err.Error()})
	}
	p.WorkerID = wid
	v, err := c.st.JobSave(ctx, p)
	if err != nil {
		return nil, fenceError(err)
	}
	return &pb.SaveJobResponse{Version: v}, nil
}

func (s *AgentServer) ParkJob(ctx context.Context, req *pb.ParkJobRequest) (*pb.ParkJobResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	wid, err := c.worker(req.GetWorkerId())
	if err != nil {
		return nil, err
	}
	k := agentwire.KeyOf(req.GetKey())
	if err := c.st.JobPark(ctx, wid, k.Tenant, k.UID, req.GetVersion(), agentwire.Duration(req.GetAfter())); err != nil {
		return nil, fenceError(err)
	}
	return &pb.ParkJobResponse{}, nil
}

func (s *AgentServer) PurgeJob(ctx context.Context, req *pb.PurgeJobRequest) (*pb.PurgeJobResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	wid, err := c.worker(req.GetWorkerId())
	if err != nil {
		return nil, err
	}
	k := agentwire.KeyOf(req.GetKey())
	if err := c.st.JobPurge(ctx, wid, k.Tenant, k.UID); err != nil {
		return nil, fenceError(err)
	}
	return &pb.PurgeJobResponse{}, nil
}

// MaxAgentKeys bounds one ListJobsByKeys.
const MaxAgentKeys = 5000

func (s *AgentServer) ListJobsByKeys(ctx context.Context, req *pb.ListJobsByKeysRequest) (*pb.ListJobsByKeysResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	if len(req.GetKeys()) > MaxAgentKeys {
		return nil, invalid(job.FieldViolation{Field: "keys", Description: fmt.Sprintf("at most %d keys at once", MaxAgentKeys)})
	}
	briefs, err := c.st.JobListByKeys(ctx, agentwire.KeysOf(req.GetKeys()))
	if err != nil {
		return nil, err
	}
	out := &pb.ListJobsByKeysResponse{}
	for _, b := range briefs {
		if b.Elsewhere {
			// Another cluster's job (or one in the queue): the agent learns
			// only that nothing of it in its cluster is its own.
			b = store.JobBrief{Key: b.Key, Elsewhere: true}
		}
		out.Jobs = append(out.Jobs, agentwire.Brief(b))
	}
	return out, nil
}

func (s *AgentServer) GetAgentTenant(ctx context.Context, req *pb.GetAgentTenantRequest) (*pb.GetAgentTenantResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	t, err := c.st.TenantGet(ctx, req.GetTenant())
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(agentwire.ForAgent(t))
	if err != nil {
		return nil, err
	}
	return &pb.GetAgentTenantResponse{Tenant: doc}, nil
}

func (s *AgentServer) ListAgentTenants(ctx context.Context, _ *pb.ListAgentTenantsRequest) (*pb.ListAgentTenantsResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	ts, err := c.st.TenantListAll(ctx)
	if err != nil {
		return nil, err
	}
	for i := range ts {
		ts[i] = agentwire.ForAgent(ts[i])
	}
	doc, err := json.Marshal(ts)
	if err != nil {
		return nil, err
	}
	return &pb.ListAgentTenantsResponse{Tenants: doc}, nil
}

// MaxAgentSecretHave bounds the versions one ListAgentSecrets names.
const MaxAgentSecretHave = 1000

func (s *AgentServer) ListAgentSecrets(ctx context.Context, req *pb.ListAgentSecretsRequest) (*pb.ListAgentSecretsResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	if len(req.GetHave()) > MaxAgentSecretHave {
		return nil, invalid(job.FieldViolation{Field: "have", Description: fmt.Sprintf("at most %d secrets at once", MaxAgentSecretHave)})
	}
	t, err := c.st.TenantGet(ctx, req.GetTenant())
	if err != nil {
		return nil, err
	}
	if t.State != tenant.Active || !t.AllowedIn(c.cluster) {
		// As a tenant that does not exist: an agent learns nothing of
		// the secrets of a tenant it does not host.
		return nil, fmt.Errorf("%w: tenant %q has no secrets for cluster %q", store.ErrNotFound, t.ID, c.cluster)
	}
	if s.cfg.Secrets == nil {
		return nil, status.Error(codes.FailedPrecondition, "this server has no Kubernetes cluster configured to keep secret values")
	}
	metas, err := c.st.SecretList(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	copies, err := s.cfg.Secrets.SecretCopies(ctx, t.Namespace, metas, req.GetHave())
	if err != nil {
		return nil, err
	}
	out := &pb.ListAgentSecretsResponse{Secrets: make([]*pb.AgentSecret, 0, len(copies))}
	for _, sc := range copies {
		out.Secrets = append(out.Secrets, &pb.AgentSecret{Name: sc.Name, Version: sc.Version, Data: sc.Data, Unchanged: sc.Unchanged})
	}
	return out, nil
}

func (s *AgentServer) AgentHeartbeat(ctx context.Context, req *pb.AgentHeartbeatRequest) (*pb.AgentHeartbeatResponse, error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	wid, err := c.worker(req.GetAgent())
	if err != nil {
		return nil, err
	}
	p, err := agentwire.HeartbeatOf(req)
	if err != nil {
		return nil, invalid(job.FieldViolation{Field: "nodes", Description: err.Error()})
	}
	p.Cluster, p.Agent = c.cluster, wid
	wrote, err := c.st.ClusterHeartbeat(ctx, p)
	if err != nil {
		return nil, err
	}
	return &pb.AgentHeartbeatResponse{NodesWritten: wrote, RequeueAfter: agentwire.Dur(s.cfg.RequeueAfter)}, nil
}
