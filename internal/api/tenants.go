package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/resname"
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
	sc := t.Scheduling.WithDefaults()
	out.Scheduling = &pb.Scheduling{
		PreemptionPolicy: invert(preemptionFromPB)[sc.Preemption],
		QueueingStrategy: invert(queueingFromPB)[sc.Queueing],
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

// tenantFieldsFromPB copies the user-settable fields named in fields (proto
// names; quota.gpu and the like set one field of the quota and keep the rest).
func tenantFieldsFromPB(in *pb.Tenant, t *tenant.Tenant, fields map[string]bool) {
	if fields["display_name"] {
		t.DisplayName = in.GetDisplayName()
	}
	if fields["labels"] {
		t.Labels = in.GetLabels()
	}
	q := in.GetQuota()
	if fields["quota"] {
		t.Quota = tenant.Quota{GPU: q.GetGpu(), CPU: q.GetCpu(), Memory: q.GetMemory(), Pods: q.GetPods()}
	}
	if fields["quota.gpu"] {
		t.Quota.GPU = q.GetGpu()
	}
	if fields["quota.cpu"] {
		t.Quota.CPU = q.GetCpu()
	}
	if fields["quota.memory"] {
		t.Quota.Memory = q.GetMemory()
	}
	if fields["quota.pods"] {
		t.Quota.Pods = q.GetPods()
	}
	sc := in.GetScheduling()
	if fields["scheduling"] {
		t.Scheduling = tenant.Scheduling{}
	}
	if fields["scheduling"] || fields["scheduling.preemption_policy"] {
		t.Scheduling.Preemption = preemptionFromPB[sc.GetPreemptionPolicy()]
	}
	if fields["scheduling"] || fields["scheduling.queueing_strategy"] {
		t.Scheduling.Queueing = queueingFromPB[sc.GetQueueingStrategy()]
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

var updatableTenantFields = []string{"display_name", "labels", "quota", "members", "pod_reader_groups", "scheduling"}

// preemptionFromPB and queueingFromPB map the scheduling enums; UNSPECIFIED
// is the default (tenant.Scheduling.WithDefaults).
var (
	preemptionFromPB = map[pb.PreemptionPolicy]tenant.PreemptionPolicy{
		pb.PreemptionPolicy_PREEMPTION_POLICY_UNSPECIFIED:    "",
		pb.PreemptionPolicy_PREEMPTION_POLICY_NEVER:          tenant.PreemptNever,
		pb.PreemptionPolicy_PREEMPTION_POLICY_LOWER_PRIORITY: tenant.PreemptLowerPriority,
	}
	queueingFromPB = map[pb.QueueingStrategy]tenant.QueueingStrategy{
		pb.QueueingStrategy_QUEUEING_STRATEGY_UNSPECIFIED:      "",
		pb.QueueingStrategy_QUEUEING_STRATEGY_STRICT_FIFO:      tenant.StrictFIFO,
		pb.QueueingStrategy_QUEUEING_STRATEGY_BEST_EFFORT_FIFO: tenant.BestEffortFIFO,
	}
)

// schedulingFields, like quotaFields, may be updated one by one.
var schedulingFields = []string{"scheduling.preemption_policy", "scheduling.queueing_strategy"}

// quotaFields may be updated one by one (quota.gpu, ...): the REST gateway
// builds the mask of a PATCH without updateMask from the body, and descends
// into messages, so {"quota":{"gpu":8}} arrives as quota.gpu.
var quotaFields = []string{"quota.gpu", "quota.cpu", "quota.memory", "quota.pods"}

// outputOnlyTenantFields are ignored in an update mask (AIP-203): a client
// that PATCHes back the tenant it read must not fail on them.
var outputOnlyTenantFields = []string{"name", "namespace", "state", "create_time", "update_time"}

func allTenantFields() map[string]bool {
	m := map[string]bool{}
	for _, f := range updatableTenantFields {
		m[f] = true
	}
	return m
}

// populatedTenantFields is the implied mask of an update without one
// (AIP-134): the fields the request sets, so nothing is cleared by omission.
func populatedTenantFields(in *pb.Tenant) map[string]bool {
	m := map[string]bool{}
	if in.GetDisplayName() != "" {
		m["display_name"] = true
	}
	if len(in.GetLabels()) > 0 {
		m["labels"] = true
	}
	if in.GetQuota() != nil {
		m["quota"] = true
	}
	if len(in.GetMembers()) > 0 {
		m["members"] = true
	}
	if len(in.GetPodReaderGroups()) > 0 {
		m["pod_reader_groups"] = true
	}
	if in.GetScheduling() != nil {
		m["scheduling"] = true
	}
	return m
}

// tenantUpdateFields turns an update mask into the fields to copy: every
// updatable field for "*"; the named ones (JSON or proto spelling)
// otherwise, output-only ones ignored. An empty mask is the caller's to
// resolve (populatedTenantFields).
func tenantUpdateFields(paths []string) (map[string]bool, error) {
	if len(paths) == 0 {
		return map[string]bool{}, nil
	}
	fields := map[string]bool{}
	for _, p := range paths {
		p = snake(strings.TrimSpace(p))
		switch {
		case p == "*":
			return allTenantFields(), nil
		case slices.Contains(updatableTenantFields, p), slices.Contains(quotaFields, p), slices.Contains(schedulingFields, p):
			fields[p] = true
		case slices.Contains(outputOnlyTenantFields, p):
		default:
			return nil, invalid(violation("updateMask", fmt.Sprintf("%s cannot be updated; updatable: %s, %s, %s or *",
				quote(p), strings.Join(updatableTenantFields, ", "), strings.Join(quotaFields, ", "), strings.Join(schedulingFields, ", "))))
		}
	}
	return fields, nil
}

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
		tenantFieldsFromPB(req.GetTenant(), t, fields)
		var vs job.Violations
		if vs.AddAt("tenant.", tenant.Validate(t)); len(vs) > 0 {
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
	ids, err := parseNew(resname.Secret, "secret.name", req.GetSecret().GetName())
	if err != nil {
		return nil, err
	}
	tenantID, id := ids[0], ids[1]
	var vs job.Violations
	if err := tenant.ValidateSecretID(id); err != nil {
		vs.Add("secret.name", "%v", err)
	}
	vs.AddAt("secret.", tenant.ValidateSecretData(req.GetSecret().GetData()))
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	t, err := s.tenant(ctx, tenantID)
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
		return nil, s.secretWriteError(ctx, tenantID, t.Namespace, id, err)
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

// DeleteSecret deletes the Kubernetes Secret, then its metadata. The
// Kubernetes Secret is deleted even without a metadata row: a PutSecret whose
// Postgres write failed after its Kubernetes write left one behind, and this
// is how it goes. NOT_FOUND only when neither existed.
func (s *TenantServer) DeleteSecret(ctx context.Context, req *pb.DeleteSecretRequest) (*pb.DeleteSecretResponse, error) {
	tenantID, id, err := parseSecret("name", req.GetName())
	if err != nil {
		return nil, err
	}
	t, err := s.tenant(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	_, err = s.store.SecretGet(ctx, tenantID, id)
	haveMeta := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if s.kube == nil {
		return nil, status.Error(codes.FailedPrecondition, "this server has no Kubernetes cluster configured to keep secret values")
	}
	haveValues, err := s.kube.DeleteSecret(ctx, t.Namespace, id)
	if err != nil {
		return nil, s.secretWriteError(ctx, tenantID, t.Namespace, id, err)
	}
	if !haveMeta {
		if !haveValues {
			return nil, status.Errorf(codes.NotFound, "secret %s not found in tenant %s", quote(id), quote(tenantID))
		}
		return &pb.DeleteSecretResponse{}, nil
	}
	if err := s.store.SecretDelete(ctx, tenantID, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return &pb.DeleteSecretResponse{}, nil
}

// secretWriteError maps the Kubernetes client's (classified) error from
// writing or deleting a tenant Secret to what the caller can act on. The
// API server's own message can name its service account and RBAC rules:
// that goes to the log only.
func (s *TenantServer) secretWriteError(ctx context.Context, tenantID, namespace, id string, err error) error {
	var inv *kube.InvalidError
	switch {
	case errors.Is(err, kube.ErrNamespaceNotReady):
		return status.Errorf(codes.Unavailable, "the namespace of tenant %s is not ready yet (a worker creates it); retry in a few seconds", quote(tenantID))
	case errors.As(err, &inv):
		desc := "Kubernetes refused the secret as invalid"
		if len(inv.Causes) > 0 {
			desc += ": " + strings.Join(inv.Causes, "; ")
		}
		return invalid(violation("secret.data", desc))
	case errors.Is(err, kube.ErrConcurrentChange):
		return status.Errorf(codes.Aborted, "secret %s was changed concurrently; retry", quote(id))
	case errors.Is(err, kube.ErrSecretNotOurs):
		s.log.WarnContext(ctx, "Kubernetes forbade a tenant secret write", "tenant", tenantID, "namespace", namespace, "secret", id, "error", err)
		return status.Errorf(codes.FailedPrecondition,
			"Kubernetes refused to write secret %s in namespace %s: a Secret of that name exists that Trainyard does not manage for this tenant, "+
				"or the server lacks the permission; a platform operator can tell which from the server's log",
			quote(id), quote(namespace))
	}
	return fmt.Errorf("writing secret %s of tenant %s to Kubernetes: %w", id, tenantID, err)
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
