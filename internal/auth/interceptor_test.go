package auth

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trainyard/trainyard/internal/auth/oidctest"
	"github.com/trainyard/trainyard/internal/grpctest"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// fakeAuthn maps tokens to principals.
type fakeAuthn map[string]Principal

func (f fakeAuthn) Authenticate(_ context.Context, raw string) (Principal, error) {
	if p, ok := f[raw]; ok {
		return p, nil
	}
	return Principal{}, unauthenticated("unknown test token", nil)
}

type unavailableAuthn struct{}

func (unavailableAuthn) Authenticate(context.Context, string) (Principal, error) {
	return Principal{}, unavailable("issuer down", errors.New("dial tcp: connection refused"))
}

var testTokens = fakeAuthn{
	"tok-nobody": {Subject: "nobody"},
	"tok-vera":   {Subject: "vera"},
	"tok-ed":     {Subject: "ed"},
	"tok-root":   {Subject: "root", PlatformAdmin: true},
}

// jobsServer answers with what the interceptor put in the context, so
// tests see that handlers get the principal and the decision.
type jobsServer struct {
	pb.UnimplementedJobServiceServer
}

func describe(ctx context.Context) string {
	p, ok := PrincipalFrom(ctx)
	a, ok2 := AccessFrom(ctx)
	if !ok || !ok2 {
		return "no principal or access in context"
	}
	return p.Subject + "@" + a.TenantID + ":" + a.Role.String()
}

func (jobsServer) GetJob(ctx context.Context, req *pb.GetJobRequest) (*pb.Job, error) {
	return &pb.Job{Name: req.GetName(), Creator: describe(ctx)}, nil
}

func (jobsServer) WatchJob(req *pb.WatchJobRequest, stream grpc.ServerStreamingServer[pb.WatchJobResponse]) error {
	return stream.Send(&pb.WatchJobResponse{Job: &pb.Job{Name: req.GetName(), Creator: describe(stream.Context())}})
}

type tenantsServer struct {
	pb.UnimplementedTenantServiceServer
}

func (tenantsServer) ListTenants(ctx context.Context, _ *pb.ListTenantsRequest) (*pb.ListTenantsResponse, error) {
	if _, ok := PrincipalFrom(ctx); !ok {
		return nil, status.Error(codes.Internal, "no principal")
	}
	return &pb.ListTenantsResponse{}, nil
}

// startServer runs a real gRPC server (in memory) with the interceptors,
// the Trainyard services, health and reflection.
func startServer(t *testing.T, authn Authenticator, logs *logBuffer) *grpc.ClientConn {
	t.Helper()
	ic := NewInterceptor(authn, NewAuthorizer(testTenants), WithLogger(logs.logger()))
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(ic.Unary()), grpc.ChainStreamInterceptor(ic.Stream()))
	pb.RegisterJobServiceServer(srv, jobsServer{})
	pb.RegisterTenantServiceServer(srv, tenantsServer{})
	healthpb.RegisterHealthServer(srv, health.NewServer())
	reflection.Register(srv)
	return grpctest.Serve(t, srv)
}

// serveInMemory serves srv over an in-memory listener and returns a client
// connection to it; both stop when the test ends.
func withAuth(values ...string) context.Context {
	md := metadata.MD{}
	for _, v := range values {
		md.Append("authorization", v)
	}
	return metadata.NewOutgoingContext(context.Background(), md)
}

