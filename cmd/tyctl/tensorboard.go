package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trainyard/trainyard/internal/resname"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// tyctl jobs tensorboard: a job's TensorBoard in the browser, through the
// API server's proxy (/v1/tenants/{t}/jobs/{j}/tensorboard/), with no
// cluster access and no kubectl port-forward. A browser cannot send
// tyctl's bearer token, so tyctl serves the proxy on a loopback port of its
// own and adds the token to each request, as kubectl proxy does; it
// forwards only that job's TensorBoard, not the rest of the API, and the
// token never appears in a URL.

const envHTTP = "TYCTL_HTTP"

func newJobsTensorBoardCmd(a *app) *cobra.Command {
	var httpBase, listen string
	var printURL, noBrowser bool
	cmd := &cobra.Command{
		Use:   "tensorboard NAME",
		Short: "Open a job's TensorBoard in the browser, through Trainyard",
		Long: `Open the job's TensorBoard (spec.tensorboard.enabled) in a browser. tyctl
serves it on a loopback port, adding your token to each request to
Trainyard's REST endpoint, and keeps serving until interrupted (Ctrl-C).
--url prints the REST URL instead, for a client that sends its own token.

The REST endpoint is --http (env TYCTL_HTTP), else derived from --server:
port 9090 becomes 8080 (trainyard serve's defaults), any other port is
used as it is (one ingress for gRPC and REST); https unless --insecure.`,
		Example: `  tyctl jobs tensorboard mnist-1
  tyctl jobs tensorboard mnist-1 --url`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Job, args[0])
			if err != nil {
				return err
			}
			s, err := a.settings()
			if err != nil {
				return err
			}
			base, err := restBase(httpBase, a.getenv, s)
			if err != nil {
				return err
			}
			target := base + "/v1/" + name + "/tensorboard/"
			if printURL {
				_, err := fmt.Fprintln(a.stdout, target)
				return err
			}
			c, err := a.jobClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			j, err := c.GetJob(ctx, &pb.GetJobRequest{Name: name})
			cancel()
			if err != nil {
				return err
			}
			if !j.GetSpec().GetTensorboard().GetEnabled() {
				return fmt.Errorf("job %s has no TensorBoard: submit it with spec.tensorboard.enabled", args[0])
			}
			proxy, err := a.tensorBoardProxy(target, s)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			local := "http://" + ln.Addr().String() + "/"
			fmt.Fprintf(a.stderr, "TensorBoard of job %s: %s (Ctrl-C to stop)\n", lastSegment(name), local)
			if !noBrowser {
				if err := a.openURL(local); err != nil {
					fmt.Fprintf(a.stderr, "(could not open a browser: %v)\n", err)
				}
			}
			srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-cmd.Context().Done()
				_ = srv.Close()
			}()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&httpBase, "http", "", "Trainyard's REST base URL, e.g. https://trainyard.example.com (env "+envHTTP+"); derived from --server when empty")
	fl.StringVar(&listen, "address", "127.0.0.1:0", "loopback address to serve on")
	fl.BoolVar(&printURL, "url", false, "print the REST URL of the TensorBoard and exit")
	fl.BoolVar(&noBrowser, "no-browser", false, "print the local URL instead of opening a browser")
	return cmd
}

// restBase is the REST endpoint: --http, $TYCTL_HTTP, else from the gRPC
// server address.
func restBase(flag string, getenv func(string) (string, bool), s settings) (string, error) {
	if flag == "" {
		flag, _ = getenv(envHTTP)
	}
	if flag != "" {
		u, err := url.Parse(flag)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("--http %q: want a URL like https://trainyard.example.com", flag)
		}
		return strings.TrimRight(u.String(), "/"), nil
	}
	host, port, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(s.server, "dns:///"), "passthrough:///"))
	if err != nil {
		return "", fmt.Errorf("cannot tell the REST endpoint from --server %s: give --http", s.server)
	}
	if port == "9090" {
		port = "8080"
	}
	scheme := "https"
	if s.insecure {
		scheme = "http"
	}
	return scheme + "://" + net.JoinHostPort(host, port), nil
}

// tensorBoardProxy forwards every local request to the job's TensorBoard
// URL, with the token (renewed when tyctl login's is due).
func (a *app) tensorBoardProxy(target string, s settings) (http.Handler, error) {
	t, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	if s.insecure && s.token != "" && !isLoopback(t.Host) {
		return nil, fmt.Errorf("refusing to send the token in plaintext to %s: --insecure is for loopback addresses", t.Host)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	pool, err := rootCAs(s.caFile)
	if err != nil {
		return nil, err
	}
	transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &httputil.ReverseProxy{
		Transport: transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(t)
			pr.Out.Host = t.Host
			token := s.token
			if s.renew != nil {
				if fresh, err := s.renew(pr.In.Context()); err == nil {
					token = fresh
				}
			}
			if token != "" {
				pr.Out.Header.Set("Authorization", "Bearer "+token)
			}
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "tyctl: Trainyard is not reachable: "+err.Error(), http.StatusBadGateway)
		},
	}, nil
}
