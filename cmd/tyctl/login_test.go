package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/auth/oidctest"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// tyctl login against the project's test OIDC issuer (a real HTTP issuer
// serving discovery, PKCE, the device flow and refresh), and a gRPC server
// that verifies every bearer token with Trainyard's own OIDC authenticator:
// signature, issuer, audience and expiry, for real.

func (f *fakeTenants) ListTenants(ctx context.Context, req *pb.ListTenantsRequest) (*pb.ListTenantsResponse, error) {
	f.record(ctx, "ListTenants", req)
	return &pb.ListTenantsResponse{Tenants: []*pb.Tenant{
		{Name: "tenants/ml", Members: []*pb.Member{{Principal: &pb.Member_Group{Group: "ml-team"}, Role: pb.Role_ROLE_EDITOR}}},
		{Name: "tenants/speech", Members: []*pb.Member{{Principal: &pb.Member_Subject{Subject: "alice"}, Role: pb.Role_ROLE_VIEWER}}},
	}}, nil
}

type loginEnv struct {
	*fixture
	issuer  *oidctest.Issuer
	config  string
	browser *testBrowser
}

// startLoginEnv runs the issuer and a server whose calls are refused
// unless their token verifies.
func startLoginEnv(t *testing.T) *loginEnv {
	t.Helper()
	iss := oidctest.NewIssuer(t)
	iss.SetLogin(oidctest.Claims{Subject: "alice", Email: "alice@example.com", Groups: []string{"ml-team"}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	authn, err := auth.NewOIDC(ctx, auth.OIDCConfig{Issuer: iss.URL(), Audience: oidctest.DefaultAudience})
	require.NoError(t, err)
	verify := func(ctx context.Context) error {
		md, _ := metadata.FromIncomingContext(ctx)
		raw := strings.TrimPrefix(strings.Join(md.Get("authorization"), ""), "Bearer ")
		if _, err := authn.Authenticate(ctx, raw); err != nil {
			return status.Error(codes.Unauthenticated, err.Error())
		}
		return nil
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rec := &recorder{}
	f := &fixture{addr: lis.Addr().String(), rec: rec, jobs: &fakeJobs{recorder: rec, pageSize: 50}, tenants: &fakeTenants{recorder: rec}}
	s := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := verify(ctx); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}))
	pb.RegisterJobServiceServer(s, f.jobs)
	pb.RegisterTenantServiceServer(s, f.tenants)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return &loginEnv{fixture: f, issuer: iss, config: filepath.Join(t.TempDir(), "tyctl", "config.yaml"), browser: &testBrowser{}}
}

// testBrowser is the person's browser: it visits the URL tyctl opens and
// follows the redirects, back to tyctl's loopback port for the PKCE flow.
type testBrowser struct {
	mu     sync.Mutex
	opened []string
	wg     sync.WaitGroup
}

func (b *testBrowser) open(url string) error {
	b.mu.Lock()
	b.opened = append(b.opened, url)
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
		}
	}()
	return nil
}