func TestInterceptorUnary(t *testing.T) {
	var logs logBuffer
	conn := startServer(t, testTokens, &logs)
	jobs := pb.NewJobServiceClient(conn)
	alphaJob := &pb.GetJobRequest{Name: "tenants/alpha/jobs/j1"}

	cases := []struct {
		name    string
		ctx     context.Context
		req     *pb.GetJobRequest
		code    codes.Code
		creator string
		logged  string
	}{
		{"member", withAuth("Bearer tok-vera"), alphaJob, codes.OK, "vera@alpha:viewer", ""},
		{"scheme is case-insensitive", withAuth("bearer tok-vera"), alphaJob, codes.OK, "vera@alpha:viewer", ""},
		{"platform admin", withAuth("Bearer tok-root"), alphaJob, codes.OK, "root@alpha:admin", ""},
		{"no metadata", context.Background(), alphaJob, codes.Unauthenticated, "", "no authorization metadata"},
		{"basic auth", withAuth("Basic dmVyYTpwdw=="), alphaJob, codes.Unauthenticated, "", "not a bearer token"},
		{"bare token", withAuth("tok-vera"), alphaJob, codes.Unauthenticated, "", "not a bearer token"},
		{"empty bearer", withAuth("Bearer "), alphaJob, codes.Unauthenticated, "", "not a bearer token"},
		{"two values", withAuth("Bearer tok-vera", "Bearer tok-root"), alphaJob, codes.Unauthenticated, "", "more than one authorization value"},
		{"unknown token", withAuth("Bearer secret-garbage-token"), alphaJob, codes.Unauthenticated, "", "unknown test token"},
		{"other tenant", withAuth("Bearer tok-vera"), &pb.GetJobRequest{Name: "tenants/bravo/jobs/j1"}, codes.NotFound, "", `tenant \"bravo\" not found`},
		{"no role", withAuth("Bearer tok-nobody"), alphaJob, codes.NotFound, "", `tenant \"alpha\" not found`},
		{"malformed name", withAuth("Bearer tok-vera"), &pb.GetJobRequest{Name: "alpha/j1"}, codes.InvalidArgument, "", "invalid name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job, err := jobs.GetJob(c.ctx, c.req)
			st := status.Convert(err)
			require.Equal(t, c.code, st.Code(), st.Message())
			if c.code == codes.Unauthenticated {
				require.Equal(t, msgUnauthenticated, st.Message(), "callers learn nothing about why")
			}
			if c.code == codes.OK {
				require.Equal(t, c.creator, job.GetCreator())
			}
			if c.logged != "" {
				require.Contains(t, logs.String(), c.logged)
			}
		})
	}
	require.NotContains(t, logs.String(), "secret-garbage-token", "tokens never reach the log")
	require.NotContains(t, logs.String(), "tok-vera")
}

// Authorization runs before the handler: a refused caller never reaches
// it, an allowed one does (Unimplemented comes from the handler).
func TestInterceptorAuthorizesBeforeHandler(t *testing.T) {
	conn := startServer(t, testTokens, &logBuffer{})
	jobs := pb.NewJobServiceClient(conn)
	req := &pb.CreateJobRequest{Parent: "tenants/alpha", Job: &pb.Job{}}

	_, err := jobs.CreateJob(withAuth("Bearer tok-vera"), req)
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = jobs.CreateJob(withAuth("Bearer tok-ed"), req)
	require.Equal(t, codes.Unimplemented, status.Code(err))

	tenants := pb.NewTenantServiceClient(conn)
	_, err = tenants.ListTenants(withAuth("Bearer tok-nobody"), &pb.ListTenantsRequest{})
	require.NoError(t, err, "any authenticated caller may list; the handler filters")
	_, err = tenants.ListTenants(context.Background(), &pb.ListTenantsRequest{})
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	_, err = tenants.CreateTenant(withAuth("Bearer tok-ed"), &pb.CreateTenantRequest{TenantId: "new"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}

func TestInterceptorStream(t *testing.T) {
	conn := startServer(t, testTokens, &logBuffer{})
	jobs := pb.NewJobServiceClient(conn)
	watch := func(ctx context.Context, name string) (*pb.WatchJobResponse, error) {
		stream, err := jobs.WatchJob(ctx, &pb.WatchJobRequest{Name: name})
		if err != nil {
			return nil, err
		}
		return stream.Recv()
	}

	resp, err := watch(withAuth("Bearer tok-vera"), "tenants/alpha/jobs/j1")
	require.NoError(t, err)
	require.Equal(t, "vera@alpha:viewer", resp.GetJob().GetCreator())

	_, err = watch(withAuth("Bearer tok-vera"), "tenants/bravo/jobs/j1")
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = watch(withAuth("Bearer tok-vera"), "tenants/ghost/jobs/j1")
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = watch(context.Background(), "tenants/alpha/jobs/j1")
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	_, err = watch(withAuth("Bearer tok-vera"), "tenants/alpha")
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

func TestInterceptorExemptsHealthAndReflection(t *testing.T) {
	conn := startServer(t, testTokens, &logBuffer{})

	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())

	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(context.Background())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}))
	r, err := stream.Recv()
	require.NoError(t, err)
	require.NotEmpty(t, r.GetListServicesResponse().GetService())
	require.NoError(t, stream.CloseSend())
}

