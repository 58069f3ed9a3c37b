package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trainyard/trainyard/internal/api"
	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/gpuutil"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/server"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/worker"
)

// serveFlags are the API server's settings. The names and environment
// variables are an operator contract (README, "Operator contract").
type serveFlags struct {
	httpAddr        string
	grpcAddr        string
	oidcIssuer      string
	oidcAudience    string
	oidcGroupsClaim string
	oidcTokenCache  int
	adminGroup      string
	devAuth         string
	maxRequestBytes int
	maxStreams      int
	handshake       time.Duration
	requestTimeout  time.Duration
	accessLog       string
	maxConns        int
	streamLifetime  time.Duration
	watchBookmark   time.Duration
	auditRetention  time.Duration
	eventRetention  time.Duration
	requestIDKeep   time.Duration
	console         consoleFlags
	tfjobPriority   map[string]int
	tls             server.TLSFiles
	plaintext       bool
	fair            server.Fairness
	// Remote clusters' agents (AgentService).
	agentAudience     string
	agentRequeueAfter time.Duration
	// cluster names the cluster --kubeconfig reaches (the API server's
	// home: tenant Secrets are written there); clusterKubeconfigs are
	// read-only credentials for the others, by name.
	cluster            string
	clusterKubeconfigs map[string]string
	prometheusURL      string
}

