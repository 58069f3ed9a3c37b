package auth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"
)

// DefaultExempt are the method prefixes that skip authentication and
// authorization: the standard health service (probes carry no token) and
// server reflection (the schema is public; /openapi.json serves it too).
var DefaultExempt = []string{
	"/grpc.health.v1.Health/",
	"/grpc.reflection.v1.ServerReflection/",
	"/grpc.reflection.v1alpha.ServerReflection/",
}

// Messages callers see. Deliberately generic: the reason goes to the log.
const (
	msgUnauthenticated = "authentication required: send a valid bearer token in the authorization header"
	msgUnavailable     = "authentication is temporarily unavailable; retry later"
)

// Interceptor authenticates and authorizes every RPC. It is the only place
// authorization happens: handlers find the result with PrincipalFrom and
// AccessFrom and cannot be reached without it.
type Interceptor struct {
	authn   Authenticator
	agents  Authenticator // AgentService's; nil: refused
	authz   *Authorizer
	log     *slog.Logger
	exempt  []string
	streams StreamPolicy
}

// InterceptorOption configures NewInterceptor.
type InterceptorOption func(*Interceptor)

// WithLogger sets the logger for refusals. Defaults to slog.Default().
func WithLogger(l *slog.Logger) InterceptorOption {
	return func(i *Interceptor) { i.log = l }
}

// WithExempt replaces DefaultExempt. Each entry is a full method name or a
// prefix ending in "/" (a whole service).
func WithExempt(prefixes ...string) InterceptorOption {
	return func(i *Interceptor) { i.exempt = prefixes }
}

// AgentServicePrefix is the method prefix of AgentService, the one
// service remote clusters' agents call (issue 45).
const AgentServicePrefix = "/trainyard.v1.AgentService/"

// WithAgentAuthenticator authenticates AgentService's callers with a,
// and only them: an agent's token is never tried on another service, and
// a user's token never on AgentService. Without it AgentService is
// refused (UNAUTHENTICATED).
func WithAgentAuthenticator(a Authenticator) InterceptorOption {
	return func(i *Interceptor) { i.agents = a }
}

// NewInterceptor returns the interceptor pair built on authn and authz. It
// panics when either is nil: a server without them must not start.
func NewInterceptor(authn Authenticator, authz *Authorizer, opts ...InterceptorOption) *Interceptor {
	if authn == nil || authz == nil {
		panic("auth: NewInterceptor needs an Authenticator and an Authorizer")
	}
	i := &Interceptor{authn: authn, authz: authz, log: slog.Default(), exempt: DefaultExempt, streams: StreamPolicy{}.withDefaults()}
	for _, o := range opts {
		o(i)
	}
	i.log = i.log.With("component", "auth")
	return i
}

// Unary returns the unary server interceptor.
func (i *Interceptor) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if i.isExempt(info.FullMethod) {
			return handler(ctx, req)
		}
		ctx, p, err := i.authenticate(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		acc, err := i.authorize(ctx, p, info.FullMethod, req)
		if err != nil {
			return nil, err
		}
		return handler(WithAccess(ctx, acc), req)
	}
}

// Stream returns the stream server interceptor. The caller is
// authenticated when the stream opens; the request is authorized when the
// handler receives it (a server-streaming handler's first act), and the
// handler can send nothing before that. From then on the stream is guarded
// (stream.go): re-authorized when its tenant changes and periodically,
// ended when the token expires or its lifetime is over; handlers call
// Recheck to re-authorize before sending what the database ordered after
// a change.
func (i *Interceptor) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if i.isExempt(info.FullMethod) {
			return handler(srv, ss)
		}
		ctx, p, err := i.authenticate(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		if _, known := RequiredPermission(info.FullMethod); !known {
			// Deny before the handler runs at all.
			_, err := i.authorize(ctx, p, info.FullMethod, nil)
			return err
		}
		ctx, end := context.WithCancelCause(ctx)
		defer end(nil)
		check := &recheck{i: i, p: p, method: info.FullMethod, end: end}
		ctx = context.WithValue(ctx, recheckKey{}, check)
		as := &authorizingStream{ServerStream: ss, i: i, p: p, method: info.FullMethod, base: ctx, ctx: ctx}
		as.onFirst = func(req any, acc Access) {
			if m, ok := req.(proto.Message); ok {
				m = proto.Clone(m)
				check.setRequest(m)
				go i.guard(ctx, end, p, info.FullMethod, m, acc.TenantID)
			}
		}
		err = handler(srv, as)
		if ended, ok := endedStatus(ctx); ok {
			return ended
		}
		return err
	}
}

func (i *Interceptor) isExempt(method string) bool {
	for _, e := range i.exempt {
		if method == e || strings.HasSuffix(e, "/") && strings.HasPrefix(method, e) {
			return true
		}
	}
	return false
}

