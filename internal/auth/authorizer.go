package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/resname"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// TenantSource looks tenants up for the Authorizer. TenantGet must return
// the tenant with its State and complete Members list, and an error that
// errors.Is ErrTenantNotFound when there is no tenant with that id.
type TenantSource interface {
	TenantGet(ctx context.Context, id string) (tenant.Tenant, error)
}

// TenantSourceFunc adapts a function to TenantSource.
type TenantSourceFunc func(ctx context.Context, id string) (tenant.Tenant, error)

// TenantGet calls f.
func (f TenantSourceFunc) TenantGet(ctx context.Context, id string) (tenant.Tenant, error) {
	return f(ctx, id)
}

// ErrTenantNotFound is what a TenantSource returns (or wraps) for an
// unknown tenant id.
var ErrTenantNotFound = errors.New("tenant not found")

// ErrTenantSourceUnavailable is what a TenantSource returns (or wraps) when
// it cannot answer right now (its database is down): the caller gets
// UNAVAILABLE and retries, rather than INTERNAL.
var ErrTenantSourceUnavailable = errors.New("tenant lookup unavailable")

// Permission is what a method requires of its caller.
type Permission int

const (
	// PermDeny is the zero value: nobody may call.
	PermDeny Permission = iota
	// PermAuthenticated: any authenticated caller; the handler filters.
	PermAuthenticated
	// PermTenantViewer, PermTenantEditor and PermTenantAdmin need at least
	// that role in the tenant the request names.
	PermTenantViewer
	PermTenantEditor
	PermTenantAdmin
	// PermPlatformAdmin needs the platform admin group.
	PermPlatformAdmin
	// PermAgent: a remote cluster's agent (Principal.Cluster), and only
	// one; the handler scopes everything to its cluster.
	PermAgent
)

func (p Permission) String() string {
	switch p {
	case PermAuthenticated:
		return "authenticated"
	case PermTenantViewer:
		return "tenant viewer"
	case PermTenantEditor:
		return "tenant editor"
	case PermTenantAdmin:
		return "tenant admin"
	case PermPlatformAdmin:
		return "platform admin"
	case PermAgent:
		return "cluster agent"
	}
	return "deny"
}

// Role is the tenant role p requires (admin for PermPlatformAdmin; none for
// the permissions that need no tenant role).
func (p Permission) Role() tenant.Role {
	switch p {
	case PermTenantViewer:
		return tenant.RoleViewer
	case PermTenantEditor:
		return tenant.RoleEditor
	case PermTenantAdmin, PermPlatformAdmin:
		return tenant.RoleAdmin
	}
	return tenant.RoleNone
}

// rule is one row of the method table.
type rule struct {
	perm Permission
	// write methods are refused while the tenant is not ACTIVE.
	write bool
	// field is the request field holding the resource name, as the caller
	// knows it ("parent", "secret.name"); empty when the method names no
	// tenant.
	field   string
	pattern resname.Pattern
	name    func(req any) (string, bool)
	// platformWithoutName: a request naming no resource (an empty name
	// field) asks about every tenant, which only platform admins may.
	platformWithoutName bool
	// platformWildcard: the name tenants/- (AIP-159) asks about every
	// tenant, which only platform admins may.
	platformWildcard bool
	// rechecked says of a request that the handler's write checks the
	// caller's role and the tenant's state again in its own transaction,
	// and reads nothing of the tenant's before it, so the Authorizer may
	// allow it from a remembered tenant record (TenantCache). Nil: never.
	rechecked func(req any) bool
}

// named builds a rule for a method whose request names a tenant resource.
func named[T any](perm Permission, write bool, field string, pattern resname.Pattern, get func(T) string) rule {
	return rule{perm: perm, write: write, field: field, pattern: pattern, name: func(req any) (string, bool) {
		r, ok := req.(T)
		if !ok {
			return "", false
		}
		return get(r), true
	}}
}

const (
	read  = false
	write = true
)

