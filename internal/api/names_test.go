package api

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestParseNames(t *testing.T) {
	tn, jn, err := parseJob("name", "tenants/acme/jobs/mnist")
	require.NoError(t, err)
	require.Equal(t, []string{"acme", "mnist"}, []string{tn, jn})
	tn, sn, err := parseSecret("name", "tenants/acme/secrets/s3")
	require.NoError(t, err)
	require.Equal(t, []string{"acme", "s3"}, []string{tn, sn})
	id, err := parseTenant("parent", "tenants/acme")
	require.NoError(t, err)
	require.Equal(t, "acme", id)

	for _, bad := range []string{"", "tenants/", "tenants/acme/jobs", "tenants/acme/jobs/", "projects/acme/jobs/x", "tenants/acme/secrets/x", "tenants/acme/jobs/x/extra"} {
		_, _, err := parseJob("name", bad)
		require.Equal(t, codes.InvalidArgument, status.Code(err), bad)
		br := badRequest(t, err)
		require.Equal(t, "name", br.GetFieldViolations()[0].GetField())
	}

	// An id that cannot exist names nothing: NOT_FOUND, with the input
	// escaped, and nothing reaches the store.
	for _, bad := range []string{"tenants/acme/jobs/a\x00b", "tenants/acme/jobs/a\xffb", "tenants/acme/jobs/Bad_Name"} {
		_, _, err := parseJob("name", bad)
		require.Equal(t, codes.NotFound, status.Code(err), bad)
		require.NotContains(t, status.Convert(err).Message(), "\x00")
	}
	_, _, err = parseSecret("name", "tenants/acme/secrets/a\x00b")
	require.Equal(t, codes.NotFound, status.Code(err))
}

func badRequest(t *testing.T, err error) *errdetails.BadRequest {
	t.Helper()
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			return br
		}
	}
	t.Fatalf("no BadRequest detail in %v", err)
	return nil
}
