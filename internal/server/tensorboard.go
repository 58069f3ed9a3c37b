package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// TensorBoard through the API server: /v1/tenants/{tenant}/jobs/{job}/tensorboard/
// serves the job's TensorBoard, so that nobody needs cluster access or a
// port-forward to open it.
//
// Access is GetJob's, by calling GetJob: the request's bearer token goes,
// over the gateway's in-memory gRPC, through the same authentication,
// Authorizer and interceptors as any call, so a viewer of the tenant gets
// in, a caller from another tenant gets 404 (as GetJob answers for a job
// they cannot see) and a request without a token 401. GetTenant (same
// permission) gives the namespace. Only then is the request proxied, to
// port 6006 of the job's TensorBoard pod, through the Kubernetes API
// server's port-forward (kube.PodDialer): the tenant's NetworkPolicy stays
// closed to everything outside the namespace, and the API server's
// identity holds one right for it, create on pods/portforward, in tenant
// namespaces only.
//
// The token is not forwarded: Authorization and cookies are dropped before
// TensorBoard sees the request. TensorBoard's pages use relative URLs, so
// they work under the prefix; the prefix without its trailing slash
// redirects to it, as a directory does, or those URLs would resolve one
// level up. GET and POST are proxied (TensorBoard's time series plugin
// POSTs its queries).
//
// A browser following a link sends no Authorization header, so the
// console first POSTs .../tensorboard:open with its bearer token, and the
// answer sets the token as a cookie that only this job's proxy path
// receives (HttpOnly, SameSite=Strict, Secure over TLS, ending with the
// browser session; the token's own expiry still applies). The proxy takes
// the cookie when there is no Authorization header. :open itself takes
// only the header, so a cookie can not mint another, and SameSite keeps
// other sites' pages from riding it.

// TensorBoardDialer reaches jobs' TensorBoards in the clusters that run
// them (kube.Clusters).
type TensorBoardDialer interface {
	// Reaches is nil when pods in the named cluster can be reached; else
	// an error the API's error mapping (Config.ErrorCode) gives a code
	// (FAILED_PRECONDITION: no credentials for that cluster).
	Reaches(cluster string) error
	// DialTensorBoard connects to the TensorBoard of job in namespace of
	// cluster.
	DialTensorBoard(ctx context.Context, cluster, namespace, job string) (net.Conn, error)
}

const (
	tensorBoardPath = "/v1/tenants/{tenant}/jobs/{job}/tensorboard"
	// tensorBoardCookie carries a browser's bearer token to the proxy.
	tensorBoardCookie = "trainyard-tensorboard"
)

type tensorBoardProxy struct {
	code     func(error) codes.Code
	jobs     pb.JobServiceClient
	tenants  pb.TenantServiceClient
	dial     TensorBoardDialer
	proxy    *httputil.ReverseProxy
	log      *slog.Logger
	writeErr func(http.ResponseWriter, *http.Request, error)
}

// tbTarget is where one request goes, decided by the handler for Rewrite.
type tbTarget struct {
	cluster, namespace, job, rawPath string
}

type tbTargetKey struct{}

func newTensorBoardProxy(conn *grpc.ClientConn, dial TensorBoardDialer, code func(error) codes.Code, log *slog.Logger, writeErr func(http.ResponseWriter, *http.Request, error)) *tensorBoardProxy {
	t := &tensorBoardProxy{code: code, jobs: pb.NewJobServiceClient(conn), tenants: pb.NewTenantServiceClient(conn), dial: dial, log: log, writeErr: writeErr}
	transport := &http.Transport{
		// The URL's host is <job>.<namespace>.<cluster>, all DNS
		// labels: one pool of connections per TensorBoard.
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			jobID, rest, _ := strings.Cut(host, ".")
			ns, cluster, _ := strings.Cut(rest, ".")
			return t.dial.DialTensorBoard(ctx, cluster, ns, jobID)
		},
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: time.Minute,
	}
	t.proxy = &httputil.ReverseProxy{
		Transport: transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			tg := pr.In.Context().Value(tbTargetKey{}).(tbTarget)
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = tg.job + "." + tg.namespace + "." + tg.cluster
			pr.Out.URL.Path, _ = url.PathUnescape(tg.rawPath)
			pr.Out.URL.RawPath = tg.rawPath
			pr.Out.Host = "localhost"
			// The caller's credentials are Trainyard's, not TensorBoard's.
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			tg := r.Context().Value(tbTargetKey{}).(tbTarget)
			t.log.WarnContext(r.Context(), "tensorboard proxy", "cluster", tg.cluster, "namespace", tg.namespace, "job", tg.job, "err", err)
			t.writeErr(w, r, status.Errorf(codes.Unavailable, "the job's TensorBoard is not reachable: it is starting, or it stopped with the job"))
		},
	}
	return t
}

