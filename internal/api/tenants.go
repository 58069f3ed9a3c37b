package api

import (
	"context"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// TenantServer implements trainyard.v1.TenantService. The interceptor has
// already decided who may call what (platform admins for tenant writes,
// tenant admins for secrets).
type TenantServer struct {
	pb.UnimplementedTenantServiceServer
	deps
}

// NewTenantServer returns the TenantService implementation.
func NewTenantServer(d Deps) *TenantServer { return &TenantServer{deps: d.withDefaults()} }

func (s *TenantServer) CreateTenant(ctx context.Context, req *pb.CreateTenantRequest) (*pb.Tenant, error) {
	var vs job.Violations
	if err := tenant.ValidateTenantID(req.GetTenantId()); err != nil {
		vs.Add("tenantId", "%v", err)
	}
	if req.GetTenant() == nil {
		vs.Add("tenant", "is required")
		return nil, invalid(vs...)
	}
	t := tenant.Tenant{ID: req.GetTenantId(), Namespace: tenant.NamespaceName(s.nsPrefix, req.GetTenantId()), State: tenant.Active}
	tenantFieldsFromPB(req.GetTenant(), &t, allTenantFields())
	vs.AddAt("tenant.", tenant.Validate(&t))
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	if err := s.checkClusters(ctx, nil, t.Clusters); err != nil {
		return nil, err
	}
	created, err := s.store.TenantCreate(ctx, t)
	if err != nil {
		return nil, err
	}
	return tenantToPB(created), nil
}

func (s *TenantServer) GetTenant(ctx context.Context, req *pb.GetTenantRequest) (*pb.Tenant, error) {
	id, err := parseTenant("name", req.GetName())
	if err != nil {
		return nil, err
	}
	t, err := s.store.TenantGet(ctx, id)
	if err != nil {
		return nil, err
	}
	usage, err := s.store.TenantUsage(ctx, id)
	if err != nil {
		return nil, err
	}
	out := tenantToPB(t)
	out.Usage = quotaOfVector(usage)
	if t.Sharing.Budget != nil || t.Sharing.UsageHalfLifeSeconds > 0 {
		now := s.now()
		ask := store.SharingAsk{Tenant: id, HalfLife: t.Sharing.UsageHalfLife()}
		if b := t.Sharing.Budget; b != nil {
			ask.BudgetFrom = b.PeriodStart(now)
		}
		ledger, err := s.store.UsageSharing(ctx, now, []store.SharingAsk{ask})
		if err != nil {
			return nil, err
		}
		out.SharingStatus = sharingStatusToPB(t.Sharing, ledger[id], now)
	}
	return out, nil
}

func (s *TenantServer) ListTenants(ctx context.Context, req *pb.ListTenantsRequest) (*pb.ListTenantsResponse, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "no credentials")
	}
	size, err := pageSize("pageSize", req.GetPageSize())
	if err != nil {
		return nil, err
	}
	q := queryHash("tenants", p.Subject)
	after := ""
	if tok := req.GetPageToken(); tok != "" {
		// Tenant ids order the pages; the token carries the last one's
		// position in a list sorted by id, hashed with the caller.
		after, err = decodeTenantToken(tok, q)
		if err != nil {
			return nil, err
		}
	}
	ts, err := s.store.TenantList(ctx, store.TenantListParams{
		Subject: p.Subject, Groups: p.Groups, All: p.PlatformAdmin, PageSize: size + 1, After: after,
	})
	if err != nil {
		return nil, err
	}
	resp := &pb.ListTenantsResponse{}
	if len(ts) > size {
		ts = ts[:size]
		resp.NextPageToken = encodeTenantToken(ts[len(ts)-1].ID, q)
	}
	for _, t := range ts {
		resp.Tenants = append(resp.Tenants, tenantToPB(t))
	}
	return resp, nil
}

func (s *TenantServer) UpdateTenant(ctx context.Context, req *pb.UpdateTenantRequest) (*pb.Tenant, error) {
	if req.GetTenant() == nil {
		return nil, invalid(violation("tenant", "is required"))
	}
	id, err := parseTenant("tenant.name", req.GetTenant().GetName())
	if err != nil {
		return nil, err
	}
	fields, err := tenantUpdateFields(req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	if len(req.GetUpdateMask().GetPaths()) == 0 {
		fields = populatedTenantFields(req.GetTenant())
	}
	t, err := s.store.TenantUpdate(ctx, id, func(t *tenant.Tenant) error {
		if t.State != tenant.Active {
			return status.Errorf(codes.FailedPrecondition, "tenant %q is %s", id, t.State)
		}
		before := slices.Clone(t.Clusters)
		tenantFieldsFromPB(req.GetTenant(), t, fields)
		var vs job.Violations
		if vs.AddAt("tenant.", tenant.Validate(t)); len(vs) > 0 {
			return invalid(vs...)
		}
		// Taking a cluster away while jobs run there is refused by the
		// store, in this transaction (FAILED_PRECONDITION naming them).
		return s.checkClusters(ctx, before, t.Clusters)
	})
	if err != nil {
		return nil, err
	}
	return tenantToPB(t), nil
}

// DeleteTenant starts offboarding: the worker cancels the tenant's jobs, waits
// for them, deletes the namespace and marks the tenant DELETED.
func (s *TenantServer) DeleteTenant(ctx context.Context, req *pb.DeleteTenantRequest) (*pb.Tenant, error) {
	id, err := parseTenant("name", req.GetName())
	if err != nil {
		return nil, err
	}
	t, err := s.store.TenantUpdate(ctx, id, func(t *tenant.Tenant) error {
		if t.State == tenant.Active {
			t.State = tenant.Offboarding
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tenantToPB(t), nil
}

// checkClusters refuses, naming the field, allowed clusters a write adds
// (those in after and not in before) that are not registered. Names kept
// from before stay valid when their cluster was deleted since.
func (s *TenantServer) checkClusters(ctx context.Context, before, after []string) error {
	added := func(name string) bool { return !slices.Contains(before, name) }
	if !slices.ContainsFunc(after, added) {
		return nil
	}
	list, err := s.store.ClusterList(ctx)
	if err != nil {
		return err
	}
	registered := func(name string) bool {
		return slices.ContainsFunc(list, func(c cluster.Cluster) bool { return c.Name == name })
	}
	var vs job.Violations
	if vs.AddAt("tenant.", tenant.ValidateClusters(after, added, registered)); len(vs) > 0 {
		return invalid(vs...)
	}
	return nil
}
