package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/grpc/test/bufconn"

	"github.com/trainyard/trainyard/internal/document"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
	webopenapi "github.com/trainyard/trainyard/web-openapi"
)

// Config configures a Server.
type Config struct {
	// HTTPAddr serves REST, /healthz, /readyz, /metrics, /openapi.json and
	// /docs. Defaults to ":8080".
	HTTPAddr string
	// GRPCAddr serves gRPC. Defaults to ":9090".
	GRPCAddr string
	// MaxRequestBytes caps a request body (REST) or message (gRPC); larger
	// ones get 413 / RESOURCE_EXHAUSTED. Defaults to 4 MiB.
	MaxRequestBytes int
	// Jobs and Tenants are the service implementations. Required.
	Jobs    pb.JobServiceServer
	Tenants pb.TenantServiceServer
	Audit   pb.AuditServiceServer
	Usage   pb.UsageServiceServer
	// Webhooks is optional: without it the service is not served.
	Webhooks pb.WebhookServiceServer
	// Clusters is optional: without it the service is not served.
	Clusters pb.ClusterServiceServer
	// Experiments is optional: without it the service is not served.
	Experiments pb.ExperimentServiceServer
	// Agents is AgentService, remote clusters' agents' (issue 45):
	// optional, and served on the gRPC port only, never through the
	// gateway (it has no REST route).
	Agents pb.AgentServiceServer
	// Auth are the authentication+authorization interceptors. Required: a
	// server without them would serve every tenant to anyone.
	AuthUnary  grpc.UnaryServerInterceptor
	AuthStream grpc.StreamServerInterceptor
	// AuthTap authenticates a gRPC call from its headers, before its
	// message is decoded (auth.Interceptor.Tap), and AuthHTTP a REST
	// request before its body is read (auth.Interceptor.AuthenticateHTTP).
	// Optional, but without them strangers' bodies are decoded.
	AuthTap  tap.ServerInHandle
	AuthHTTP func(*http.Request) error
	// Document bounds what one REST body may hold once decoded (values,
	// nesting). MaxValues defaults to DefaultJSONValues for JSON bodies
	// and to package document's default (100,000) for YAML, whose parser
	// costs more per value; the rest to package document's defaults.
	Document document.Limits
	// ErrorCode classifies the errors handlers return (api.Code, the one
	// mapping); the error interceptor (errors.go) masks what must not
	// leave. Required.
	ErrorCode func(error) codes.Code
	// CheckRequest checks every request message before its handler
	// (api.CheckRequest, the text boundary); an error is returned as it
	// is. Optional.
	CheckRequest func(any) error
	// AccessLogAll logs every call at INFO when it ends. Otherwise a call
	// that succeeded is logged at DEBUG, and only failed calls at INFO and
	// above (go-grpc-middleware's levels for their codes): a line per
	// successful submit was a tenth of serve's CPU per CreateJob at one
	// client (issue 47), and the audit log and the call metrics already
	// count every successful call.
	AccessLogAll bool
	// RequestTimeout bounds every unary call on the server, within the
	// caller's own deadline; a call it ends is UNAVAILABLE (503 with
	// Retry-After). Defaults to 30s.
	RequestTimeout time.Duration
	// MaxStreamsPerCaller caps the server-streaming calls (watches, log
	// streams) one caller, by OIDC subject, may have open at once on this
	// server; more are RESOURCE_EXHAUSTED. Defaults to 32.
	MaxStreamsPerCaller int
	// MaxConcurrentStreams caps the calls in flight on one gRPC connection
	// (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). Defaults to 256.
	MaxConcurrentStreams uint32
	// HandshakeTimeout bounds how long a new connection may take to say
	// what it wants: the HTTP/2 preface and settings on gRPC, the request
	// headers on HTTP. A connection that sends nothing is closed after it.
	// Defaults to 10s (grpc-go's own default is 120s).
	HandshakeTimeout time.Duration
	// MaxConnections caps the open connections of each listener (gRPC and
	// HTTP). Beyond it new connections wait in the kernel's accept queue
	// until one closes. Defaults to 4096.
	MaxConnections int
	// TensorBoard reaches jobs' TensorBoards for the proxy at
	// /v1/tenants/{tenant}/jobs/{job}/tensorboard/ (tensorboard.go). None
	// without a cluster: the proxy answers UNAVAILABLE.
	TensorBoard TensorBoardDialer
	// Ready are what the server needs to do its work (Postgres, OIDC);
	// /readyz and the gRPC health service follow them.
	Ready []ReadyCheck
	// Console is the web console (package web), served at / for every
	// path no other route takes. None when nil.
	Console http.Handler
	// Registry receives the gRPC metrics and is served on /metrics.
	// Defaults to a new registry with Go and process collectors.
	Registry *prometheus.Registry
	// Fairness bounds each tenant's share of the server (fairness.go).
	// Zero fields take DefaultFairness's.
	Fairness Fairness
	// TLS, when set, makes both listeners serve TLS from these files,
	// reloaded when they change (tls.go). Nil serves plaintext.
	TLS *TLSFiles
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) withDefaults() error {
	if c.HTTPAddr == "" {
		c.HTTPAddr = ":8080"
	}
	if c.GRPCAddr == "" {
		c.GRPCAddr = ":9090"
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = 4 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
		c.Registry.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.MaxStreamsPerCaller <= 0 {
		c.MaxStreamsPerCaller = 32
	}
	if c.MaxConcurrentStreams == 0 {
		c.MaxConcurrentStreams = 256
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = 4096
	}
	if c.Fairness.Unary.Concurrency <= 0 {
		c.Fairness.Unary = DefaultFairness.Unary
	}
	if c.Fairness.Streams <= 0 {
		c.Fairness.Streams = DefaultFairness.Streams
	}
	if c.Fairness.Admin.Concurrency <= 0 {
		c.Fairness.Admin = DefaultFairness.Admin
	}
	switch {
	case c.Jobs == nil || c.Tenants == nil || c.Audit == nil || c.Usage == nil:
		return errors.New("server: Jobs, Tenants, Audit and Usage are required")
	case c.AuthUnary == nil || c.AuthStream == nil:
		return errors.New("server: auth interceptors are required")
	case c.ErrorCode == nil:
		return errors.New("server: ErrorCode is required")
	}
	return nil
}

// streamWorkers is how many goroutines each gRPC server keeps to run
// calls on (grpc.NumStreamWorkers); a call that finds none free gets a
// goroutine of its own, as without them. A call's new goroutine grew its
// stack through the interceptor chain every time: 7 % of serve's CPU per
// submit at one client (issue 47).
const streamWorkers = 32

// flowWindow is a gRPC connection's fixed flow-control window, for each
// stream and for the connection, when the largest message is maxMsg
// bytes: a whole message fits, so none waits for a window update. A fixed
// window also turns off grpc-go's bandwidth-delay estimate, which answered
// every request at one client with a WINDOW_UPDATE and a PING and read
// the client's acknowledgment back: a write, a read and their goroutine
// wake-ups more per call (issue 47). The window is credit, not a buffer:
// the server reads each request as it arrives, and refuses an
// unauthenticated stream on its headers (grpc.InTapHandle).
func flowWindow(maxMsg int) int32 {
	return int32(min(max(maxMsg, 1<<20), 1<<30))
}

// DefaultJSONValues is the default budget of values in one JSON body:
// a BatchCreateJobs of 1,000 rich jobs fits, a 4 MB list of zeros does not.
const DefaultJSONValues = 500_000

// ReadyCheck is one dependency /readyz checks. Its error is logged; the
// caller of /readyz sees only the name.
type ReadyCheck struct {
	Name  string // "postgres", "oidc"
	Check func(context.Context) error
}

// Server is a listening API server.
type Server struct {
	cfg    Config
	grpc   *grpc.Server // public
	gwGRPC *grpc.Server // the gateway's, in memory (bufconn)
	health *health.Server
	http   *http.Server
	grpcLn net.Listener
	gwLn   net.Listener
	httpLn net.Listener
	gwConn *grpc.ClientConn
	tls    bool // the HTTP listener serves TLS
}

// New listens on both addresses and wires everything; Run serves.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg}
	metrics := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())
	cfg.Registry.MustRegister(metrics)

	log := cfg.Logger
	recoverOpt := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "panic in handler", "panic", fmt.Sprint(p))
		return status.Error(codes.Internal, "internal error")
	})
	accessUnary, accessStream := accessLogInterceptors(log, cfg.AccessLogAll)
	streams := newStreamLimiter(cfg.MaxStreamsPerCaller)
	errorsUnary, errorsStream := errorInterceptors(log, cfg.ErrorCode, cfg.CheckRequest)
	decodeUnary, decodeStream := decodeErrorInterceptors()
	fair := newFairness(cfg.Fairness) // one for both gRPC servers: REST and gRPC share a tenant's seats
	newGRPC := func(viaGateway bool, extra ...grpc.ServerOption) *grpc.Server {
		reqUnary, reqStream := requestInterceptors(viaGateway)
		maxMsg := cfg.MaxRequestBytes
		if viaGateway {
			maxMsg = gatewayMessageLimit(cfg.MaxRequestBytes)
		}
		opts := append([]grpc.ServerOption{
			grpc.NumStreamWorkers(streamWorkers),
			grpc.MaxRecvMsgSize(maxMsg),
			grpc.StaticStreamWindowSize(flowWindow(maxMsg)),
			grpc.StaticConnWindowSize(flowWindow(maxMsg)),
			grpc.ForceServerCodecV2(newRequestCodec()),
			grpc.ChainUnaryInterceptor(
				recovery.UnaryServerInterceptor(recoverOpt),
				decodeUnary,
				reqUnary,
				metrics.UnaryServerInterceptor(),
				accessUnary,
				timeoutInterceptor(cfg.RequestTimeout),
				cfg.AuthUnary,
				fair.unaryInterceptor(),
				errorsUnary,
			),
			grpc.ChainStreamInterceptor(
				recovery.StreamServerInterceptor(recoverOpt),
				decodeStream,
				reqStream,
				metrics.StreamServerInterceptor(),
				accessStream,
				cfg.AuthStream,
				fair.streamInterceptor(),
				streams.interceptor(),
				errorsStream,
			),
		}, extra...)
		g := grpc.NewServer(opts...)
		pb.RegisterJobServiceServer(g, cfg.Jobs)
		pb.RegisterTenantServiceServer(g, cfg.Tenants)
		pb.RegisterAuditServiceServer(g, cfg.Audit)
		pb.RegisterUsageServiceServer(g, cfg.Usage)
		if cfg.Webhooks != nil {
			pb.RegisterWebhookServiceServer(g, cfg.Webhooks)
		}
		if cfg.Clusters != nil {
			pb.RegisterClusterServiceServer(g, cfg.Clusters)
		}
		if cfg.Experiments != nil {
			pb.RegisterExperimentServiceServer(g, cfg.Experiments)
		}
		if cfg.Agents != nil && !viaGateway {
			pb.RegisterAgentServiceServer(g, cfg.Agents)
		}
		return g
	}
	public := []grpc.ServerOption{}
	var certs *certSource
	if cfg.TLS != nil {
		var err error
		if certs, err = newCertSource(*cfg.TLS, log); err != nil {
			return nil, err
		}
		public = append(public, grpc.Creds(credentials.NewTLS(certs.config("h2"))))
	}
	if cfg.AuthTap != nil {
		public = append(public, grpc.InTapHandle(cfg.AuthTap))
	}
	s.grpc = newGRPC(false, append(public,
		grpc.MaxConcurrentStreams(cfg.MaxConcurrentStreams),
		grpc.ConnectionTimeout(cfg.HandshakeTimeout),
		// MaxConnectionIdle: a connection that has made no call for this
		// long is sent GOAWAY (clients reconnect when they next need to),
		// so idle connections do not count against MaxConnections forever.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: time.Minute, Timeout: 20 * time.Second, MaxConnectionIdle: 15 * time.Minute}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}),
	)...)
	s.gwGRPC = newGRPC(true)
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	metrics.InitializeMetrics(s.grpc)

	var err error
	if s.grpcLn, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
		return nil, fmt.Errorf("listen gRPC on %s: %w", cfg.GRPCAddr, err)
	}
	if s.httpLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		s.grpcLn.Close()
		return nil, fmt.Errorf("listen HTTP on %s: %w", cfg.HTTPAddr, err)
	}
	s.grpcLn = netutil.LimitListener(s.grpcLn, cfg.MaxConnections)
	s.httpLn = netutil.LimitListener(s.httpLn, cfg.MaxConnections)
	// In memory: no socket anyone else could connect to (finding 9).
	gwLn := bufconn.Listen(1 << 20)
	s.gwLn = gwLn
	s.gwConn, err = grpc.NewClient("passthrough:///gateway",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return gwLn.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(gatewayMessageLimit(cfg.MaxRequestBytes)), grpc.MaxCallRecvMsgSize(64<<20)),
		grpc.WithStaticStreamWindowSize(flowWindow(64<<20)),
		grpc.WithStaticConnWindowSize(flowWindow(64<<20)),
	)
	if err != nil {
		s.closeListeners()
		return nil, err
	}
	yamlLimits := cfg.Document
	if yamlLimits.MaxBytes <= 0 {
		yamlLimits.MaxBytes = 2 * cfg.MaxRequestBytes
	}
	jsonLimits := yamlLimits
	if jsonLimits.MaxValues <= 0 {
		jsonLimits.MaxValues = DefaultJSONValues
	}
	gw, err := newGateway(ctx, s.gwConn, jsonLimits, yamlLimits, gatewayMessageLimit(cfg.MaxRequestBytes))
	if err != nil {
		s.closeListeners()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{Registry: cfg.Registry}))
	webopenapi.Register(mux)
	if cfg.Console != nil {
		// "/" and not "GET /": a method-specific catch-all would conflict
		// with the gateway's "/v1/". The console answers GETs only.
		mux.Handle("/", cfg.Console)
	}
	onlyGET(mux, "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css")
	rs := append(apiRoutes(),
		newRoute(http.MethodPost, tensorBoardPath+":open"))
	mux.Handle("/v1/", rs.methodCheck(authenticateFirst(cfg.AuthHTTP, limitBody(cfg.MaxRequestBytes, gw))))
	s.routeTensorBoard(mux, gw)
	s.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: cfg.HandshakeTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       2 * time.Minute,
	}
	if certs != nil {
		s.http.TLSConfig, s.tls = certs.config("h2", "http/1.1"), true
	}
	return s, nil
}

