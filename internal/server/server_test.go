package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/audit"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// stubJobs answers GetJob with err and CreateJob with INVALID_ARGUMENT, so
// a test sees whether a request reached a handler.
type stubJobs struct {
	pb.UnimplementedJobServiceServer
	err   error
	stall bool          // GetJob waits for its context to end, as on a stalled database
	slow  time.Duration // CreateJob takes this long
}

// GetJob answers with the call's audit.Request in the job's creator field.
func (s *stubJobs) GetJob(ctx context.Context, _ *pb.GetJobRequest) (*pb.Job, error) {
	if s.stall {
		<-ctx.Done()
		return nil, fmt.Errorf("store: job: %w", ctx.Err())
	}
	r, _ := audit.RequestFrom(ctx)
	return &pb.Job{Creator: r.ID + " " + r.Address}, s.err
}

func (s *stubJobs) CreateJob(context.Context, *pb.CreateJobRequest) (*pb.Job, error) {
	time.Sleep(s.slow)
	return nil, status.Error(codes.InvalidArgument, "reached the handler")
}

func passUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	return h(ctx, req)
}

func passStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, ss)
}

// startServer runs a Server on loopback ports with stub services.
func startServer(t *testing.T, jobs *stubJobs, opts ...func(*Config)) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{
		HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0",
		Jobs: jobs, Tenants: pb.UnimplementedTenantServiceServer{}, Audit: pb.UnimplementedAuditServiceServer{}, Usage: pb.UnimplementedUsageServiceServer{},
		AuthUnary: passUnary, AuthStream: passStream, ErrorCode: status.Code,
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := New(ctx, cfg)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return s
}

func do(t *testing.T, s *Server, method, path string, body io.Reader, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.HTTPAddr()+path, body)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// Methods a path does not serve are 405 with Allow, not 501; the gateway's
// method override and form fallback are off.
func TestMethodNotAllowed(t *testing.T) {
	s := startServer(t, &stubJobs{})
	for _, c := range []struct{ method, path, allow string }{
		{"PUT", "/v1/tenants/t/jobs/j", "DELETE, GET"},
		{"OPTIONS", "/v1/tenants/t/jobs", "GET, POST"},
		{"TRACE", "/v1/tenants/t/jobs/j", "DELETE, GET"},
		{"PATCH", "/v1/tenants/t/jobs/j:cancel", "POST"}, // job ids hold no colon: this is CancelJob's path
		// Issue 41, finding 8: known paths, wrong methods.
		{"GET", "/v1/tenants/t/jobs/j1:cancel", "POST"},
		{"DELETE", "/v1/tenants/t/jobs/j1:cancel", "POST"},
		{"GET", "/v1/tenants/t/jobs/j1/tensorboard:open", "POST"},
		{"POST", "/healthz", "GET, HEAD"},
		{"POST", "/metrics", "GET, HEAD"},
		{"POST", "/openapi.json", "GET, HEAD"},
		{"PUT", "/docs", "GET, HEAD"},
		{"PUT", "/v1/tenants/t", "DELETE, GET, PATCH"},
		// Every trainyard.v1 service's routes, not a list that forgot
		// webhooks and experiments.
		{"GET", "/v1/tenants/t/webhooks/w:ping", "POST"},
		{"PUT", "/v1/tenants/t/webhooks/w", "DELETE, GET, PATCH"},
		{"GET", "/v1/tenants/t/webhooks/w/deliveries/d:redeliver", "POST"},
		{"DELETE", "/v1/tenants/t/experiments/e:cancel", "POST"},
		{"POST", "/v1/tenants/t/experiments/e/trials", "GET"},
		{"PUT", "/v1/clusters/c", "DELETE, GET, PATCH"},
	} {
		resp, body := do(t, s, c.method, c.path, nil)
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s: %s", c.method, c.path, body)
		require.Equal(t, c.allow, resp.Header.Get("Allow"), "%s %s", c.method, c.path)
	}
	// X-HTTP-Method-Override does not turn a POST into a DELETE.
	resp, _ := do(t, s, "POST", "/v1/tenants/t/jobs/j", strings.NewReader("x=1"),
		"X-HTTP-Method-Override", "DELETE", "Content-Type", "application/x-www-form-urlencoded")
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	// Nor is a form POST a GET.
	resp, _ = do(t, s, "POST", "/v1/tenants/t/jobs/j", strings.NewReader("x=1"), "Content-Type", "application/x-www-form-urlencoded")
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	// Unknown paths stay 404.
	resp, _ = do(t, s, "PUT", "/v1/nothing/here", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// Invalid UTF-8 in a path or query parameter is 400 naming it.
func TestInvalidUTF8InPathAndQuery(t *testing.T) {
	s := startServer(t, &stubJobs{})
	for path, field := range map[string]string{
		"/v1/tenants/t/jobs/a%ffb":              "name",
		"/v1/tenants/t/jobs/j?readMask=%ff":     "readMask",
		"/v1/tenants/t/jobs/j?%ff=1":            `"\xff"`,
		"/v1/tenants/t%ff/jobs/j/events?x=1":    "parent",
		"/v1/tenants/t/jobs?filter=state%3D%ff": "filter",
	} {
		resp, body := do(t, s, "GET", path, nil)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", path, body)
		var st struct {
			Code    int
			Message string
			Details []struct{ FieldViolations []struct{ Field string } }
		}
		require.NoError(t, json.Unmarshal([]byte(body), &st), body)
		require.Equal(t, int(codes.InvalidArgument), st.Code)
		require.Equal(t, field, st.Details[0].FieldViolations[0].Field, path)
		require.NotContains(t, body, "marshal")
	}
}

// A database outage is 503 with Retry-After.
func TestUnavailableHasRetryAfter(t *testing.T) {
	s := startServer(t, &stubJobs{err: status.Error(codes.Unavailable, "the database is unavailable")})
	resp, _ := do(t, s, "GET", "/v1/tenants/t/jobs/j", nil)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, retryAfter, resp.Header.Get("Retry-After"))
}

// A body under the limit whose protobuf form is larger (a list of -1s: 3
// bytes of JSON, 10 of protobuf each) reaches validation: 400, not 429.
func TestBodyThatExpandsReachesValidation(t *testing.T) {
	const max = 1 << 20
	s := startServer(t, &stubJobs{}, func(c *Config) { c.MaxRequestBytes = max; c.Document.MaxValues = max })
	codes := strings.Repeat("-1,", (max-200)/3)
	body := `{"spec":{"replicas":[{"retryableExitCodes":[` + codes + `-1]}]}}`
	require.Less(t, len(body), max)
	resp, got := do(t, s, "POST", "/v1/tenants/t/jobs", strings.NewReader(body))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, got)
	require.Contains(t, got, "reached the handler")
}