// rules is the whole access policy: every method of every Trainyard
// service, and nothing else. A method missing here is denied.
var rules = map[string]rule{
	// Its statement checks the caller's role and the tenant's state
	// (store.JobCreateParams.Caller); with a request id, the handler reads
	// the earlier request's job first, so such calls are decided on a read.
	pb.JobService_CreateJob_FullMethodName: rechecked(named(PermTenantEditor, write, "parent", resname.Tenant, (*pb.CreateJobRequest).GetParent),
		func(r *pb.CreateJobRequest) bool { return r.GetRequestId() == "" }),
	pb.JobService_GetJob_FullMethodName:        named(PermTenantViewer, read, "name", resname.Job, (*pb.GetJobRequest).GetName),
	pb.JobService_ListJobs_FullMethodName:      named(PermTenantViewer, read, "parent", resname.Tenant, (*pb.ListJobsRequest).GetParent),
	pb.JobService_CancelJob_FullMethodName:     named(PermTenantEditor, write, "name", resname.Job, (*pb.CancelJobRequest).GetName),
	pb.JobService_SuspendJob_FullMethodName:    named(PermTenantEditor, write, "name", resname.Job, (*pb.SuspendJobRequest).GetName),
	pb.JobService_ResumeJob_FullMethodName:     named(PermTenantEditor, write, "name", resname.Job, (*pb.ResumeJobRequest).GetName),
	pb.JobService_DeleteJob_FullMethodName:     named(PermTenantEditor, write, "name", resname.Job, (*pb.DeleteJobRequest).GetName),
	pb.JobService_ListJobEvents_FullMethodName: named(PermTenantViewer, read, "parent", resname.Job, (*pb.ListJobEventsRequest).GetParent),
	pb.JobService_GetJobLogs_FullMethodName:    named(PermTenantViewer, read, "name", resname.Job, (*pb.GetJobLogsRequest).GetName),
	pb.JobService_WatchJob_FullMethodName:      named(PermTenantViewer, read, "name", resname.Job, (*pb.WatchJobRequest).GetName),
	pb.JobService_WatchJobs_FullMethodName:     named(PermTenantViewer, read, "parent", resname.Tenant, (*pb.WatchJobsRequest).GetParent),
	pb.JobService_ImportTFJob_FullMethodName:   named(PermTenantEditor, write, "parent", resname.Tenant, (*pb.ImportTFJobRequest).GetParent),
	// Reads a job file into jobs and creates nothing: a viewer may check a file.
	pb.JobService_ParseJobFile_FullMethodName: named(PermTenantViewer, read, "parent", resname.Tenant, (*pb.ParseJobFileRequest).GetParent),
	// Each item's parent is checked against this one by the handler.
	pb.JobService_BatchCreateJobs_FullMethodName: named(PermTenantEditor, write, "parent", resname.Tenant, (*pb.BatchCreateJobsRequest).GetParent),

	pb.TenantService_CreateTenant_FullMethodName: {perm: PermPlatformAdmin},
	pb.TenantService_GetTenant_FullMethodName:    named(PermTenantViewer, read, "name", resname.Tenant, (*pb.GetTenantRequest).GetName),
	pb.TenantService_ListTenants_FullMethodName:  {perm: PermAuthenticated},
	pb.TenantService_UpdateTenant_FullMethodName: named(PermPlatformAdmin, write, "tenant.name", resname.Tenant,
		func(r *pb.UpdateTenantRequest) string { return r.GetTenant().GetName() }),
	// Not a write for the state check: offboarding is what DeleteTenant
	// starts, and retrying it must keep working.
	pb.TenantService_DeleteTenant_FullMethodName: named(PermPlatformAdmin, read, "name", resname.Tenant, (*pb.DeleteTenantRequest).GetName),
	pb.TenantService_PutSecret_FullMethodName: named(PermTenantAdmin, write, "secret.name", resname.Secret,
		func(r *pb.PutSecretRequest) string { return r.GetSecret().GetName() }),
	pb.TenantService_ListSecrets_FullMethodName:  named(PermTenantViewer, read, "parent", resname.Tenant, (*pb.ListSecretsRequest).GetParent),
	pb.TenantService_DeleteSecret_FullMethodName: named(PermTenantAdmin, write, "name", resname.Secret, (*pb.DeleteSecretRequest).GetName),
	// Cohorts span tenants (their pools and members): platform admins.
	pb.TenantService_PutCohort_FullMethodName:    {perm: PermPlatformAdmin},
	pb.TenantService_GetCohort_FullMethodName:    {perm: PermPlatformAdmin},
	pb.TenantService_ListCohorts_FullMethodName:  {perm: PermPlatformAdmin},
	pb.TenantService_DeleteCohort_FullMethodName: {perm: PermPlatformAdmin},
	// Clusters (issue 45) are the platform's: platform admins, reads too
	// (capacity, labels and health of every cluster).
	pb.ClusterService_CreateCluster_FullMethodName:   {perm: PermPlatformAdmin},
	pb.ClusterService_GetCluster_FullMethodName:      {perm: PermPlatformAdmin},
	pb.ClusterService_ListClusters_FullMethodName:    {perm: PermPlatformAdmin},
	pb.ClusterService_UpdateCluster_FullMethodName:   {perm: PermPlatformAdmin},
	pb.ClusterService_DrainCluster_FullMethodName:    {perm: PermPlatformAdmin},
	pb.ClusterService_CordonCluster_FullMethodName:   {perm: PermPlatformAdmin},
	pb.ClusterService_UncordonCluster_FullMethodName: {perm: PermPlatformAdmin},
	pb.ClusterService_DeleteCluster_FullMethodName:   {perm: PermPlatformAdmin},

	// AgentService (issue 45): remote clusters' agents only; the handlers
	// scope every call to the agent's own cluster.
	pb.AgentService_ClaimJobs_FullMethodName:        {perm: PermAgent},
	pb.AgentService_ExtendLease_FullMethodName:      {perm: PermAgent},
	pb.AgentService_RenewLease_FullMethodName:       {perm: PermAgent},
	pb.AgentService_ReleaseJobs_FullMethodName:      {perm: PermAgent},
	pb.AgentService_ReleaseAllJobs_FullMethodName:   {perm: PermAgent},
	pb.AgentService_LoadJob_FullMethodName:          {perm: PermAgent},
	pb.AgentService_SaveJob_FullMethodName:          {perm: PermAgent},
	pb.AgentService_ParkJob_FullMethodName:          {perm: PermAgent},
	pb.AgentService_PurgeJob_FullMethodName:         {perm: PermAgent},
	pb.AgentService_ListJobsByKeys_FullMethodName:   {perm: PermAgent},
	pb.AgentService_GetAgentTenant_FullMethodName:   {perm: PermAgent},
	pb.AgentService_ListAgentTenants_FullMethodName: {perm: PermAgent},
	pb.AgentService_ListAgentSecrets_FullMethodName: {perm: PermAgent},
	pb.AgentService_AgentHeartbeat_FullMethodName:   {perm: PermAgent},

	// Webhooks: a tenant's admins. Reads too: a webhook's URL and its
	// delivery log say where the tenant's events go.
	pb.WebhookService_CreateWebhook_FullMethodName: named(PermTenantAdmin, write, "parent", resname.Tenant, (*pb.CreateWebhookRequest).GetParent),
	pb.WebhookService_GetWebhook_FullMethodName:    named(PermTenantAdmin, read, "name", resname.Webhook, (*pb.GetWebhookRequest).GetName),
	pb.WebhookService_ListWebhooks_FullMethodName:  named(PermTenantAdmin, read, "parent", resname.Tenant, (*pb.ListWebhooksRequest).GetParent),
	pb.WebhookService_UpdateWebhook_FullMethodName: named(PermTenantAdmin, write, "webhook.name", resname.Webhook,
		func(r *pb.UpdateWebhookRequest) string { return r.GetWebhook().GetName() }),
	pb.WebhookService_DeleteWebhook_FullMethodName:            named(PermTenantAdmin, write, "name", resname.Webhook, (*pb.DeleteWebhookRequest).GetName),
	pb.WebhookService_PingWebhook_FullMethodName:              named(PermTenantAdmin, write, "name", resname.Webhook, (*pb.PingWebhookRequest).GetName),
	pb.WebhookService_ListWebhookDeliveries_FullMethodName:    named(PermTenantAdmin, read, "parent", resname.Webhook, (*pb.ListWebhookDeliveriesRequest).GetParent),
	pb.WebhookService_GetWebhookDelivery_FullMethodName:       named(PermTenantAdmin, read, "name", resname.WebhookDelivery, (*pb.GetWebhookDeliveryRequest).GetName),
	pb.WebhookService_RedeliverWebhookDelivery_FullMethodName: named(PermTenantAdmin, write, "name", resname.WebhookDelivery, (*pb.RedeliverWebhookDeliveryRequest).GetName),

	// Experiments: as jobs, whose trials they run. Editors create and
	// cancel, viewers read.
	pb.ExperimentService_CreateExperiment_FullMethodName: named(PermTenantEditor, write, "parent", resname.Tenant, (*pb.CreateExperimentRequest).GetParent),
	pb.ExperimentService_GetExperiment_FullMethodName:    named(PermTenantViewer, read, "name", resname.Experiment, (*pb.GetExperimentRequest).GetName),
	pb.ExperimentService_ListExperiments_FullMethodName:  named(PermTenantViewer, read, "parent", resname.Tenant, (*pb.ListExperimentsRequest).GetParent),
	pb.ExperimentService_CancelExperiment_FullMethodName: named(PermTenantEditor, write, "name", resname.Experiment, (*pb.CancelExperimentRequest).GetName),
	pb.ExperimentService_DeleteExperiment_FullMethodName: named(PermTenantEditor, write, "name", resname.Experiment, (*pb.DeleteExperimentRequest).GetName),
	pb.ExperimentService_ListTrials_FullMethodName:       named(PermTenantViewer, read, "parent", resname.Experiment, (*pb.ListTrialsRequest).GetParent),
	pb.ExperimentService_GetTrialMetrics_FullMethodName:  named(PermTenantViewer, read, "name", resname.Trial, (*pb.GetTrialMetricsRequest).GetName),

	// The audit log: a tenant's to its admins, every tenant's (no parent)
	// to platform admins. Reading it is allowed in any tenant state.
	pb.AuditService_ListAuditRecords_FullMethodName: orPlatform(named(PermTenantAdmin, read, "parent", resname.Tenant, (*pb.ListAuditRecordsRequest).GetParent)),

	// The usage ledger: a tenant's to its members (viewers and up), every
	// tenant's (tenants/-) to platform admins. Allowed in any tenant state:
	// an offboarded tenant's usage is still billed.
	pb.UsageService_QueryUsage_FullMethodName:        allTenants(named(PermTenantViewer, read, "parent", resname.Tenant, (*pb.QueryUsageRequest).GetParent)),
	pb.UsageService_QueryQueueHistory_FullMethodName: allTenants(named(PermTenantViewer, read, "parent", resname.Tenant, (*pb.QueryQueueHistoryRequest).GetParent)),
	// A job's GPU utilisation over time: as GetJob.
	pb.UsageService_QueryJobUtilization_FullMethodName: named(PermTenantViewer, read, "name", resname.Job, (*pb.QueryJobUtilizationRequest).GetName),
}