// run runs tyctl with the env's config file and browser, at time now
// (zero: the real time).
func (e *loginEnv) run(t *testing.T, now time.Time, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := map[string]string{envConfig: e.config}
	a := newApp(strings.NewReader(""), &stdout, &stderr, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	a.openURL = e.browser.open
	if !now.IsZero() {
		a.now = func() time.Time { return now }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := run(ctx, args, a)
	e.browser.wg.Wait()
	return result{stdout.String(), stderr.String(), code}
}

func (e *loginEnv) stored(t *testing.T) configFile {
	t.Helper()
	c, err := loadConfig(e.config, os.ReadFile)
	require.NoError(t, err)
	return c
}

func (e *loginEnv) lastAuth(t *testing.T, method string) string {
	t.Helper()
	calls := e.rec.methodCalls(method)
	require.NotEmpty(t, calls)
	return strings.TrimPrefix(strings.Join(calls[len(calls)-1].auth, ""), "Bearer ")
}

func TestLoginBrowserPKCE(t *testing.T) {
	e := startLoginEnv(t)
	r := e.run(t, time.Time{}, "--server", e.addr, "--insecure", "--tenant", "ml", "login", "--issuer", e.issuer.URL())
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "Logged in as alice")
	require.Len(t, e.browser.opened, 1, "the browser was opened on the issuer's sign-in page")
	require.True(t, strings.HasPrefix(e.browser.opened[0], e.issuer.URL()+"/authorize?"), e.browser.opened[0])
	require.Contains(t, e.browser.opened[0], "code_challenge_method=S256")
	require.Equal(t, 1, e.issuer.TokenRequests("authorization_code"))

	st, err := os.Stat(e.config)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the config holds tokens")
	c := e.stored(t)
	require.Equal(t, e.addr, c.Server)
	require.Equal(t, "ml", c.Tenant)
	require.True(t, c.Insecure)
	require.Equal(t, e.issuer.URL(), c.Login.Issuer)
	require.NotEmpty(t, c.Login.IDToken)
	require.NotEmpty(t, c.Login.RefreshToken)
	require.NotContains(t, r.stdout+r.stderr, c.Login.IDToken)
	require.NotContains(t, r.stdout+r.stderr, c.Login.RefreshToken)

	// Later commands need no flags: server, tenant and token come from the config.
	r = e.run(t, time.Time{}, "jobs", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, c.Login.IDToken, e.lastAuth(t, "ListJobs"), "the stored ID token, which the server verified")
	require.Equal(t, "tenants/ml", e.rec.methodCalls("ListJobs")[0].req.(*pb.ListJobsRequest).GetParent())

	r = e.run(t, time.Time{}, "whoami")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "subject:  alice\n")
	require.Contains(t, r.stdout, "email:    alice@example.com\n")
	require.Contains(t, r.stdout, "groups:   ml-team\n")
	require.Contains(t, r.stdout, "tenants:  ml (editor), speech (viewer)\n")

	r = e.run(t, time.Time{}, "logout")
	require.Equal(t, 0, r.code, r.stderr)
	c = e.stored(t)
	require.Nil(t, c.Login)
	require.Equal(t, e.addr, c.Server, "logout keeps the server and tenant")
	r = e.run(t, time.Time{}, "jobs", "list")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "Unauthenticated")
}

func TestLoginDeviceFlow(t *testing.T) {
	e := startLoginEnv(t)
	e.issuer.EnableDeviceFlow(true)
	r := e.run(t, time.Time{}, "--server", e.addr, "--insecure", "--tenant", "ml", "login", "--issuer", e.issuer.URL())
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `To sign in, open `+e.issuer.URL()+`/device and enter the code [0-9A-F]{8}\n`, r.stderr)
	require.Equal(t, 1, e.issuer.TokenRequests("urn:ietf:params:oauth:grant-type:device_code"))
	require.Zero(t, e.issuer.TokenRequests("authorization_code"), "the device flow is preferred when offered")

	r = e.run(t, time.Time{}, "jobs", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, e.stored(t).Login.IDToken, e.lastAuth(t, "ListJobs"))
}

func TestLoginRefreshesAnExpiredToken(t *testing.T) {
	e := startLoginEnv(t)
	e.issuer.SetTokenLifetime(10 * time.Minute)
	r := e.run(t, time.Time{}, "--server", e.addr, "--insecure", "--tenant", "ml", "login", "--issuer", e.issuer.URL())
	require.Equal(t, 0, r.code, r.stderr)
	first := e.stored(t).Login

	// Eleven minutes on, the stored token has expired: the next command
	// renews it first, and the server gets (and verifies) the new one.
	later := time.Now().Add(11 * time.Minute)
	e.issuer.SetTokenLifetime(time.Hour)
	r = e.run(t, later, "jobs", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 1, e.issuer.TokenRequests("refresh_token"))
	renewed := e.stored(t).Login
	require.NotEqual(t, first.IDToken, renewed.IDToken)
	require.NotEqual(t, first.RefreshToken, renewed.RefreshToken, "the issuer rotates refresh tokens; the new one is kept")
	require.Equal(t, renewed.IDToken, e.lastAuth(t, "ListJobs"))

	// A refresh token the issuer no longer honours: a clear error, no token in it.
	c := e.stored(t)
	c.Login.RefreshToken = first.RefreshToken // used already
	require.NoError(t, saveConfig(e.config, c))
	r = e.run(t, later.Add(time.Hour), "jobs", "list")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "renewing the login failed (invalid_grant): run tyctl login")
	require.NotContains(t, r.stderr, first.RefreshToken)
}

func TestLoginNeedsAnIssuer(t *testing.T) {
	e := startLoginEnv(t)
	r := e.run(t, time.Time{}, "login")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "--issuer is required")
}