// A connection that never sends its handshake is closed after the
// handshake timeout, and the connection cap holds others back meanwhile.
func TestHandshakeTimeoutAndConnectionCap(t *testing.T) {
	s := startServer(t, &stubJobs{}, func(c *Config) {
		c.HandshakeTimeout = 500 * time.Millisecond
		c.MaxConnections = 1
	})
	silent, err := net.Dial("tcp", s.GRPCAddr())
	require.NoError(t, err)
	defer silent.Close()

	conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	cancel()
	require.Equal(t, codes.DeadlineExceeded, status.Code(err), "the one connection allowed is taken")

	// The server ends the silent connection: the read sees EOF.
	began := time.Now()
	require.NoError(t, silent.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = io.ReadAll(silent)
	require.NoError(t, err, "closed by the server, not by our deadline")
	require.Less(t, time.Since(began), 3*time.Second)

	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	require.NoError(t, err, "the slot is free again")
}

// Every call has a request id, the client's when it sent one, answered in
// X-Request-Id; and the client's address, the HTTP client's over REST.
func TestRequestIDAndClientAddress(t *testing.T) {
	s := startServer(t, &stubJobs{})
	resp, body := do(t, s, "GET", "/v1/tenants/t/jobs/j", nil, "X-Request-Id", "abc-123", "X-Forwarded-For", "203.0.113.9")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "abc-123", resp.Header.Get("X-Request-Id"))
	var j struct{ Creator string }
	require.NoError(t, json.Unmarshal([]byte(body), &j))
	require.Equal(t, "abc-123 127.0.0.1", j.Creator, "the address the gateway saw, not the one the client claims")

	resp, body = do(t, s, "GET", "/v1/tenants/t/jobs/j", nil, "X-Request-Id", "not a valid id!")
	id := resp.Header.Get("X-Request-Id")
	require.Len(t, id, 16, "one of ours instead")
	require.Contains(t, body, id)

	conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	var header metadata.MD
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-request-id", "grpc-1", "x-forwarded-for", "203.0.113.9")
	got, err := pb.NewJobServiceClient(conn).GetJob(ctx, &pb.GetJobRequest{}, grpc.Header(&header))
	require.NoError(t, err)
	require.Equal(t, []string{"grpc-1"}, header.Get("x-request-id"))
	require.True(t, strings.HasPrefix(got.GetCreator(), "grpc-1 127.0.0.1:"), "a gRPC client's own address: %s", got.GetCreator())
}

// By default a call gets an access log line only when it failed; with
// AccessLogAll every call does. Either way the line has the call's
// start and its whole time (a failed call's line is written after the
// fact by default: lazyAccessLog).
func TestAccessLog(t *testing.T) {
	for _, all := range []bool{false, true} {
		var (
			mu  sync.Mutex
			buf bytes.Buffer
		)
		log := slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return buf.Write(p)
		}), nil))
		s := startServer(t, &stubJobs{slow: 50 * time.Millisecond}, func(c *Config) { c.Logger, c.AccessLogAll = log, all })
		began := time.Now()
		conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		jobs := pb.NewJobServiceClient(conn)
		_, err = jobs.GetJob(context.Background(), &pb.GetJobRequest{})
		require.NoError(t, err)
		_, err = jobs.CreateJob(context.Background(), &pb.CreateJobRequest{})
		require.Equal(t, codes.InvalidArgument, status.Code(err))
		require.NoError(t, conn.Close())
		// The line is written after the answer left.
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return strings.Contains(buf.String(), `"grpc.method":"CreateJob"`)
		}, 5*time.Second, 10*time.Millisecond, "the failed call is logged")
		mu.Lock()
		logged := buf.String()
		mu.Unlock()
		require.Contains(t, logged, `"grpc.code":"InvalidArgument"`)
		var line struct {
			Start  time.Time `json:"grpc.start_time"`
			TimeMS float64   `json:"grpc.time_ms"`
			Method string    `json:"grpc.method"`
		}
		for l := range strings.Lines(logged) {
			if strings.Contains(l, `"grpc.method":"CreateJob"`) {
				require.NoError(t, json.Unmarshal([]byte(l), &line), l)
				require.Equal(t, 1, strings.Count(l, `"grpc.start_time"`), l)
				require.Equal(t, 1, strings.Count(l, `"grpc.time_ms"`), l)
			}
		}
		require.Equal(t, "CreateJob", line.Method)
		require.GreaterOrEqual(t, line.TimeMS, 50.0, "the call's whole time, as a number")
		require.WithinDuration(t, began, line.Start, time.Second, "when the call began (to the second)")
		require.Equal(t, all, strings.Contains(logged, `"grpc.method":"GetJob"`), "AccessLogAll %v: the successful call's line:\n%s", all, logged)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
