package server

import (
	"context"
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
// over the gateway's loopback gRPC, through the same authentication,
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

// TensorBoardDialer connects to the TensorBoard of job in namespace
// (kube.PodDialer.DialTensorBoard).
type TensorBoardDialer func(ctx context.Context, namespace, job string) (net.Conn, error)

const tensorBoardPath = "/v1/tenants/{tenant}/jobs/{job}/tensorboard"

type tensorBoardProxy struct {
	jobs     pb.JobServiceClient
	tenants  pb.TenantServiceClient
	dial     TensorBoardDialer
	proxy    *httputil.ReverseProxy
	log      *slog.Logger
	writeErr func(http.ResponseWriter, *http.Request, error)
}

// tbTarget is where one request goes, decided by the handler for Rewrite.
type tbTarget struct {
	namespace, job, rawPath string
}

type tbTargetKey struct{}

func newTensorBoardProxy(conn *grpc.ClientConn, dial TensorBoardDialer, log *slog.Logger, writeErr func(http.ResponseWriter, *http.Request, error)) *tensorBoardProxy {
	t := &tensorBoardProxy{jobs: pb.NewJobServiceClient(conn), tenants: pb.NewTenantServiceClient(conn), dial: dial, log: log, writeErr: writeErr}
	transport := &http.Transport{
		// The URL's host is <job>.<namespace>, both DNS labels: one
		// pool of connections per TensorBoard.
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			jobID, ns, _ := strings.Cut(host, ".")
			return t.dial(ctx, ns, jobID)
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
			pr.Out.URL.Host = tg.job + "." + tg.namespace
			pr.Out.URL.Path, _ = url.PathUnescape(tg.rawPath)
			pr.Out.URL.RawPath = tg.rawPath
			pr.Out.Host = "localhost"
			// The caller's credentials are Trainyard's, not TensorBoard's.
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			tg := r.Context().Value(tbTargetKey{}).(tbTarget)
			t.log.WarnContext(r.Context(), "tensorboard proxy", "namespace", tg.namespace, "job", tg.job, "err", err)
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
	tenantID, jobID := r.PathValue("tenant"), r.PathValue("job")
	name := "tenants/" + tenantID + "/jobs/" + jobID
	md := metadata.Pairs("authorization", r.Header.Get("Authorization"))
	if id := r.Header.Get("X-Request-Id"); id != "" {
		md.Set(requestIDHeader, id)
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		md.Set("x-forwarded-for", host)
	}
	ctx := metadata.NewOutgoingContext(r.Context(), md)
	j, err := t.jobs.GetJob(ctx, &pb.GetJobRequest{Name: name})
	if err != nil {
		t.writeErr(w, r, err)
		return
	}
	if !j.GetSpec().GetTensorboard().GetEnabled() {
		t.writeErr(w, r, status.Errorf(codes.NotFound, "job %s has no TensorBoard (spec.tensorboard.enabled is false)", jobID))
		return
	}
	if t.dial == nil {
		t.writeErr(w, r, status.Error(codes.Unavailable, "this server reaches no Kubernetes cluster, so it cannot show TensorBoard"))
		return
	}
	tn, err := t.tenants.GetTenant(ctx, &pb.GetTenantRequest{Name: "tenants/" + tenantID})
	if err != nil {
		t.writeErr(w, r, err)
		return
	}
	prefix := "/v1/tenants/" + tenantID + "/jobs/" + jobID + "/tensorboard"
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if !ok || rest == "" {
		rest = "/"
	}
	tg := tbTarget{namespace: tn.GetNamespace(), job: jobID, rawPath: rest}
	if tg.namespace == "" {
		t.writeErr(w, r, errors.New("tenant has no namespace"))
		return
	}
	t.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tbTargetKey{}, tg)))
}

// routeTensorBoard serves the TensorBoard proxy on mux. gw is the REST
// gateway, whose error rendering (JSON status, HTTP code) the proxy uses.
func (s *Server) routeTensorBoard(mux *http.ServeMux, gw http.Handler) {
	gwMux, _ := gw.(*runtime.ServeMux)
	marshaler := &runtime.JSONPb{}
	t := newTensorBoardProxy(s.gwConn, s.cfg.TensorBoard, s.cfg.Logger, func(w http.ResponseWriter, r *http.Request, err error) {
		errorHandler(r.Context(), gwMux, marshaler, w, r, err)
	})
	mux.HandleFunc("GET "+tensorBoardPath, t.redirect)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		mux.Handle(method+" "+tensorBoardPath+"/{rest...}", limitBody(s.cfg.MaxRequestBytes, t))
	}
}
