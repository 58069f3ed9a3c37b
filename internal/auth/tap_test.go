package auth

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/grpctest"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// rawBytes is a codec that sends bytes as they are: a client that writes a
// message no protobuf decoder accepts.
type rawBytes struct{}

func (rawBytes) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawBytes) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawBytes) Name() string                       { return "proto" }

// Issue 41, findings 1 and 4: with Tap, a call without a valid token is
// refused from its headers, before its message is decoded: a malformed
// message from a stranger is UNAUTHENTICATED, not a decoding error; with a
// token, the interceptor reuses the principal Tap found.
func TestTapAuthenticatesBeforeDecoding(t *testing.T) {
	var logs logBuffer
	ic := NewInterceptor(testTokens, NewAuthorizer(testTenants), WithLogger(logs.logger()))
	srv := grpc.NewServer(grpc.InTapHandle(ic.Tap), grpc.ChainUnaryInterceptor(ic.Unary()), grpc.ChainStreamInterceptor(ic.Stream()))
	pb.RegisterJobServiceServer(srv, jobsServer{})
	conn := grpctest.Serve(t, srv)

	var out []byte
	err := conn.Invoke(context.Background(), "/trainyard.v1.JobService/GetJob", []byte{0xff, 0xff, 0xff, 0xff}, &out, grpc.ForceCodec(rawBytes{}))
	require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	require.Equal(t, msgUnauthenticated, status.Convert(err).Message())

	job, err := pb.NewJobServiceClient(conn).GetJob(withAuth("Bearer tok-vera"), &pb.GetJobRequest{Name: "tenants/alpha/jobs/j1"})
	require.NoError(t, err)
	require.Equal(t, "vera@alpha:viewer", job.GetCreator())

	stream, err := pb.NewJobServiceClient(conn).WatchJob(context.Background(), &pb.WatchJobRequest{Name: "tenants/alpha/jobs/j1"})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.Unauthenticated, status.Code(err))
}

// AuthenticateHTTP is the REST side of the same rule.
func TestAuthenticateHTTP(t *testing.T) {
	ic := NewInterceptor(testTokens, NewAuthorizer(testTenants), WithLogger(discardLogger()))
	r := httptest.NewRequest(http.MethodPost, "/v1/tenants", strings.NewReader("{}"))
	require.Equal(t, codes.Unauthenticated, status.Code(ic.AuthenticateHTTP(r)))
	r.Header.Set("Authorization", "Bearer tok-vera")
	require.NoError(t, ic.AuthenticateHTTP(r))
	ic = NewInterceptor(unavailableAuthn{}, NewAuthorizer(testTenants), WithLogger(discardLogger()))
	require.Equal(t, codes.Unavailable, status.Code(ic.AuthenticateHTTP(r)))
}

// Issue 41, finding 3: a tenant lookup the database does not answer ends
// after the lookup timeout as UNAVAILABLE, even for a call without a
// deadline (a stream's).
func TestAuthorizerLookupTimeout(t *testing.T) {
	stalled := TenantSourceFunc(func(ctx context.Context, _ string) (tenant.Tenant, error) {
		<-ctx.Done()
		return tenant.Tenant{}, ctx.Err()
	})
	a := NewAuthorizer(stalled)
	a.lookupTimeout = 50 * time.Millisecond
	_, err := a.Authorize(context.Background(), Principal{Subject: "vera"}, "/trainyard.v1.JobService/GetJob", &pb.GetJobRequest{Name: "tenants/alpha/jobs/j"})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
}

// A lookup that fails on a deadline of the source's own (the pool's connect
// timeout) before the lookup timeout is UNAVAILABLE too, not INTERNAL.
func TestAuthorizerSourceDeadlineIsUnavailable(t *testing.T) {
	slow := TenantSourceFunc(func(ctx context.Context, _ string) (tenant.Tenant, error) {
		cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		<-cctx.Done()
		return tenant.Tenant{}, fmt.Errorf("store: tenant: %w", cctx.Err())
	})
	a := NewAuthorizer(slow)
	_, err := a.Authorize(context.Background(), Principal{Subject: "vera"}, "/trainyard.v1.JobService/GetJob", &pb.GetJobRequest{Name: "tenants/alpha/jobs/j"})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
}
