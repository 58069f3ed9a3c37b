package api

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/kube/kubeerr"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestDeleteSecretRemovesOrphans(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "team-a", State: tenant.Active}
	st.secrets["a/both"] = tenant.Secret{Tenant: "a", Name: "both"}
	st.secrets["a/meta-only"] = tenant.Secret{Tenant: "a", Name: "meta-only"}
	k := &fakeKube{secrets: map[string]bool{"team-a/both": true, "team-a/orphan": true}}
	srv := NewTenantServer(Deps{Store: st, Kube: k})
	del := func(id string) error {
		_, err := srv.DeleteSecret(context.Background(), &pb.DeleteSecretRequest{Name: "tenants/a/secrets/" + id})
		return err
	}
	require.NoError(t, del("both"))
	require.NoError(t, del("orphan"), "a Kubernetes Secret without metadata is deleted")
	require.Equal(t, 1, st.count("AuditWrite secret.delete tenants/a/secrets/orphan"), "and the deletion recorded")
	require.NoError(t, del("meta-only"), "metadata without a Kubernetes Secret is deleted")
	require.Equal(t, codes.NotFound, status.Code(del("neither")))
	require.Empty(t, k.secrets)
	require.Empty(t, st.secrets)
}

func TestSecretWriteErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		err   error
		code  codes.Code
		field string
	}{
		"invalid": {
			err:  &kubeerr.InvalidError{Causes: []string{`data[a b]: a valid config key must consist of alphanumeric characters`}},
			code: codes.InvalidArgument, field: "secret.data",
		},
		"conflict":     {err: fmt.Errorf("%w: secret ty-a/s", kubeerr.ErrConcurrentChange), code: codes.Aborted},
		"forbidden":    {err: fmt.Errorf("%w: %s", kubeerr.ErrSecretNotOurs, `User "system:serviceaccount:trainyard:trainyard-api" cannot update`), code: codes.FailedPrecondition},
		"no namespace": {err: fmt.Errorf("%w: ty-a", kubeerr.ErrNamespaceNotReady), code: codes.Unavailable},
		"other":        {err: errors.New("connection refused"), code: codes.Unknown},
	} {
		t.Run(name, func(t *testing.T) {
			st := newFakeStore()
			st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "ty-a", State: tenant.Active}
			srv := NewTenantServer(Deps{Store: st, Kube: &fakeKube{secrets: map[string]bool{}, putErr: tc.err}})
			_, err := srv.PutSecret(context.Background(), &pb.PutSecretRequest{Secret: &pb.Secret{
				Name: "tenants/a/secrets/s", Data: map[string]string{"k": "v"}}})
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			if tc.code == codes.Unknown {
				_, isStatus := status.FromError(err)
				require.False(t, isStatus, "an unexpected error stays internal (masked by the interceptor)")
			}
			require.NotContains(t, status.Convert(err).Message(), "serviceaccount", "RBAC details go to the log only")
			if tc.field != "" {
				v := badRequest(t, err).GetFieldViolations()[0]
				require.Equal(t, tc.field, v.GetField())
				require.Contains(t, v.GetDescription(), "a valid config key")
			}
			require.Zero(t, st.count("SecretPut"), "no metadata without the values")
		})
	}
}