func (f *serveFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:8080", "address for REST, /docs, /openapi.json, /healthz, /readyz and /metrics (a non-loopback address needs TLS or --plaintext)")
	fs.StringVar(&f.grpcAddr, "grpc-addr", "127.0.0.1:9090", "address for gRPC (a non-loopback address needs TLS or --plaintext)")
	fs.StringVar(&f.oidcIssuer, "oidc-issuer", "", "OIDC issuer URL whose ID tokens are accepted (discovery and JWKS are fetched from it); required unless --dev-auth is given")
	fs.StringVar(&f.oidcAudience, "oidc-audience", "trainyard", "audience (client id) tokens must carry")
	fs.StringVar(&f.oidcGroupsClaim, "oidc-groups-claim", "groups", "token claim holding the caller's groups (a dotted path reads nested claims)")
	fs.IntVar(&f.oidcTokenCache, "oidc-token-cache", 10000, "verified tokens remembered until their expiry or the issuer's next key set (0 turns it off); memberships are still checked on every call")
	fs.StringVar(&f.adminGroup, "admin-group", "trainyard-admins", "OIDC group whose members are platform admins (manage tenants)")
	fs.StringVar(&f.devAuth, "dev-auth", "", "FILE of static tokens for local use; off by default, never in production")
	fs.IntVar(&f.maxRequestBytes, "max-request-bytes", 4<<20, "largest request body (REST) or message (gRPC) accepted")
	fs.StringVar(&f.accessLog, "access-log", "errors", "which calls get a log line when they end: errors (calls that failed; successful ones at --log-level debug) or all (every call, at info)")
	fs.DurationVar(&f.requestTimeout, "request-timeout", 30*time.Second, "bound on every unary call on the server (within the caller's own deadline); a call it ends is UNAVAILABLE (503 with Retry-After)")
	fs.DurationVar(&f.handshake, "handshake-timeout", 10*time.Second, "how long a new connection may take to send its HTTP/2 preface (gRPC) or request headers (HTTP) before it is closed")
	fs.IntVar(&f.maxConns, "max-connections", 4096, "open connections each listener (gRPC, HTTP) accepts at once; more wait to be accepted")
	fs.DurationVar(&f.auditRetention, "audit-retention", 365*24*time.Hour, "audit records older than this are deleted (hourly); 0 keeps them forever")
	fs.DurationVar(&f.eventRetention, "event-retention", 0, "job events older than this are deleted (hourly, 1,000 per statement); 0 keeps them forever")
	fs.DurationVar(&f.requestIDKeep, "request-id-retention", 30*24*time.Hour, "request ids (idempotency keys) older than this are forgotten (hourly, 1,000 per statement): a retry after it creates a new job; 0 keeps them as long as their jobs")
	fs.DurationVar(&f.streamLifetime, "max-stream-lifetime", 30*time.Minute, "watches and log streams end after this long with UNAVAILABLE; clients reopen them after the last event id received (tyctl does)")
	fs.StringVar(&f.prometheusURL, "prometheus-url", "", "Prometheus that scrapes NVIDIA's DCGM exporter: the console's chart of a job's GPU utilisation per replica over time reads it (QueryJobUtilization); empty: that chart shows the job's kept mean and p95 only")
	fs.DurationVar(&f.watchBookmark, "watch-bookmark-every", 30*time.Second, "a watch (a tenant's or a job's) that asks for bookmarks gets its read position once events it did not send have moved it and it sent nothing for this long")
	fs.StringToIntVar(&f.tfjobPriority, "tfjob-priority-class", nil, "NAME=PRIORITY,...: the Trainyard priority (-1000..1000) of a Kubernetes PriorityClass that imported TFJobs name (schedulingPolicy.priorityClass, priorityClassName); a TFJob naming another is refused")
	fs.StringToStringVar(&f.clusterKubeconfigs, "cluster-kubeconfig", nil, "NAME=PATH,...: a kubeconfig for another cluster jobs run in (repeatable), from which the job's logs and TensorBoard are read; read-only credentials do (deploy/README.md, \"Many clusters\"). A job in a cluster without one: its logs are FAILED_PRECONDITION")
	f.console.register(fs)
	fs.StringVar(&f.tls.CertFile, "tls-cert-file", "", "PEM certificate (chain) both listeners serve TLS with; reloaded when the file changes")
	fs.StringVar(&f.tls.KeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	fs.StringVar(&f.tls.ClientCAFile, "tls-client-ca-file", "", "PEM CA bundle: require client certificates it verifies (mutual TLS)")
	fs.BoolVar(&f.plaintext, "plaintext", false, "serve without TLS on addresses other than loopback (behind a mesh or a TLS-terminating ingress); loopback addresses may always be plaintext")
	d := server.DefaultFairness
	fs.IntVar(&f.fair.Unary.Concurrency, "tenant-concurrency", d.Unary.Concurrency, "unary calls one tenant may have running at once on this server; more wait their turn (callers of the tenant in turn)")
	fs.IntVar(&f.fair.Unary.Queue, "tenant-queue", d.Unary.Queue, "calls of one tenant that may wait for a turn; more are RESOURCE_EXHAUSTED (429 with Retry-After)")
	fs.DurationVar(&f.fair.Unary.Wait, "tenant-queue-wait", d.Unary.Wait, "longest a call waits for its tenant's turn before RESOURCE_EXHAUSTED")
	fs.IntVar(&f.fair.Streams, "tenant-streams", d.Streams, "watches and log streams one tenant may have open at once on this server")
	fs.IntVar(&f.fair.Admin.Concurrency, "admin-concurrency", d.Admin.Concurrency, "platform admins' calls running at once, in a lane of their own")
	fs.StringVar(&f.agentAudience, "agent-audience", cluster.DefaultAgentAudience, "audience remote clusters' agents' ServiceAccount tokens must carry (AgentService, on the gRPC port; each cluster's issuer, agent ServiceAccount and keys are registered with tyctl clusters register --agent-*)")
	fs.DurationVar(&f.agentRequeueAfter, "agent-requeue-after", worker.DefaultClusterTimeout+worker.DefaultClusterLostGrace, "told to remote agents with each heartbeat: when a silent cluster's jobs go elsewhere (the workers' --cluster-timeout plus --cluster-lost-grace); an agent cut off from the control plane stops its jobs' pods before then")
	fs.IntVar(&f.maxStreams, "max-streams-per-caller", 32, "watches and log streams one caller (OIDC subject) may have open at once on this server, REST and gRPC together; more are RESOURCE_EXHAUSTED (HTTP 429). Raise it for a service token that streams for many users")
}

// registerCluster adds --cluster, which `trainyard dev` takes from the
// worker's flags instead.
func (f *serveFlags) registerCluster(fs *pflag.FlagSet) {
	fs.StringVar(&f.cluster, "cluster", cluster.Default, "the cluster --kubeconfig reaches (the worker's --cluster there): jobs there are read with it, others with --cluster-kubeconfig")
}

// validate refuses flag values that would change behaviour silently.
func (f *serveFlags) validate() error {
	home := cmp.Or(f.cluster, cluster.Default)
	for _, name := range slices.Sorted(maps.Keys(f.clusterKubeconfigs)) {
		if err := cluster.ValidateName(name); err != nil {
			return fmt.Errorf("--cluster-kubeconfig: %w", err)
		}
		if name == home {
			return fmt.Errorf("--cluster-kubeconfig %s: that is this server's own cluster (--cluster), reached with --kubeconfig", name)
		}
		if f.clusterKubeconfigs[name] == "" {
			return fmt.Errorf("--cluster-kubeconfig %s: give the kubeconfig's path, %s=PATH", name, name)
		}
	}
	if f.accessLog != "errors" && f.accessLog != "all" {
		return fmt.Errorf("--access-log must be errors or all, not %q", f.accessLog)
	}
	if f.watchBookmark <= 0 {
		return fmt.Errorf("--watch-bookmark-every must be positive, not %s", f.watchBookmark)
	}
	if f.prometheusURL != "" && !validHTTPURL(f.prometheusURL) {
		return fmt.Errorf("--prometheus-url must be an http or https URL, not %q", f.prometheusURL)
	}
	if (f.tls.CertFile == "") != (f.tls.KeyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together")
	}
	if f.tls.ClientCAFile != "" && f.tls.CertFile == "" {
		return errors.New("--tls-client-ca-file needs --tls-cert-file and --tls-key-file")
	}
	if f.tls.CertFile == "" && !f.plaintext {
		for flag, addr := range map[string]string{"--http-addr": f.httpAddr, "--grpc-addr": f.grpcAddr} {
			if !loopbackAddr(addr) {
				return fmt.Errorf("%s %s is not a loopback address: serve TLS there (--tls-cert-file, --tls-key-file) or say --plaintext (behind a mesh or a TLS-terminating ingress)", flag, addr)
			}
		}
	}
	for flag, n := range map[string]int{"--tenant-concurrency": f.fair.Unary.Concurrency, "--tenant-streams": f.fair.Streams, "--admin-concurrency": f.fair.Admin.Concurrency} {
		if n <= 0 {
			return fmt.Errorf("%s must be positive, not %d", flag, n)
		}
	}
	if f.fair.Unary.Queue < 0 {
		return fmt.Errorf("--tenant-queue must not be negative, not %d", f.fair.Unary.Queue)
	}
	return nil
}

// loopbackAddr reports whether a listen address binds loopback only
// (127.0.0.1:8080, [::1]:0, localhost:9090), where plaintext is for local use.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authenticator builds the authenticator from the flags: OIDC, dev tokens,
// or both (dev first).
func (f *serveFlags) authenticator(ctx context.Context, log *slog.Logger) (auth.Authenticator, func() error, error) {
	var (
		authns []auth.Authenticator
		ready  = func() error { return nil }
	)
	if f.devAuth != "" {
		dev, err := auth.LoadDevTokens(f.devAuth, auth.DevOptions{AdminGroup: f.adminGroup, Logger: log})
		if err != nil {
			return nil, nil, fmt.Errorf("--dev-auth: %w", err)
		}
		authns = append(authns, dev)
	}
	if f.oidcIssuer != "" {
		oidc, err := auth.NewOIDC(ctx, auth.OIDCConfig{
			Issuer: f.oidcIssuer, Audience: f.oidcAudience, GroupsClaim: f.oidcGroupsClaim,
			AdminGroup: f.adminGroup, Logger: log, TokenCacheSize: cmp.Or(f.oidcTokenCache, -1),
		})
		if err != nil {
			return nil, nil, fmt.Errorf("--oidc-issuer: %w", err)
		}
		authns = append(authns, oidc)
		ready = oidc.Ready
	}
	if len(authns) == 0 {
		return nil, nil, errors.New("no authentication configured: set --oidc-issuer (or --dev-auth FILE for local use)")
	}
	return auth.FirstOf(authns...), ready, nil
}

// apiDeps is what runAPI needs besides the flags.
type apiDeps struct {
	store    *store.Store
	listener *store.Listener
	// kubeConfig reaches the server's own cluster (nil: secrets are
	// unavailable, logs come from Postgres only, no TensorBoard).
	kubeConfig *rest.Config
	nsPrefix   string
	// webhooks says where webhooks may point.
	webhooks *webhookFlags
}

// runAPI serves the API until ctx ends.
func runAPI(ctx context.Context, log *slog.Logger, f *serveFlags, d apiDeps) error {
	authn, oidcReady, err := f.authenticator(ctx, log)
	if err != nil {
		return err
	}
	tenants := auth.TenantSourceFunc(func(ctx context.Context, id string) (tenant.Tenant, error) {
		t, err := d.store.TenantGet(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return t, auth.ErrTenantNotFound
		case errors.Is(err, store.ErrUnavailable):
			return t, fmt.Errorf("%w: %w", auth.ErrTenantSourceUnavailable, err)
		}
		return t, err
	})
	// Open streams are re-authorized when their tenant changes (members,
	// state) and end when the caller's token does.
	streams := auth.StreamPolicy{MaxLifetime: f.streamLifetime}
	var authzOpts []auth.AuthorizerOption
	if d.listener != nil {
		streams.TenantChanges = store.NewWakeups(d.listener, store.ChannelTenants).Subscribe
		authzOpts = append(authzOpts, auth.WithTenantCache(tenantCache(ctx, d.listener)))
	}
	// Remote clusters' agents authenticate with their cluster's
	// ServiceAccount tokens, against the identities registered with the
	// clusters, and call AgentService only.
	agentAuthn, err := auth.NewAgentAuthenticator(auth.AgentConfig{Identities: d.store, Audience: f.agentAudience, Logger: log})
	if err != nil {
		return err
	}
	var clusters *kube.Clusters
	if d.kubeConfig != nil {
		if clusters, err = f.clusters(d.kubeConfig); err != nil {
			return err
		}
	} else if len(f.clusterKubeconfigs) > 0 {
		return errors.New("--cluster-kubeconfig needs this server's own cluster too: set --kubeconfig (or KUBECONFIG), or run in a pod")
	}
	agentCfg := api.AgentConfig{
		Store:        func(c string) api.AgentStore { return d.store.InCluster(c) },
		RequeueAfter: f.agentRequeueAfter, Logger: log,
	}
	if clusters != nil {
		// Agents keep copies of the tenant Secrets this server writes.
		agentCfg.Secrets = clusters
	}
	agents, err := api.NewAgentServer(agentCfg)
	if err != nil {
		return err
	}
	ic := auth.NewInterceptor(authn, auth.NewAuthorizer(tenants, authzOpts...), auth.WithLogger(log), auth.WithStreamPolicy(streams),
		auth.WithAgentAuthenticator(agentAuthn))
	priorities, err := tfjobPriorities(f.tfjobPriority)
	if err != nil {
		return err
	}
	apiDeps := api.Deps{Store: d.store, Logger: log, NamespacePrefix: d.nsPrefix, TFJobPriorityClasses: priorities,
		WatchBookmark: f.watchBookmark}
	if d.listener != nil {
		apiDeps.Events = d.listener
	}
	if f.prometheusURL != "" {
		h, err := gpuutil.NewHistory(f.prometheusURL, nil)
		if err != nil {
			return err
		}
		apiDeps.GPUHistory = h
	}
	policy, err := d.webhooks.policy()
	if err != nil {
		return err
	}
	var tensorBoard server.TensorBoardDialer
	if clusters != nil {
		apiDeps.Kube, tensorBoard = clusters, clusters
	}
	srv, err := server.New(ctx, server.Config{
		HTTPAddr:            f.httpAddr,
		GRPCAddr:            f.grpcAddr,
		MaxRequestBytes:     f.maxRequestBytes,
		MaxStreamsPerCaller: f.maxStreams,
		HandshakeTimeout:    f.handshake,
		RequestTimeout:      f.requestTimeout,
		AccessLogAll:        f.accessLog == "all",
		MaxConnections:      f.maxConns,
		Fairness:            f.fair,
		Jobs:                api.NewJobServer(apiDeps),
		Tenants:             api.NewTenantServer(apiDeps),
		Audit:               api.NewAuditServer(apiDeps),
		Usage:               api.NewUsageServer(apiDeps),
		Webhooks:            api.NewWebhookServer(apiDeps, d.store, policy),
		Clusters:            api.NewClusterServer(apiDeps, d.store),
		Experiments:         api.NewExperimentServer(apiDeps, d.store),
		Agents:              agents,
		AuthUnary:           ic.Unary(),
		AuthStream:          ic.Stream(),
		AuthTap:             ic.Tap,
		AuthHTTP:            ic.AuthenticateHTTP,
		ErrorCode:           api.Code,
		CheckRequest:        api.CheckRequest,
		TensorBoard:         tensorBoard,
		Console:             f.console.handler(f),
		Logger:              log,
		TLS:                 tlsFiles(f.tls),
		Ready: []server.ReadyCheck{
			{Name: "postgres", Check: d.store.Ping},
			{Name: "oidc", Check: func(context.Context) error { return oidcReady() }},
		},
	})
	if err != nil {
		return err
	}
	for _, e := range []struct {
		what      string
		retention time.Duration
		expire    func(context.Context, time.Time) (int64, error)
	}{
		{"audit records", f.auditRetention, d.store.AuditDeleteBefore},
		{"job events", f.eventRetention, func(ctx context.Context, t time.Time) (int64, error) {
			return d.store.EventDeleteBefore(ctx, t, store.DefaultRetentionBatch)
		}},
		// The delivery log goes with the events it delivered.
		{"webhook deliveries", f.eventRetention, d.store.DeliveryDeleteBefore},
		{"request ids", f.requestIDKeep, func(ctx context.Context, t time.Time) (int64, error) {
			return d.store.RequestIDDeleteBefore(ctx, t, store.DefaultRetentionBatch)
		}},
	} {
		if e.retention > 0 {
			go expire(ctx, log, e.what, e.retention, e.expire)
		}
	}
	return srv.Run(ctx)
}

// clusters is the API server's access to its own cluster (home, with
// --kubeconfig's config) and to each of --cluster-kubeconfig's, whose
// configs take home's rate limits and user agent.
func (f *serveFlags) clusters(home *rest.Config) (*kube.Clusters, error) {
	configs := map[string]*rest.Config{cmp.Or(f.cluster, cluster.Default): home}
	for name, path := range f.clusterKubeconfigs {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("--cluster-kubeconfig %s: %w", name, err)
		}
		cfg.QPS, cfg.Burst, cfg.UserAgent = home.QPS, home.Burst, home.UserAgent
		kube.TuneRESTConfig(cfg)
		configs[name] = cfg
	}
	return kube.NewClusters(cmp.Or(f.cluster, cluster.Default), configs)
}