func TestInterceptorUnavailable(t *testing.T) {
	var logs logBuffer
	conn := startServer(t, unavailableAuthn{}, &logs)
	_, err := pb.NewJobServiceClient(conn).GetJob(withAuth("Bearer whatever-token"), &pb.GetJobRequest{Name: "tenants/alpha/jobs/j"})
	st := status.Convert(err)
	require.Equal(t, codes.Unavailable, st.Code())
	require.Equal(t, msgUnavailable, st.Message())
	require.Contains(t, logs.String(), "connection refused")
}

// Methods the Authorizer does not know are refused before any handler
// runs, even on a service the table does not cover.
func TestInterceptorUnknownMethod(t *testing.T) {
	ic := NewInterceptor(testTokens, NewAuthorizer(testTenants), WithLogger(discardLogger()))
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer tok-root"))
	called := false

	_, err := ic.Unary()(ctx, &pb.GetJobRequest{}, &grpc.UnaryServerInfo{FullMethod: "/other.v1.Admin/Wipe"},
		func(context.Context, any) (any, error) { called = true; return nil, nil })
	require.Equal(t, codes.PermissionDenied, status.Code(err))

	err = ic.Stream()(nil, &fakeStream{ctx: ctx}, &grpc.StreamServerInfo{FullMethod: "/other.v1.Admin/Tail", IsServerStream: true},
		func(any, grpc.ServerStream) error { called = true; return nil })
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	require.False(t, called)
}

func TestInterceptorWithExempt(t *testing.T) {
	ic := NewInterceptor(testTokens, NewAuthorizer(testTenants), WithExempt("/grpc.health.v1.Health/Check"))
	require.True(t, ic.isExempt("/grpc.health.v1.Health/Check"))
	require.False(t, ic.isExempt("/grpc.health.v1.Health/Watch"))
	require.False(t, ic.isExempt("/grpc.health.v1.Health/CheckX"))

	def := NewInterceptor(testTokens, NewAuthorizer(testTenants))
	require.True(t, def.isExempt("/grpc.health.v1.Health/Watch"))
	require.True(t, def.isExempt("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"))
	require.False(t, def.isExempt("/grpc.health.v1.HealthX/Check"))
	require.False(t, def.isExempt(pb.JobService_GetJob_FullMethodName))
}

// fakeStream is a grpc.ServerStream that yields queued messages.
type fakeStream struct {
	grpc.ServerStream
	ctx  context.Context
	in   []any
	sent int
}

func (f *fakeStream) Context() context.Context { return f.ctx }
func (f *fakeStream) SendMsg(any) error        { f.sent++; return nil }
func (f *fakeStream) RecvMsg(m any) error {
	if len(f.in) == 0 {
		return io.EOF
	}
	proto.Merge(m.(proto.Message), f.in[0].(proto.Message))
	f.in = f.in[1:]
	return nil
}