// Tap authenticates a gRPC call when its headers arrive, before its
// message is read and decoded (grpc.InTapHandle): a caller without a valid
// token costs the server no decoding at all (issue 41, finding 1). The
// principal rides in the context to the interceptors, which then only
// authorize. Exempt methods pass untouched.
func (i *Interceptor) Tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if i.isExempt(info.FullMethodName) {
		return ctx, nil
	}
	authed, _, err := i.authenticateValues(ctx, info.FullMethodName, info.Header.Get("authorization"))
	if err != nil {
		return ctx, err
	}
	return authed, nil
}

// AuthenticateHTTP authenticates a REST request from its Authorization
// header before anything reads its body, for the same reason as Tap: the
// gateway would otherwise decode the body first, as it must to call gRPC.
// The error is a status error (UNAUTHENTICATED or UNAVAILABLE).
func (i *Interceptor) AuthenticateHTTP(r *http.Request) error {
	_, _, err := i.authenticateValues(r.Context(), r.Method+" "+r.URL.Path, r.Header.Values("Authorization"))
	return err
}

// authenticate reads "authorization: Bearer <token>" from the incoming
// metadata (grpc-gateway forwards the HTTP Authorization header there),
// unless Tap already did.
func (i *Interceptor) authenticate(ctx context.Context, method string) (context.Context, Principal, error) {
	if p, ok := PrincipalFrom(ctx); ok {
		return ctx, p, nil
	}
	return i.authenticateValues(ctx, method, metadata.ValueFromIncomingContext(ctx, "authorization"))
}

func (i *Interceptor) authenticateValues(ctx context.Context, method string, vals []string) (context.Context, Principal, error) {
	token, reason := bearerToken(vals)
	if reason != "" {
		return nil, Principal{}, i.refuseAuthn(ctx, method, unauthenticated(reason, nil))
	}
	authn := i.authn
	if strings.HasPrefix(method, AgentServicePrefix) {
		authn = i.agents
		if authn == nil {
			return nil, Principal{}, i.refuseAuthn(ctx, method, unauthenticated("no remote agents are configured on this server", nil))
		}
	}
	p, err := authn.Authenticate(ctx, token)
	if err == nil && p.Subject == "" {
		err = unauthenticated("authenticator returned a principal without subject", nil)
	}
	if err != nil {
		return nil, Principal{}, i.refuseAuthn(ctx, method, err)
	}
	return WithPrincipal(ctx, p), p, nil
}

func bearerToken(vals []string) (token, reason string) {
	switch len(vals) {
	case 0:
		return "", "no authorization metadata"
	case 1:
	default:
		return "", "more than one authorization value"
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", "authorization is not a bearer token"
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", "empty bearer token"
	}
	return token, ""
}

func (i *Interceptor) refuseAuthn(ctx context.Context, method string, err error) error {
	attrs := []any{"method", method, "peer", peerAddr(ctx), "reason", err.Error()}
	if errors.Is(err, ErrUnavailable) {
		i.log.Warn("authentication unavailable", attrs...)
		return status.Error(codes.Unavailable, msgUnavailable)
	}
	i.log.Info("authentication failed", attrs...)
	return status.Error(codes.Unauthenticated, msgUnauthenticated)
}

// authorize asks the Authorizer and logs refusals. It returns a plain
// status error so no internal cause can reach the caller.
func (i *Interceptor) authorize(ctx context.Context, p Principal, method string, req any) (Access, error) {
	acc, err := i.authz.Authorize(ctx, p, method, req)
	if err == nil {
		return acc, nil
	}
	st := status.Convert(err)
	attrs := []any{"method", method, "subject", p.Subject, "code", st.Code().String(), "reason", st.Message()}
	if cause := errors.Unwrap(err); cause != nil {
		attrs = append(attrs, "cause", cause.Error())
	}
	if st.Code() == codes.Internal {
		i.log.Error("authorization failed", attrs...)
	} else {
		i.log.Info("authorization refused", attrs...)
	}
	return Access{}, st.Err()
}

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// authorizingStream authorizes every message the handler receives and
// refuses to send before one was authorized.
type authorizingStream struct {
	grpc.ServerStream
	i      *Interceptor
	p      Principal
	method string
	base   context.Context // carries the principal

	// onFirst is called once, with the first message authorized.
	onFirst func(req any, acc Access)

	mu     sync.Mutex
	ctx    context.Context // base plus Access once authorized
	tenant string
	authed bool
}

func (s *authorizingStream) Context() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx
}

func (s *authorizingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	acc, err := s.i.authorize(s.base, s.p, s.method, m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.authed && acc.TenantID != s.tenant {
		// Handlers may have scoped themselves to the first message's tenant.
		return status.Error(codes.InvalidArgument, "all messages of a stream must name the same tenant")
	}
	first := !s.authed
	s.ctx, s.tenant, s.authed = WithAccess(s.base, acc), acc.TenantID, true
	if first && s.onFirst != nil {
		s.onFirst(m, acc)
	}
	return nil
}

func (s *authorizingStream) SendMsg(m any) error {
	s.mu.Lock()
	authed := s.authed
	s.mu.Unlock()
	if !authed {
		s.i.log.Error("handler sent on a stream before receiving its request; refused", "method", s.method)
		return status.Error(codes.Internal, "internal error")
	}
	return s.ServerStream.SendMsg(m)
}