// tenantCache is the Authorizer's memory of tenant records, kept by the
// listener: a record is forgotten when its tenant changes, every record
// when the listener reconnects (notifications may have been lost), and
// each after auth.TenantCacheTTL.
func tenantCache(ctx context.Context, l *store.Listener) *auth.TenantCache {
	c := auth.NewTenantCache(auth.TenantCacheTTL)
	changes, stop := l.Subscribe(store.ChannelTenants)
	l.OnReconnect(c.ForgetAll)
	go func() {
		<-ctx.Done()
		stop()
	}()
	go func() {
		for id := range changes {
			c.Forget(id)
		}
	}()
	return c
}

// expire deletes what is older than retention, at start and then hourly.
// Every API server does it; deleting what another one deleted already is
// nothing.
func expire(ctx context.Context, log *slog.Logger, what string, retention time.Duration, fn func(context.Context, time.Time) (int64, error)) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		n, err := fn(ctx, time.Now().Add(-retention))
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("expiring "+what+" failed; retrying in an hour", "error", err)
		case n > 0:
			log.Info("expired "+what, "deleted", n, "retention", retention)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// openStore connects to Postgres, waiting up to a minute for it to answer
// so that a server started beside its database does not crash-loop.
func openStore(ctx context.Context, log *slog.Logger, url string, opts ...store.Option) (*store.Store, error) {
	if url == "" {
		return nil, errors.New("no database: set --database-url or DATABASE_URL")
	}
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := store.Open(ctx, url, opts...)
		if err == nil {
			return st, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("connecting to Postgres: %w", err)
		}
		log.Warn("Postgres not reachable yet; retrying", "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// tfjobPriorities checks --tfjob-priority-class against the range of a
// job's priority.
func tfjobPriorities(m map[string]int) (map[string]int32, error) {
	out := make(map[string]int32, len(m))
	for name, p := range m {
		if p < job.MinPriority || p > job.MaxPriority {
			return nil, fmt.Errorf("--tfjob-priority-class %s=%d: a priority is %d..%d", name, p, job.MinPriority, job.MaxPriority)
		}
		out[name] = int32(p)
	}
	return out, nil
}

// tlsFiles is the server's TLS setting: nil without a certificate.
func tlsFiles(f server.TLSFiles) *server.TLSFiles {
	if f.CertFile == "" {
		return nil
	}
	return &f
}
