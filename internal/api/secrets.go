package api

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube/kubeerr"
	"github.com/trainyard/trainyard/internal/resname"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

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
		// Only Kubernetes had it (a PutSecret whose Postgres write
		// failed): still a deletion the caller made.
		if err := s.store.AuditWrite(ctx, tenantID, audit.SecretDelete, secretName(tenantID, id), nil); err != nil {
			return nil, err
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
	var inv *kubeerr.InvalidError
	switch {
	case errors.Is(err, kubeerr.ErrNamespaceNotReady):
		return status.Errorf(codes.Unavailable, "the namespace of tenant %s is not ready yet (a worker creates it); retry in a few seconds", quote(tenantID))
	case errors.As(err, &inv):
		desc := "Kubernetes refused the secret as invalid"
		if len(inv.Causes) > 0 {
			desc += ": " + strings.Join(inv.Causes, "; ")
		}
		return invalid(violation("secret.data", desc))
	case errors.Is(err, kubeerr.ErrConcurrentChange):
		return status.Errorf(codes.Aborted, "secret %s was changed concurrently; retry", quote(id))
	case errors.Is(err, kubeerr.ErrSecretNotOurs):
		s.log.WarnContext(ctx, "Kubernetes forbade a tenant secret write", "tenant", tenantID, "namespace", namespace, "secret", id, "error", err)
		return status.Errorf(codes.FailedPrecondition,
			"Kubernetes refused to write secret %s in namespace %s: a Secret of that name exists that Trainyard does not manage for this tenant, "+
				"or the server lacks the permission; a platform operator can tell which from the server's log",
			quote(id), quote(namespace))
	}
	return fmt.Errorf("writing secret %s of tenant %s to Kubernetes: %w", id, tenantID, err)
}
