package api

import (
	"context"
	"fmt"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/trainyard/trainyard/internal/auth"
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

var roleFromPB = map[pb.Role]tenant.Role{
	pb.Role_ROLE_VIEWER: tenant.RoleViewer,
	pb.Role_ROLE_EDITOR: tenant.RoleEditor,
	pb.Role_ROLE_ADMIN:  tenant.RoleAdmin,
}

var tenantStateToPB = map[tenant.State]pb.TenantState{
	tenant.Active:      pb.TenantState_TENANT_STATE_ACTIVE,
	tenant.Offboarding: pb.TenantState_TENANT_STATE_OFFBOARDING,
	tenant.Deleted:     pb.TenantState_TENANT_STATE_DELETED,
}

func tenantToPB(t tenant.Tenant) *pb.Tenant {
	out := &pb.Tenant{
		Name:            tenantName(t.ID),
		DisplayName:     t.DisplayName,
		Labels:          t.Labels,
		PodReaderGroups: t.PodReaderGroups,
		Namespace:       t.Namespace,
		State:           tenantStateToPB[t.State],
		CreateTime:      ts(t.CreateTime),
		UpdateTime:      ts(t.UpdateTime),
	}
	if q := t.Quota; q != (tenant.Quota{}) {
		out.Quota = &pb.Quota{Gpu: q.GPU, Cpu: q.CPU, Memory: q.Memory, Pods: q.Pods}
	}
	roleToPB := invert(roleFromPB)
	for _, m := range t.Members {
		pm := &pb.Member{Role: roleToPB[m.Role]}
		if m.Group != "" {
			pm.Principal = &pb.Member_Group{Group: m.Group}
		} else {
			pm.Principal = &pb.Member_Subject{Subject: m.Subject}
		}
		out.Members = append(out.Members, pm)
	}
	return out
}

// tenantFieldsFromPB copies the user-settable fields.
func tenantFieldsFromPB(in *pb.Tenant, t *tenant.Tenant, fields map[string]bool) {
	if fields["display_name"] {
		t.DisplayName = in.GetDisplayName()
	}
	if fields["labels"] {
		t.Labels = in.GetLabels()
	}
	if fields["quota"] {
		q := in.GetQuota()
		t.Quota = tenant.Quota{GPU: q.GetGpu(), CPU: q.GetCpu(), Memory: q.GetMemory(), Pods: q.GetPods()}
	}
	if fields["members"] {
		t.Members = nil
		for _, m := range in.GetMembers() {
			t.Members = append(t.Members, tenant.Member{Subject: m.GetSubject(), Group: m.GetGroup(), Role: roleFromPB[m.GetRole()]})
		}
	}
	if fields["pod_reader_groups"] {
		t.PodReaderGroups = in.GetPodReaderGroups()
	}
}

var updatableTenantFields = []string{"display_name", "labels", "quota", "members", "pod_reader_groups"}

func allTenantFields() map[string]bool {
	m := map[string]bool{}
	for _, f := range updatableTenantFields {
		m[f] = true
	}
	return m
}

func tenantViolations(t *tenant.Tenant, prefix string) []FieldViolation {
	var vs []FieldViolation
	for _, v := range tenant.Validate(t) {
		vs = append(vs, violation(prefix+v.Field, v.Description))
	}
	return vs
}

func (s *TenantServer) CreateTenant(ctx context.Context, req *pb.CreateTenantRequest) (*pb.Tenant, error) {
	var vs []FieldViolation
	if err := tenant.ValidateTenantID(req.GetTenantId()); err != nil {
		vs = append(vs, violation("tenantId", err.Error()))
	}
	if req.GetTenant() == nil {
		vs = append(vs, violation("tenant", "is required"))
		return nil, invalid(vs...)
	}
	t := tenant.Tenant{ID: req.GetTenantId(), Namespace: s.nsPrefix + req.GetTenantId(), State: tenant.Active}
	tenantFieldsFromPB(req.GetTenant(), &t, allTenantFields())
	vs = append(vs, tenantViolations(&t, "tenant.")...)
	if len(vs) > 0 {
		return nil, invalid(vs...)
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
	return tenantToPB(t), nil
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
	fields := allTenantFields()
	if paths := req.GetUpdateMask().GetPaths(); len(paths) > 0 {
		fields = map[string]bool{}
		for _, p := range paths {
			p = snake(p)
			if !allTenantFields()[p] {
				return nil, invalid(violation("updateMask", fmt.Sprintf("%q cannot be updated; updatable: %v", p, updatableTenantFields)))
			}
			fields[p] = true
		}
	}
	var vs []FieldViolation
	t, err := s.store.TenantUpdate(ctx, id, func(t *tenant.Tenant) error {
		if t.State != tenant.Active {
			return status.Errorf(codes.FailedPrecondition, "tenant %q is %s", id, t.State)
		}
		tenantFieldsFromPB(req.GetTenant(), t, fields)
		if vs = tenantViolations(t, "tenant."); len(vs) > 0 {
			return invalid(vs...)
		}
		return nil
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

func secretToPB(sec tenant.Secret) *pb.Secret {
	keys := append([]string(nil), sec.Keys...)
	sort.Strings(keys)
	return &pb.Secret{Name: secretName(sec.Tenant, sec.Name), Keys: keys, CreateTime: ts(sec.CreateTime), UpdateTime: ts(sec.UpdateTime)}
}

// PutSecret writes the values to a Kubernetes Secret in the tenant's
// namespace first and records only the key names in Postgres after, so a
// failure in between leaves nothing that points at missing values.
func (s *TenantServer) PutSecret(ctx context.Context, req *pb.PutSecretRequest) (*pb.Secret, error) {
	if req.GetSecret() == nil {
		return nil, invalid(violation("secret", "is required"))
	}
	tenantID, id, err := parseSecret("secret.name", req.GetSecret().GetName())
	if err != nil {
		return nil, err
	}
	var vs []FieldViolation
	if err := tenant.ValidateSecretID(id); err != nil {
		vs = append(vs, violation("secret.name", err.Error()))
	}
	for _, v := range tenant.ValidateSecretData(req.GetSecret().GetData()) {
		vs = append(vs, violation("secret."+v.Field, v.Description))
	}
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	t, err := s.store.TenantGet(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if t.State != tenant.Active {
		// An offboarding tenant's namespace is being deleted with its Secrets.
		return nil, status.Errorf(codes.FailedPrecondition, "tenant %q is %s: secrets can only be written to an active tenant", tenantID, t.State)
	}
	if s.kube == nil {
		return nil, status.Error(codes.FailedPrecondition, "this server has no Kubernetes cluster configured to keep secret values")
	}
	if err := s.kube.PutSecret(ctx, tenantID, t.Namespace, id, req.GetSecret().GetData()); err != nil {
		if namespaceNotReady(err) {
			return nil, status.Errorf(codes.Unavailable, "the namespace of tenant %q is not ready yet (a worker creates it); retry in a few seconds", tenantID)
		}
		return nil, fmt.Errorf("writing secret %s to Kubernetes: %w", id, err)
	}
	keys := make([]string, 0, len(req.GetSecret().GetData()))
	for k := range req.GetSecret().GetData() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	sec, err := s.store.SecretPut(ctx, tenant.Secret{Tenant: tenantID, Name: id, Keys: keys})
	if err != nil {
		return nil, err
	}
	return secretToPB(sec), nil
}

func (s *TenantServer) ListSecrets(ctx context.Context, req *pb.ListSecretsRequest) (*pb.ListSecretsResponse, error) {
	tenantID, err := parseTenant("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	secs, err := s.store.SecretList(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	resp := &pb.ListSecretsResponse{}
	for _, sec := range secs {
		resp.Secrets = append(resp.Secrets, secretToPB(sec))
	}
	return resp, nil
}

func (s *TenantServer) DeleteSecret(ctx context.Context, req *pb.DeleteSecretRequest) (*pb.DeleteSecretResponse, error) {
	tenantID, id, err := parseSecret("name", req.GetName())
	if err != nil {
		return nil, err
	}
	t, err := s.store.TenantGet(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if _, err := s.store.SecretGet(ctx, tenantID, id); err != nil {
		return nil, err
	}
	if s.kube == nil {
		return nil, status.Error(codes.FailedPrecondition, "this server has no Kubernetes cluster configured to keep secret values")
	}
	if err := s.kube.DeleteSecret(ctx, t.Namespace, id); err != nil {
		return nil, fmt.Errorf("deleting secret %s from Kubernetes: %w", id, err)
	}
	if err := s.store.SecretDelete(ctx, tenantID, id); err != nil {
		return nil, err
	}
	return &pb.DeleteSecretResponse{}, nil
}

// namespaceNotReady reports whether a write into a tenant namespace failed
// because the namespace does not exist yet (a tenant just created, before a
// worker made it) or is being deleted (by hand; a worker re-creates it).
// Both pass: the caller may retry.
func namespaceNotReady(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// snake turns a JSON field name (podReaderGroups) into its proto name.
func snake(s string) string {
	out := make([]byte, 0, len(s)+4)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			out = append(out, '_', c+'a'-'A')
			continue
		}
		out = append(out, c)
	}
	return string(out)
}

func encodeTenantToken(lastID string, q uint64) string {
	return encodeStringToken(lastID, q)
}

func decodeTenantToken(tok string, q uint64) (string, error) {
	return decodeStringToken("pageToken", tok, q)
}
