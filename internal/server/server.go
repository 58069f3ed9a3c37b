// Package server runs Trainyard's API: one gRPC server and, on its own
// port, an HTTP server with the REST gateway, health, metrics and the
// OpenAPI document with its docs page.
//
// Every RPC, whether it arrives over gRPC or through the gateway, passes the
// same interceptor chain, outermost first:
//
//	recovery → metrics → logging → authentication + authorization → error mapping → handler
//
// so a panic is INTERNAL, metrics and logs see the final status code, no
// handler runs unauthenticated, and internal errors are masked before they
// leave. The gateway is a gRPC client of this same server over loopback, so
// REST and gRPC cannot drift apart.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

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
	// Auth are the authentication+authorization interceptors. Required: a
	// server without them would serve every tenant to anyone.
	AuthUnary  grpc.UnaryServerInterceptor
	AuthStream grpc.StreamServerInterceptor
	// Errors map handler errors to statuses (api.ErrorInterceptors).
	ErrorsUnary  grpc.UnaryServerInterceptor
	ErrorsStream grpc.StreamServerInterceptor
	// Ready reports whether the server can do its work (Postgres, OIDC);
	// /readyz and the gRPC health service follow it.
	Ready func(context.Context) error
	// Registry receives the gRPC metrics and is served on /metrics.
	// Defaults to a new registry with Go and process collectors.
	Registry *prometheus.Registry
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
	if c.Ready == nil {
		c.Ready = func(context.Context) error { return nil }
	}
	switch {
	case c.Jobs == nil || c.Tenants == nil:
		return errors.New("server: Jobs and Tenants are required")
	case c.AuthUnary == nil || c.AuthStream == nil:
		return errors.New("server: auth interceptors are required")
	case c.ErrorsUnary == nil || c.ErrorsStream == nil:
		return errors.New("server: error interceptors are required")
	}
	return nil
}

// Server is a listening API server.
type Server struct {
	cfg      Config
	grpc     *grpc.Server
	health   *health.Server
	http     *http.Server
	grpcLn   net.Listener
	httpLn   net.Listener
	gwConn   *grpc.ClientConn
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
	// Only the call's outcome is logged: never payloads, which carry secret
	// values and tokens.
	logOpts := []logging.Option{logging.WithLogOnEvents(logging.FinishCall)}
	s.grpc = grpc.NewServer(
		grpc.MaxRecvMsgSize(cfg.MaxRequestBytes),
		grpc.ChainUnaryInterceptor(
			recovery.UnaryServerInterceptor(recoverOpt),
			metrics.UnaryServerInterceptor(),
			logging.UnaryServerInterceptor(slogAdapter(log), logOpts...),
			cfg.AuthUnary,
			cfg.ErrorsUnary,
		),
		grpc.ChainStreamInterceptor(
			recovery.StreamServerInterceptor(recoverOpt),
			metrics.StreamServerInterceptor(),
			logging.StreamServerInterceptor(slogAdapter(log), logOpts...),
			cfg.AuthStream,
			cfg.ErrorsStream,
		),
	)
	pb.RegisterJobServiceServer(s.grpc, cfg.Jobs)
	pb.RegisterTenantServiceServer(s.grpc, cfg.Tenants)
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
	port := s.grpcLn.Addr().(*net.TCPAddr).Port
	s.gwConn, err = grpc.NewClient("passthrough:///"+net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(cfg.MaxRequestBytes), grpc.MaxCallRecvMsgSize(64<<20)),
	)
	if err != nil {
		s.closeListeners()
		return nil, err
	}
	gw, err := newGateway(ctx, s.gwConn)
	if err != nil {
		s.closeListeners()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{Registry: cfg.Registry}))
	webopenapi.Register(mux)
	mux.Handle("/v1/", limitBody(cfg.MaxRequestBytes, gw))
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// GRPCAddr and HTTPAddr are the addresses actually listened on (useful with port 0).
func (s *Server) GRPCAddr() string { return s.grpcLn.Addr().String() }
func (s *Server) HTTPAddr() string { return s.httpLn.Addr().String() }

func (s *Server) closeListeners() {
	s.grpcLn.Close()
	s.httpLn.Close()
	if s.gwConn != nil {
		s.gwConn.Close()
	}
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := s.cfg.Ready(ctx); err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// Run serves until ctx ends, then stops gracefully: new calls are refused,
// running ones get a few seconds (watches and log streams are cut after that).
func (s *Server) Run(ctx context.Context) error {
	errc := make(chan error, 2)
	go func() { errc <- s.grpc.Serve(s.grpcLn) }()
	go func() {
		if err := s.http.Serve(s.httpLn); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	go s.watchReadiness(ctx)
	s.cfg.Logger.Info("serving", "grpc", s.GRPCAddr(), "http", s.HTTPAddr())

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
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-shutdownCtx.Done():
		s.grpc.Stop()
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
		if err := s.cfg.Ready(checkCtx); err != nil {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		cancel()
		s.health.SetServingStatus("", st)
		s.health.SetServingStatus(pb.JobService_ServiceDesc.ServiceName, st)
		s.health.SetServingStatus(pb.TenantService_ServiceDesc.ServiceName, st)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func slogAdapter(l *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		l.Log(ctx, slog.Level(lvl), msg, fields...)
	})
}