// GRPCAddr and HTTPAddr are the addresses actually listened on (useful with port 0).
func (s *Server) GRPCAddr() string { return s.grpcLn.Addr().String() }
func (s *Server) HTTPAddr() string { return s.httpLn.Addr().String() }

func (s *Server) closeListeners() {
	s.grpcLn.Close()
	s.httpLn.Close()
	s.gwLn.Close()
	if s.gwConn != nil {
		s.gwConn.Close()
	}
}

// readyz answers "ok", or 503 naming the dependency that is not ready. The
// error itself (a Postgres address, an issuer's response) is logged, never
// shown: /readyz is open to anyone.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if name, err := s.notReady(ctx); err != nil {
		s.cfg.Logger.WarnContext(ctx, "not ready", "check", name, "error", err)
		http.Error(w, "not ready: "+name, http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// notReady runs the checks in order and returns the first failing one.
func (s *Server) notReady(ctx context.Context) (string, error) {
	for _, c := range s.cfg.Ready {
		if err := c.Check(ctx); err != nil {
			return c.Name, err
		}
	}
	return "", nil
}

// Run serves until ctx ends, then stops gracefully: new calls are refused,
// running ones get a few seconds (watches and log streams are cut after that).
func (s *Server) Run(ctx context.Context) error {
	errc := make(chan error, 3)
	go func() { errc <- s.grpc.Serve(s.grpcLn) }()
	go func() { errc <- s.gwGRPC.Serve(s.gwLn) }()
	go func() {
		serve := s.http.Serve
		if s.tls {
			serve = func(ln net.Listener) error { return s.http.ServeTLS(ln, "", "") }
		}
		if err := serve(s.httpLn); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	go s.watchReadiness(ctx)
	s.cfg.Logger.Info("serving", "grpc", s.GRPCAddr(), "http", s.HTTPAddr(), "tls", s.tls)

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	s.health.Shutdown()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.http.Shutdown(shutdownCtx)
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); s.gwGRPC.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-shutdownCtx.Done():
		s.grpc.Stop()
		s.gwGRPC.Stop()
	}
	s.gwConn.Close()
	return err
}

// watchReadiness keeps the gRPC health service in step with Ready.
func (s *Server) watchReadiness(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		checkCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		st := healthpb.HealthCheckResponse_SERVING
		if _, err := s.notReady(checkCtx); err != nil {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		cancel()
		s.health.SetServingStatus("", st)
		s.health.SetServingStatus(pb.JobService_ServiceDesc.ServiceName, st)
		s.health.SetServingStatus(pb.TenantService_ServiceDesc.ServiceName, st)
		s.health.SetServingStatus(pb.AuditService_ServiceDesc.ServiceName, st)
		s.health.SetServingStatus(pb.UsageService_ServiceDesc.ServiceName, st)
		s.health.SetServingStatus(pb.WebhookService_ServiceDesc.ServiceName, st)
		s.health.SetServingStatus(pb.ClusterService_ServiceDesc.ServiceName, st)
		s.health.SetServingStatus(pb.ExperimentService_ServiceDesc.ServiceName, st)
		s.health.SetServingStatus(pb.AgentService_ServiceDesc.ServiceName, st)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