// allTenantsName is the name of every tenant at once (AIP-159).
const allTenantsName = "tenants/-"

// allTenants lets the name tenants/- ask about every tenant, as a
// platform admin.
func allTenants(r rule) rule {
	r.platformWildcard = true
	return r
}

// orPlatform lets a request without a name ask about every tenant, as a
// platform admin.
func orPlatform(r rule) rule {
	r.platformWithoutName = true
	return r
}

// rechecked marks a method whose write checks the caller again, for the
// requests when says.
func rechecked[T any](r rule, when func(T) bool) rule {
	r.rechecked = func(req any) bool {
		t, ok := req.(T)
		return ok && when(t)
	}
	return r
}

// RequiredPermission returns what fullMethod requires; false for a method
// the Authorizer does not know (and therefore denies).
func RequiredPermission(fullMethod string) (Permission, bool) {
	r, ok := rules[fullMethod]
	return r.perm, ok
}

// Authorizer is the one place that decides whether a principal may call a
// method on a resource.
type Authorizer struct {
	tenants       TenantSource
	lookupTimeout time.Duration
	cache         *TenantCache // nil: every decision reads the tenant
}

// LookupTimeout bounds one tenant lookup: a stream's calls have no
// deadline, and a database that stops answering must not hold a watch
// open unauthorized for ever (issue 41, finding 3). A lookup it ends is
// UNAVAILABLE.
const LookupTimeout = 10 * time.Second