// A handler cannot send before the request was authorized, and a stream
// cannot switch tenants half-way.
func TestAuthorizingStreamGuards(t *testing.T) {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer tok-root"))
	ic := NewInterceptor(testTokens, NewAuthorizer(testTenants), WithLogger(discardLogger()))
	info := &grpc.StreamServerInfo{FullMethod: pb.JobService_WatchJob_FullMethodName, IsServerStream: true}

	fs := &fakeStream{ctx: ctx}
	err := ic.Stream()(nil, fs, info, func(_ any, ss grpc.ServerStream) error {
		return ss.SendMsg(&pb.WatchJobResponse{})
	})
	require.Equal(t, codes.Internal, status.Code(err))
	require.Zero(t, fs.sent)

	fs = &fakeStream{ctx: ctx, in: []any{
		&pb.WatchJobRequest{Name: "tenants/alpha/jobs/a"},
		&pb.WatchJobRequest{Name: "tenants/bravo/jobs/b"},
	}}
	err = ic.Stream()(nil, fs, info, func(_ any, ss grpc.ServerStream) error {
		if err := ss.RecvMsg(new(pb.WatchJobRequest)); err != nil {
			return err
		}
		if a, _ := AccessFrom(ss.Context()); a.TenantID != "alpha" {
			return status.Error(codes.Internal, "access not in context")
		}
		return ss.RecvMsg(new(pb.WatchJobRequest))
	})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

// The whole chain with real tokens: oidctest issuer → OIDC → interceptor
// → Authorizer, the refusals issue 2's end-to-end test asks for.
func TestInterceptorWithOIDC(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	o := newTestOIDC(t, iss)
	var logs logBuffer
	conn := startServer(t, o, &logs)
	jobs := pb.NewJobServiceClient(conn)
	vera := oidctest.Claims{Subject: "vera"}
	alpha := &pb.GetJobRequest{Name: "tenants/alpha/jobs/j1"}

	cases := []struct {
		name  string
		token string
		req   *pb.GetJobRequest
		code  codes.Code
	}{
		{"valid", iss.Token(vera), alpha, codes.OK},
		{"admin group", iss.TokenFor("root", "platform-admins"), &pb.GetJobRequest{Name: "tenants/bravo/jobs/j1"}, codes.OK},
		{"member of alpha asks bravo", iss.Token(vera), &pb.GetJobRequest{Name: "tenants/bravo/jobs/j1"}, codes.NotFound},
		{"wrong audience", iss.WrongAudienceToken(vera), alpha, codes.Unauthenticated},
		{"expired", iss.ExpiredToken(vera), alpha, codes.Unauthenticated},
		{"bad signature", iss.BadSignatureToken(vera), alpha, codes.Unauthenticated},
		{"alg none", iss.AlgNoneToken(vera), alpha, codes.Unauthenticated},
		{"wrong issuer", iss.WrongIssuerToken(vera), alpha, codes.Unauthenticated},
		{"missing", "", alpha, codes.Unauthenticated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			if c.token != "" {
				ctx = withAuth("Bearer " + c.token)
			}
			_, err := jobs.GetJob(ctx, c.req)
			require.Equal(t, c.code, status.Code(err), status.Convert(err).Message())
			if c.token != "" {
				require.NotContains(t, logs.String(), c.token)
			}
		})
	}
}

func TestNewInterceptorRefusesNil(t *testing.T) {
	require.Panics(t, func() { NewInterceptor(nil, NewAuthorizer(testTenants)) })
	require.Panics(t, func() { NewInterceptor(testTokens, nil) })
}

// REST clients can smuggle a second value through the gateway
// (Grpc-Metadata-Authorization); two values are refused, not guessed.
func TestBearerToken(t *testing.T) {
	for _, c := range []struct {
		md     metadata.MD
		token  string
		reason string
	}{
		{metadata.Pairs("authorization", "Bearer abc"), "abc", ""},
		{metadata.Pairs("authorization", "  BEARER   abc  "), "abc", ""},
		{metadata.Pairs("Authorization", "Bearer abc"), "abc", ""},
		{metadata.MD{}, "", "no authorization metadata"},
		{metadata.Pairs("authorization", "Bearer a", "authorization", "Bearer b"), "", "more than one"},
		{metadata.Pairs("authorization", "Bearer"), "", "not a bearer token"},
		{metadata.Pairs("authorization", "Token abc"), "", "not a bearer token"},
		{metadata.Pairs("grpcgateway-authorization", "Bearer abc"), "", "no authorization metadata"},
	} {
		token, reason := bearerToken(metadata.ValueFromIncomingContext(metadata.NewIncomingContext(context.Background(), c.md), "authorization"))
		require.Equal(t, c.token, token, "%v", c.md)
		if c.reason == "" {
			require.Empty(t, reason)
		} else {
			require.Contains(t, reason, c.reason)
		}
	}
}
