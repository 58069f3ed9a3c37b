package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/trainyard/trainyard/internal/api"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/webhook"
	"github.com/trainyard/trainyard/internal/webhook/deliver"
)

// webhookFlags are where webhooks may point (serve checks at creation,
// the deliverer at every connection) and how `trainyard webhooks` delivers.
type webhookFlags struct {
	allow         []string
	allowLoopback bool
	hostsFile     string
	// The deliverer's.
	concurrency int
	metricsAddr string
	perReceiver int
	timeout     time.Duration
	source      string
}

func (f *webhookFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.allow, "webhook-allow", nil, "CIDRs and host names (*.example.com for subdomains) webhooks may reach, comma-separated; listed CIDRs are allowed even when private; when set, only they; default: any public address (never loopback, private, link-local or other internal ones)")
	fs.BoolVar(&f.allowLoopback, "webhook-allow-loopback", false, "let webhooks reach loopback addresses (tests, local demos)")
	fs.StringVar(&f.hostsFile, "webhook-hosts-file", "", "a file in /etc/hosts form that webhook host names are resolved with first (re-read at every lookup), the system's resolver after")
}

func (f *webhookFlags) registerDeliverer(fs *pflag.FlagSet) {
	fs.IntVar(&f.concurrency, "webhook-concurrency", deliver.DefaultConcurrency, "webhook deliveries in flight at once from this process; 0 delivers none")
	fs.IntVar(&f.perReceiver, "webhook-per-receiver", deliver.DefaultPerReceiver, "webhook deliveries in flight at once to one receiver (host:port), so that a slow one cannot hold up the others")
	fs.DurationVar(&f.timeout, "webhook-timeout", deliver.DefaultTimeout, "bound of one webhook delivery attempt (connect, TLS, request, response headers)")
	fs.StringVar(&f.source, "webhook-source", "trainyard:", "the start of each CloudEvent's source (a URI reference such as https://trainyard.example.com); /tenants/{tenant} follows")
}

func (f *webhookFlags) policy() (webhook.Policy, error) {
	p, err := webhook.ParsePolicy(f.allow, f.allowLoopback)
	if err != nil {
		return p, fmt.Errorf("--webhook-allow: %w", err)
	}
	if f.hostsFile != "" {
		p.Resolver = webhook.HostsFile(f.hostsFile)
	}
	return p, nil
}

func (f *webhookFlags) validateDeliverer() error {
	switch {
	case f.concurrency < 0 || f.perReceiver < 1:
		return fmt.Errorf("--webhook-concurrency must be 0 or more and --webhook-per-receiver at least 1")
	case f.timeout < time.Second || f.timeout >= deliver.DefaultLease:
		return fmt.Errorf("--webhook-timeout must be at least 1s and under %s, not %s", deliver.DefaultLease, f.timeout)
	}
	_, err := f.policy()
	return err
}

func newWebhooksCmd() *cobra.Command {
	var common commonFlags
	cmd := &cobra.Command{
		Use:   "webhooks",
		Short: "Deliver webhooks: signed CloudEvents of job events, from the outbox",
		Long: `Deliver the webhook outbox (internal/webhook/deliver): claim due messages in
Postgres, POST each as a CloudEvent signed per Standard Webhooks to its
webhook's URL, and record the attempt; retried with backoff for up to 24 h.

It reads each webhook's signing secret from its Kubernetes Secret in the
tenant's namespace, which neither the API server (write-only on Secrets) nor
the worker (no right on Secrets) may do: run it with its own identity
(deploy/base/webhooks.yaml). Run as many as you like: they share the outbox.

Serves /metrics, /healthz on --metrics-addr.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd.Flags()); err != nil {
				return err
			}
			return common.webhooks.validateDeliverer()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log, err := common.logs.logger()
			if err != nil {
				return err
			}
			st, err := openStore(ctx, log, withPoolSize(common.databaseURL, common.poolSize(8)))
			if err != nil {
				return err
			}
			defer st.Close()
			listener, err := store.NewListener(common.databaseURL, store.ListenerConfig{Logger: log})
			if err != nil {
				return err
			}
			go listener.Run(ctx)
			kc, _, err := common.kube.client()
			if err != nil {
				return fmt.Errorf("the deliverer reads signing secrets from Kubernetes: %w", err)
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
			if addr := common.webhooks.metricsAddr; addr != "" {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					return fmt.Errorf("--metrics-addr: %w", err)
				}
				mux := http.NewServeMux()
				mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
				mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprintln(rw, "ok") })
				srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
				go func() { _ = srv.Serve(ln) }()
				defer srv.Close()
				log.Info("webhooks metrics listening", "addr", ln.Addr().String())
			}
			log.Info("delivering webhooks")
			return runDeliverer(ctx, log, &common.webhooks, defaultWorkerID(), st, listener, kc, reg)
		},
	}
	common.register(cmd)
	common.webhooks.registerDeliverer(cmd.Flags())
	cmd.Flags().StringVar(&common.webhooks.metricsAddr, "metrics-addr", ":8082", "address for /metrics and /healthz; empty disables")
	documentEnv(cmd)
	return cmd
}

// runDeliverer delivers webhooks until ctx ends; with --webhook-concurrency 0 it returns at once.
func runDeliverer(ctx context.Context, log *slog.Logger, f *webhookFlags, id string, st *store.Store, listener *store.Listener, kc kubernetes.Interface, reg prometheus.Registerer) error {
	if f.concurrency == 0 {
		return nil
	}
	policy, err := f.policy()
	if err != nil {
		return err
	}
	d, err := deliver.New(deliver.Config{
		ID: id, Store: st, Secrets: kube.SecretReader{Client: kc}, Policy: policy, Wake: listener,
		Render:       deliver.Render{Job: api.RenderJob, Tenant: api.RenderTenant},
		SourcePrefix: f.source, Concurrency: f.concurrency, PerReceiver: f.perReceiver, Timeout: f.timeout,
		Registry: reg, Logger: log.With("component", "webhooks"),
	})
	if err != nil {
		return err
	}
	return d.Run(ctx)
}