// errLookupTimeout is the cause of a lookup ended by LookupTimeout.
var errLookupTimeout = errors.New("tenant lookup timed out")

// NewAuthorizer returns the Authorizer that looks tenants up in ts.
func NewAuthorizer(ts TenantSource, opts ...AuthorizerOption) *Authorizer {
	a := &Authorizer{tenants: ts, lookupTimeout: LookupTimeout}
	for _, o := range opts {
		o(a)
	}
	return a
}

// AuthorizerOption configures NewAuthorizer.
type AuthorizerOption func(*Authorizer)

// WithTenantCache lets the Authorizer allow the methods whose writes check
// the caller again (CreateJob) from tenant records remembered in c. Off by
// default: every decision reads the tenant.
func WithTenantCache(c *TenantCache) AuthorizerOption {
	return func(a *Authorizer) { a.cache = c }
}

// Authorize decides whether p may call fullMethod with req. The error is a
// gRPC status error (its GRPCStatus carries the code and caller-safe
// message; errors.Unwrap gives an internal cause, if any, for the log):
//
//   - PermissionDenied: method not in the table; a member whose role is too
//     low; a non-platform-admin calling a platform-admin method.
//   - InvalidArgument: the resource name field is malformed (the field is
//     named, with a google.rpc.BadRequest detail).
//   - NotFound: the tenant does not exist, or the caller has no role in it.
//     The two are indistinguishable so tenants cannot be discovered.
//   - FailedPrecondition: a write in a tenant that is not ACTIVE.
//   - Unavailable: the tenant lookup cannot be made right now.
//   - Internal (or the context's code): the tenant lookup failed.
func (a *Authorizer) Authorize(ctx context.Context, p Principal, fullMethod string, req any) (Access, error) {
	r, ok := rules[fullMethod]
	if !ok || r.perm == PermDeny {
		return Access{}, denyf(codes.PermissionDenied, nil, "method %s is not allowed", fullMethod)
	}
	// An agent calls AgentService and nothing else; nobody else calls it.
	switch agent := p.Cluster != ""; {
	case agent && r.perm != PermAgent:
		return Access{}, denyf(codes.PermissionDenied, nil, "permission denied: a cluster agent may call only AgentService")
	case !agent && r.perm == PermAgent:
		return Access{}, denyf(codes.PermissionDenied, nil, "permission denied: only a cluster agent may call %s", fullMethod)
	case agent:
		return Access{}, nil
	}
	if r.perm == PermAuthenticated {
		return Access{}, nil
	}
	if r.name == nil { // platform-wide: CreateTenant
		if !p.PlatformAdmin {
			return Access{}, denyf(codes.PermissionDenied, nil, "permission denied: requires platform admin")
		}
		return Access{}, nil
	}

	name, ok := r.name(req)
	if !ok {
		return Access{}, denyf(codes.Internal, fmt.Errorf("request %T does not match method %s", req, fullMethod), "internal error")
	}
	if (name == "" && r.platformWithoutName) || (name == allTenantsName && r.platformWildcard) {
		if !p.PlatformAdmin {
			return Access{}, denyf(codes.PermissionDenied, nil, "permission denied: every tenant at once requires platform admin; name a tenant in %s", r.field)
		}
		return Access{}, nil
	}
	id, ok := r.pattern.TenantOf(name)
	if !ok {
		return Access{}, invalidName(r.field, r.pattern)
	}
	useCache := a.cache != nil && r.rechecked != nil && r.rechecked(req)
	if useCache {
		if t, ok := a.cache.get(id); ok {
			if acc, err := decide(p, r, id, t); err == nil {
				acc.Remembered = true
				return acc, nil
			}
			// A refusal is decided on a fresh read, below.
		}
	}
	var (
		gen uint64
		at  time.Time
	)
	if useCache {
		gen, at = a.cache.begin()
	}
	t, err := a.tenantGet(ctx, id)
	switch {
	case errors.Is(err, ErrTenantNotFound):
		return Access{}, notFound(id)
	case errors.Is(err, ErrTenantSourceUnavailable):
		return Access{}, denyf(codes.Unavailable, err, "authorization is temporarily unavailable; retry shortly")
	case err != nil:
		if ctx.Err() != nil {
			st := status.FromContextError(ctx.Err())
			return Access{}, denyf(st.Code(), err, "%s", st.Message())
		}
		return Access{}, denyf(codes.Internal, fmt.Errorf("tenant lookup %q: %w", id, err), "internal error")
	case t.ID != id:
		return Access{}, denyf(codes.Internal, fmt.Errorf("tenant lookup %q returned tenant %q", id, t.ID), "internal error")
	}
	if useCache {
		a.cache.put(t, gen, at)
	}
	return decide(p, r, id, t)
}