func (t *tensorBoardProxy) redirect(w http.ResponseWriter, r *http.Request) {
	u := *r.URL
	u.Path += "/"
	u.RawPath = ""
	http.Redirect(w, r, u.String(), http.StatusMovedPermanently)
}

func (t *tensorBoardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	authz := r.Header.Get("Authorization")
	if authz == "" {
		if c, err := r.Cookie(tensorBoardCookie); err == nil && c.Value != "" {
			authz = "Bearer " + c.Value
		}
	}
	tg, prefix, err := t.target(r, authz)
	if err != nil {
		t.writeErr(w, r, err)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if !ok || rest == "" {
		rest = "/"
	}
	tg.rawPath = rest
	t.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tbTargetKey{}, tg)))
}

// open answers POST .../tensorboard:open: with the caller's bearer token
// in a cookie for the proxy's path, and the path as {"url": ...}.
func (t *tensorBoardProxy) open(w http.ResponseWriter, r *http.Request) {
	authz := r.Header.Get("Authorization")
	_, prefix, err := t.target(r, authz)
	if err != nil {
		t.writeErr(w, r, err)
		return
	}
	scheme, token, _ := strings.Cut(authz, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" || !validCookieValue(token) {
		// GetJob accepted it, so it is a bearer token a cookie cannot hold.
		t.writeErr(w, r, status.Error(codes.InvalidArgument, "the bearer token cannot be kept in a cookie; send it in the Authorization header to the TensorBoard path instead"))
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: tensorBoardCookie, Value: token, Path: prefix + "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]string{"url": prefix + "/"})
}

// validCookieValue reports whether s fits a cookie value unquoted (RFC 6265
// cookie-octet), as JWTs do.
func validCookieValue(s string) bool {
	for _, c := range []byte(s) {
		if c <= 0x20 || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// target authorizes a request for a job's TensorBoard with authz (GetJob,
// then GetTenant for the namespace) and returns where it goes and the
// job's proxy prefix.
func (t *tensorBoardProxy) target(r *http.Request, authz string) (tbTarget, string, error) {
	tenantID, jobID := r.PathValue("tenant"), r.PathValue("job")
	name := "tenants/" + tenantID + "/jobs/" + jobID
	md := metadata.Pairs("authorization", authz)
	if id := r.Header.Get("X-Request-Id"); id != "" {
		md.Set(requestIDHeader, id)
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		md.Set("x-forwarded-for", host)
	}
	ctx := metadata.NewOutgoingContext(r.Context(), md)
	j, err := t.jobs.GetJob(ctx, &pb.GetJobRequest{Name: name})
	if err != nil {
		return tbTarget{}, "", err
	}
	if !j.GetSpec().GetTensorboard().GetEnabled() {
		return tbTarget{}, "", status.Errorf(codes.NotFound, "job %s has no TensorBoard (spec.tensorboard.enabled is false)", jobID)
	}
	if t.dial == nil {
		return tbTarget{}, "", status.Error(codes.Unavailable, "this server reaches no Kubernetes cluster, so it cannot show TensorBoard")
	}
	// In the cluster that runs the job.
	cluster := j.GetStatus().GetCluster()
	if err := t.dial.Reaches(cluster); err != nil {
		return tbTarget{}, "", status.Error(t.code(err), err.Error())
	}
	tn, err := t.tenants.GetTenant(ctx, &pb.GetTenantRequest{Name: "tenants/" + tenantID})
	if err != nil {
		return tbTarget{}, "", err
	}
	if tn.GetNamespace() == "" {
		return tbTarget{}, "", errors.New("tenant has no namespace")
	}
	return tbTarget{cluster: cluster, namespace: tn.GetNamespace(), job: jobID}, "/v1/tenants/" + tenantID + "/jobs/" + jobID + "/tensorboard", nil
}

// routeTensorBoard serves the TensorBoard proxy on mux. gw is the REST
// gateway, whose error rendering (JSON status, HTTP code) the proxy uses.
func (s *Server) routeTensorBoard(mux *http.ServeMux, gw http.Handler) {
	gwMux, _ := gw.(*runtime.ServeMux)
	marshaler := &runtime.JSONPb{}
	t := newTensorBoardProxy(s.gwConn, s.cfg.TensorBoard, s.cfg.ErrorCode, s.cfg.Logger, func(w http.ResponseWriter, r *http.Request, err error) {
		errorHandler(gatewayMessageLimit(s.cfg.MaxRequestBytes))(r.Context(), gwMux, marshaler, w, r, err)
	})
	mux.HandleFunc("GET "+tensorBoardPath, t.redirect)
	mux.Handle("POST "+tensorBoardPath+":open", limitBody(s.cfg.MaxRequestBytes, http.HandlerFunc(t.open)))
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		mux.Handle(method+" "+tensorBoardPath+"/{rest...}", limitBody(s.cfg.MaxRequestBytes, t))
	}
}