// decide is the decision of rule r for p in tenant t (id).
func decide(p Principal, r rule, id string, t tenant.Tenant) (Access, error) {
	role := p.RoleIn(t)
	if role == tenant.RoleNone {
		return Access{}, notFound(id)
	}
	if r.perm == PermPlatformAdmin && !p.PlatformAdmin {
		return Access{}, denyf(codes.PermissionDenied, nil, "permission denied: requires platform admin")
	}
	if err := RoleRefusal(id, role, r.perm.Role()); err != nil {
		return Access{}, err
	}
	if r.write && t.State != tenant.Active {
		return Access{}, denyf(codes.FailedPrecondition, nil, "tenant %q is %s: it accepts no changes", id, stateWord(t.State))
	}
	return Access{TenantID: id, Tenant: t, Role: role}, nil
}

// RoleRefusal is the status a caller with role have in tenant id gets
// for a method that needs role need, or nil when have is enough: NOT_FOUND
// for a caller with no role at all (exactly as for a tenant that does not
// exist), PERMISSION_DENIED naming the role needed for a member whose role
// is too low. Handlers whose write checks the role again (CreateJob)
// answer its refusal with it.
func RoleRefusal(id string, have, need tenant.Role) error {
	switch {
	case have == tenant.RoleNone:
		return notFound(id)
	case have < need:
		return denyf(codes.PermissionDenied, nil, "permission denied: requires role %s in tenant %q", need, id)
	}
	return nil
}

// WithTenantRecord returns a context in which the Authorizer takes tenant
// id's record from the caller instead of its TenantSource: t, or, when
// gone, a tenant that does not exist. A caller that has just read the
// tenant (a watch's shared read, after its events) saves a read per stream
// with it; what it passes must be as fresh as a read would be.
func WithTenantRecord(ctx context.Context, id string, t tenant.Tenant, gone bool) context.Context {
	return context.WithValue(ctx, tenantRecordKey{}, tenantRecord{id: id, t: t, gone: gone})
}

type tenantRecordKey struct{}

type tenantRecord struct {
	id   string
	t    tenant.Tenant
	gone bool
}

func (a *Authorizer) tenantGet(ctx context.Context, id string) (tenant.Tenant, error) {
	if r, ok := ctx.Value(tenantRecordKey{}).(tenantRecord); ok && r.id == id {
		if r.gone {
			return tenant.Tenant{}, fmt.Errorf("%w: %s", ErrTenantNotFound, id)
		}
		return r.t, nil
	}
	lctx, cancel := context.WithTimeoutCause(ctx, a.lookupTimeout, errLookupTimeout)
	defer cancel()
	t, err := a.tenants.TenantGet(lctx, id)
	if err == nil || ctx.Err() != nil {
		return t, err
	}
	if errors.Is(context.Cause(lctx), errLookupTimeout) {
		return t, fmt.Errorf("%w: no answer within %s: %w", ErrTenantSourceUnavailable, a.lookupTimeout, err)
	}
	// A deadline of the source's own (a connect timeout) while the caller's
	// context is live is the source failing to answer too, not a fault.
	if errors.Is(err, context.DeadlineExceeded) {
		return t, fmt.Errorf("%w: %w", ErrTenantSourceUnavailable, err)
	}
	return t, err
}

func stateWord(s tenant.State) string {
	if s == "" {
		return "not active"
	}
	return strings.ToLower(string(s))
}

func notFound(id string) error {
	return denyf(codes.NotFound, nil, "tenant %q not found", id)
}

func invalidName(field string, pattern resname.Pattern) error {
	desc := fmt.Sprintf("must be of the form %s with a DNS-1123 label as tenant id", pattern)
	st := status.New(codes.InvalidArgument, fmt.Sprintf("invalid %s: %s", field, desc))
	if d, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
		{Field: field, Description: desc},
	}}); err == nil {
		st = d
	}
	return &decisionError{st: st}
}

// decisionError is a gRPC status (what the caller may see) plus the cause
// (what only the log may see).
type decisionError struct {
	st    *status.Status
	cause error
}

func denyf(code codes.Code, cause error, format string, args ...any) error {
	return &decisionError{st: status.Newf(code, format, args...), cause: cause}
}

func (e *decisionError) Error() string              { return e.st.Err().Error() }
func (e *decisionError) GRPCStatus() *status.Status { return e.st }
func (e *decisionError) Unwrap() error              { return e.cause }
