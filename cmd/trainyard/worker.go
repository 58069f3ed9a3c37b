package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/experimentctl"
	"github.com/trainyard/trainyard/internal/gpuutil"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/scheduler"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenantctl"
	"github.com/trainyard/trainyard/internal/worker"
)

// workerFlags are the worker's settings.
type workerFlags struct {
	id            string
	concurrency   int
	leaseTTL      time.Duration
	maxOwnedJobs  int
	claimInterval time.Duration
	// Requeues (worker.Config) and the pods' grace period bound.
	unschedulableTimeout time.Duration
	requeueBackoff       time.Duration
	requeueBackoffMax    time.Duration
	maxGracePeriod       time.Duration
	// The scheduler (internal/scheduler).
	schedulerLeaseTTL time.Duration
	schedulePeriod    time.Duration
	starvationAge     time.Duration
	borrowAging       time.Duration
	logTailLines      int64
	logTailBytes      int64
	// Experiments (internal/experimentctl) and their trials' metrics.
	experimentPeriod time.Duration
	metricsInterval  time.Duration
	finishedTTL      time.Duration
	metricsAddr      string
	psaEnforce       string
	psaWarn          string
	// Tenant NetworkPolicy egress exceptions and the API server's identity
	// (kube.TenantOptions).
	egressDenyCIDRs      []string
	apiServiceAccount    string
	workerServiceAccount string
	// The API server's cluster, where a worker of another cluster reads
	// the tenant Secrets it copies (tenantctl.StoreSecrets).
	homeKubeconfig string
	// The cluster this worker runs in and reports (worker.ClusterAgent).
	cluster          string
	clusterHeartbeat time.Duration
	clusterTimeout   time.Duration
	clusterLostGrace time.Duration
	// GPU utilisation from Prometheus (internal/gpuutil).
	prometheusURL   string
	gpuPollInterval time.Duration
	gpuPollLag      time.Duration
	// A remote cluster's agent (issue 45): the control plane instead of
	// Postgres.
	controlPlane          string
	agentTokenFile        string
	controlPlaneCAFile    string
	controlPlanePlaintext bool
}

func (f *workerFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.id, "worker-id", "", "this worker's id in the jobs it owns; must be unique among running workers (default <hostname>-<pid>-<random>)")
	fs.IntVar(&f.concurrency, "concurrency", worker.DefaultConcurrency, "jobs reconciled at once")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", worker.DefaultLeaseTTL, "this worker's lease on its jobs, renewed every third of it; a dead worker's jobs are taken over after it")
	fs.IntVar(&f.maxOwnedJobs, "max-owned-jobs", worker.DefaultMaxOwnedJobs, "most jobs this worker owns at once (starting, running or being cleaned up; jobs waiting for admission are not held)")
	fs.DurationVar(&f.claimInterval, "claim-interval", worker.DefaultClaimInterval, "polling interval for new jobs (jittered), the fallback under Postgres notifications")
	fs.DurationVar(&f.unschedulableTimeout, "unschedulable-timeout", worker.DefaultUnschedulableTimeout, "an admitted job whose pods stay unschedulable this long has them removed and goes back to the queue (not counted against its backoffLimit)")
	fs.DurationVar(&f.requeueBackoff, "requeue-backoff", worker.DefaultRequeueBackoff, "how long a job requeued for unschedulable pods waits before it may be admitted again, doubling with each requeue")
	fs.DurationVar(&f.requeueBackoffMax, "requeue-backoff-max", worker.DefaultRequeueBackoffMax, "the most a requeued job waits before it may be admitted again")
	fs.DurationVar(&f.schedulerLeaseTTL, "scheduler-lease-ttl", scheduler.DefaultLeaseTTL, "the scheduler lease: one worker holds it and schedules; a dead holder is replaced after it")
	fs.DurationVar(&f.schedulePeriod, "schedule-period", scheduler.DefaultPeriod, "a scheduling cycle runs at least this often (and whenever a job is submitted or requeued; while jobs wait, also when a job ends, a quota changes, or a node or pod changes)")
	fs.DurationVar(&f.starvationAge, "starvation-age", scheduler.DefaultStarvationAge, "a job that has waited this long holds the line: no later job of its tenant starts ahead of it (BEST_EFFORT_FIFO), and no later job of any tenant takes the resources it lacks")
	fs.DurationVar(&f.borrowAging, "borrow-aging", 0, "a job that would borrow in its cohort and has waited this long goes before the cohort's other borrowers, the longest waiting first, and later borrowers of other tenants leave the cohort's unused quota to it; 0 leaves borrowers to fair share alone")
	fs.DurationVar(&f.maxGracePeriod, "max-termination-grace-period", 5*time.Minute, "the most a job's pods get between SIGTERM and SIGKILL (a job asks for its own, default 30s, in spec.terminationGracePeriodSeconds)")
	fs.Int64Var(&f.logTailLines, "log-tail-lines", worker.DefaultLogTailLines, "lines of a failed replica's log kept in Postgres")
	fs.Int64Var(&f.logTailBytes, "log-tail-bytes", worker.DefaultLogTailBytes, "most bytes of a failed replica's log kept in Postgres")
	fs.DurationVar(&f.finishedTTL, "default-ttl-after-finished", worker.DefaultFinishedTTLFlag, "how long a finished job's kept pods are kept when the job sets no runPolicy.ttlSecondsAfterFinished (its record, events and kept log tails stay); 0 keeps them until the job is deleted")
	fs.StringVar(&f.psaEnforce, "psa-enforce", "baseline", "Pod Security Standard enforced in tenant namespaces: privileged, baseline or restricted")
	fs.StringVar(&f.psaWarn, "psa-warn", "restricted", "Pod Security Standard warned about (and audited) in tenant namespaces")
	fs.StringSliceVar(&f.egressDenyCIDRs, "egress-deny-cidrs", slices.Clone(kube.DefaultEgressDenyCIDRs), "CIDRs tenant pods may not connect to (exceptions of their NetworkPolicy's egress to anywhere), comma-separated; empty denies nothing")
	fs.StringVar(&f.apiServiceAccount, "api-service-account", kube.DefaultAPIServiceAccount, "the API server's ServiceAccount as namespace:name, bound in each tenant namespace to read pod logs there")
	fs.StringVar(&f.workerServiceAccount, "worker-service-account", kube.DefaultWorkerServiceAccount, "the worker's own ServiceAccount as namespace:name, bound in each tenant namespace to read and write the Secrets there (trainyard-tenant-secrets)")
	fs.StringVar(&f.homeKubeconfig, "home-kubeconfig", "", "a worker on Postgres of a cluster other than the API server's: a kubeconfig for the API server's cluster, where tenant Secrets are written; the worker copies them into its tenant namespaces (its identity there needs get on secrets in tenant namespaces: the worker's ServiceAccount has it). Empty: no Secret is copied into this cluster. A remote agent (--control-plane) gets them from the control plane")
	fs.DurationVar(&f.experimentPeriod, "experiment-period", 5*time.Second, "the experiments controller (run by the scheduler lease's holder) passes over every running experiment this often")
	fs.DurationVar(&f.metricsInterval, "trial-metrics-interval", worker.DefaultMetricsInterval, "how often the log of a running experiment trial (its chief's, or worker 0's) is read for trainyard-metric lines, besides once when it ends; each read is one pods/log request per trial, returning the lines since the last")
	// trainyard dev registers serve's flags first: its --prometheus-url is
	// both's (dev copies it here).
	if fs.Lookup("prometheus-url") == nil {
		fs.StringVar(&f.prometheusURL, "prometheus-url", "", "Prometheus that scrapes NVIDIA's DCGM exporter (keeping its pod and namespace labels); the worker holding the scheduler lease reads the running jobs' GPU utilisation there, keeps it with the jobs (GetJob) and marks jobs whose GPUs idle (IdleGPUs); empty: off")
	}
	fs.DurationVar(&f.gpuPollInterval, "gpu-poll-interval", gpuutil.DefaultInterval, "how often GPU utilisation is read from --prometheus-url")
	fs.DurationVar(&f.gpuPollLag, "gpu-poll-lag", gpuutil.DefaultLag, "how far behind the clock a read of --prometheus-url ends, so that the last scrapes are in (at least the scrape timeout)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", ":8081", "address for the worker's /metrics, /healthz and /readyz; empty disables")
	fs.StringVar(&f.cluster, "cluster", cluster.Default, "the cluster this worker runs in (registered with tyctl clusters register, except \"default\", which always exists): it heartbeats that cluster's capacity and nodes. Only the default cluster's workers schedule (for every cluster); another cluster's workers run its jobs and tenants and write its EndpointSlices")
	fs.DurationVar(&f.clusterHeartbeat, "cluster-heartbeat", worker.DefaultClusterHeartbeat, "how often the worker reports its cluster's capacity and nodes")
	fs.DurationVar(&f.clusterLostGrace, "cluster-lost-grace", worker.DefaultClusterLostGrace, "a cluster UNREACHABLE this long past --cluster-timeout is lost: its unfinished jobs go back to the queue to run elsewhere from their checkpoints (a restart, reason ClusterLost)")
	fs.DurationVar(&f.clusterTimeout, "cluster-timeout", worker.DefaultClusterTimeout, "a cluster whose last heartbeat is older than this is UNREACHABLE (decided by the worker holding the scheduler lease)")
	fs.StringVar(&f.controlPlane, "control-plane", "", "remote agent mode: the API server's gRPC address (host:port). The worker then reaches only the API server (AgentService), never Postgres: DATABASE_URL must be unset, and --cluster must name a cluster registered with its agent identity (tyctl clusters register --agent-issuer ...). Only the jobs of --cluster are claimed and its tenants' namespaces kept; the parts that need the database do not run in a remote agent: the scheduler (and its lease), the cluster sweep, the experiments controller, webhooks, the usage ledger, GPU utilisation (--prometheus-url) and trial metrics. Cut off from the control plane for longer than the requeue point each heartbeat tells it (less --max-termination-grace-period and 30s), the agent deletes its cluster's job pods (self-fencing): their copies may start elsewhere then")
	fs.StringVar(&f.agentTokenFile, "agent-token-file", "", "remote agent mode: a ServiceAccount token of this cluster with the API server's --agent-audience (a projected token volume; read again when the kubelet rotates it)")
	fs.StringVar(&f.controlPlaneCAFile, "control-plane-ca-file", "", "remote agent mode: PEM CA bundle that verifies the API server's certificate (default: the system's roots)")
	fs.BoolVar(&f.controlPlanePlaintext, "control-plane-plaintext", false, "remote agent mode: connect without TLS (loopback, or a mesh that encrypts); the token then travels unencrypted")
}

func (f *workerFlags) validate() error {
	switch {
	case f.concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1, not %d", f.concurrency)
	case f.leaseTTL < time.Second:
		return fmt.Errorf("--lease-ttl must be at least 1s, not %s", f.leaseTTL)
	case f.maxOwnedJobs < 1:
		return fmt.Errorf("--max-owned-jobs must be at least 1, not %d", f.maxOwnedJobs)
	case f.claimInterval <= 0:
		return errors.New("--claim-interval must be positive")
	case f.unschedulableTimeout <= 0 || f.requeueBackoff <= 0 || f.requeueBackoffMax < f.requeueBackoff:
		return errors.New("--unschedulable-timeout and --requeue-backoff must be positive, --requeue-backoff-max at least --requeue-backoff")
	case f.experimentPeriod <= 0 || f.metricsInterval <= 0:
		return errors.New("--experiment-period and --trial-metrics-interval must be positive")
	case f.schedulerLeaseTTL < time.Second || f.schedulePeriod <= 0 || f.starvationAge <= 0:
		return errors.New("--scheduler-lease-ttl must be at least 1s, --schedule-period and --starvation-age positive")
	case f.maxGracePeriod < 0 || f.maxGracePeriod%time.Second != 0:
		return fmt.Errorf("--max-termination-grace-period must be whole seconds, 0 or more, not %s", f.maxGracePeriod)
	case f.logTailLines < 1 || f.logTailBytes < 1:
		return errors.New("--log-tail-lines and --log-tail-bytes must be positive")
	case f.finishedTTL < 0 || f.finishedTTL%time.Second != 0:
		return fmt.Errorf("--default-ttl-after-finished must be whole seconds, 0 or more, not %s", f.finishedTTL)
	case f.clusterHeartbeat <= 0 || f.clusterTimeout <= f.clusterHeartbeat:
		return fmt.Errorf("--cluster-heartbeat must be positive and --cluster-timeout longer, not %s and %s", f.clusterHeartbeat, f.clusterTimeout)
	case f.clusterLostGrace <= 0:
		return fmt.Errorf("--cluster-lost-grace must be positive, not %s", f.clusterLostGrace)
	case f.gpuPollInterval <= 0 || f.gpuPollLag < 0:
		return errors.New("--gpu-poll-interval must be positive and --gpu-poll-lag 0 or more")
	case f.prometheusURL != "" && !validHTTPURL(f.prometheusURL):
		return fmt.Errorf("--prometheus-url must be an http or https URL, not %q", f.prometheusURL)
	case !psaLevels[f.psaEnforce] || !psaLevels[f.psaWarn]:
		return fmt.Errorf("--psa-enforce and --psa-warn must be privileged, baseline or restricted, not %q and %q", f.psaEnforce, f.psaWarn)
	}
	if err := cluster.ValidateName(f.cluster); err != nil {
		return fmt.Errorf("--cluster: %w", err)
	}
	switch {
	case f.controlPlane == "" && (f.agentTokenFile != "" || f.controlPlaneCAFile != "" || f.controlPlanePlaintext):
		return errors.New("--agent-token-file, --control-plane-ca-file and --control-plane-plaintext need --control-plane")
	case f.controlPlane != "" && f.agentTokenFile == "":
		return errors.New("--control-plane needs --agent-token-file: the agent authenticates with its cluster's ServiceAccount token")
	case f.controlPlane != "" && f.prometheusURL != "":
		return errors.New("--prometheus-url is the control plane's workers' (a remote agent has no database to keep GPU utilisation in)")
	case f.controlPlane != "" && f.homeKubeconfig != "":
		return errors.New("--home-kubeconfig is for a worker on Postgres: a remote agent (--control-plane) gets tenant Secrets from the control plane")
	}
	if err := f.tenantOptions().Validate(); err != nil {
		return fmt.Errorf("--egress-deny-cidrs, --api-service-account or --worker-service-account: %w", err)
	}
	return nil
}

var psaLevels = map[string]bool{"privileged": true, "baseline": true, "restricted": true}

// tenantOptions are the flags' part of kube.TenantOptions.
func (f *workerFlags) tenantOptions() kube.TenantOptions {
	deny := f.egressDenyCIDRs
	if deny == nil {
		deny = []string{} // set to nothing: deny nothing, not the default
	}
	return kube.TenantOptions{PSAEnforce: f.psaEnforce, PSAWarn: f.psaWarn, EgressDenyCIDRs: deny,
		APIServiceAccount: f.apiServiceAccount, WorkerServiceAccount: f.workerServiceAccount}
}

func newWorkerCmd() *cobra.Command {
	var (
		common commonFlags
		wf     workerFlags
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run queued jobs on Kubernetes",
		Long: `Run queued jobs on Kubernetes: claim them in Postgres (leases renewed
every --lease-ttl/3), admit them against their tenant's quota, create their
Service and pods, follow the pods, restart replicas, enforce deadlines and
clean up, writing status and events back to Postgres. The same process
runs the tenant reconciler, which keeps every tenant's namespace (Pod
Security labels, job ServiceAccount, RBAC, quota, network policy)
provisioned.

Run as many workers as you like against one database: each job has one
owner at a time, and a dead worker's jobs are taken over after --lease-ttl.
On SIGTERM a worker finishes what it is doing and releases its jobs.

Each worker reports the cluster it runs in (--cluster, "default" unless
set; another cluster is registered first with tyctl clusters register):
every --cluster-heartbeat its capacity, usage and, when they changed, its
schedulable nodes. The worker holding the scheduler lease marks a cluster
UNREACHABLE once its last heartbeat is older than --cluster-timeout, and
READY again when it reports.

A remote cluster's agent (--control-plane ADDR --agent-token-file PATH)
reaches only the API server, with a ServiceAccount token of its own
cluster, and holds no database credentials; see --control-plane for what
it does not run.

Serves /metrics (Prometheus), /healthz and /readyz on --metrics-addr.
The database must be migrated first (trainyard migrate up).`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd.Flags()); err != nil {
				return err
			}
			return wf.validate()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log, err := common.logs.logger()
			if err != nil {
				return err
			}
			if wf.controlPlane != "" {
				if common.databaseURL != "" {
					return errors.New("--control-plane: a remote agent holds no database credentials; unset DATABASE_URL (--database-url)")
				}
				return runRemoteWorker(ctx, log, &common, &wf)
			}
			dbURL := withPoolSize(common.databaseURL, common.poolSize(workerPool(wf.concurrency)))
			// The worker claims only its own cluster's jobs.
			st, err := openStore(ctx, log, dbURL, store.WithCluster(wf.cluster))
			if err != nil {
				return err
			}
			defer st.Close()
			listener, err := store.NewListener(common.databaseURL, store.ListenerConfig{Logger: log})
			if err != nil {
				return err
			}
			go listener.Run(ctx)
			return runWorker(ctx, log, &common, &wf, st, listener)
		},
	}
	common.register(cmd)
	wf.register(cmd.Flags())
	documentEnv(cmd)
	return cmd
}

// workerClients are a worker's three connections to its cluster: the
// calls (creates, updates, deletes, log reads), the pod informer (every
// pod of the cluster, shared by the worker and the scheduler:
// kube.PodInformers) and the other informers (the worker's Services and
// EndpointSlices, the scheduler's nodes), so that none queues behind
// another (ownConnection).
func workerClients(common *commonFlags, log *slog.Logger) (kc *kubernetes.Clientset, podWatch, watch kubernetes.Interface, err error) {
	restCfg, err := common.kube.restConfig()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the worker needs a Kubernetes cluster: %w", err)
	}
	restCfg.WarningHandlerWithContext = &warningLogger{log: log}
	if kc, err = kubernetes.NewForConfig(restCfg); err != nil {
		return nil, nil, nil, err
	}
	if podWatch, err = ownConnection(restCfg); err != nil {
		return nil, nil, nil, err
	}
	if watch, err = ownConnection(restCfg); err != nil {
		return nil, nil, nil, err
	}
	return kc, podWatch, watch, nil
}

// runWorker runs the worker and its metrics endpoint until ctx ends.
func runWorker(ctx context.Context, log *slog.Logger, common *commonFlags, wf *workerFlags, st *store.Store, listener *store.Listener) error {
	kc, podWatch, watch, err := workerClients(common, log)
	if err != nil {
		return err
	}
	pods := kube.PodInformers(podWatch)
	defer pods.Shutdown()
	id := wf.id
	if id == "" {
		id = defaultWorkerID()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	w, err := worker.New(worker.Config{
		ID:                   id,
		Store:                st,
		Kube:                 kc,
		Watch:                watch,
		Pods:                 pods,
		Listener:             listener,
		Cluster:              wf.cluster,
		Concurrency:          wf.concurrency,
		LeaseTTL:             wf.leaseTTL,
		MaxOwnedJobs:         wf.maxOwnedJobs,
		ClaimInterval:        wf.claimInterval,
		UnschedulableTimeout: wf.unschedulableTimeout,
		RequeueBackoff:       wf.requeueBackoff,
		RequeueBackoffMax:    wf.requeueBackoffMax,
		PodOptions:           kube.PodOptions{MaxGracePeriod: wf.maxGracePeriod},
		LogTailLines:         wf.logTailLines,
		LogTailBytes:         wf.logTailBytes,
		Metrics:              st,
		MetricsInterval:      wf.metricsInterval,
		FinishedTTL:          wf.finishedTTL,
		Registry:             reg,
		Logger:               log,
	})
	if err != nil {
		return err
	}
	// Every worker reports its cluster (capacity, nodes) from the
	// scheduler's informers; the one holding the scheduler lease also
	// sweeps every cluster's heartbeats (worker.ClusterAgent).
	var sch *scheduler.Scheduler
	agent, err := worker.NewClusterAgent(worker.ClusterAgentConfig{
		Cluster: wf.cluster, Agent: id, Store: st,
		Nodes:     func() ([]cluster.Node, bool) { return sch.ClusterNodes() },
		Heartbeat: wf.clusterHeartbeat, Timeout: wf.clusterTimeout, LostGrace: wf.clusterLostGrace,
		Registry: reg, Logger: log,
	})
	if err != nil {
		return err
	}
	// The experiments controller runs where the scheduler lease is held:
	// one at a time, with no lease of its own.
	experiments, err := experimentctl.NewController(experimentctl.Config{Store: st, Period: wf.experimentPeriod, Listener: listener, Logger: log})
	if err != nil {
		return err
	}
	// With --prometheus-url, the lease holder also reads the running jobs'
	// GPU utilisation (internal/gpuutil): one reader of every job at a
	// time, whichever worker owns it, on a lease that exists anyway.
	var gpu *gpuutil.Poller
	if wf.prometheusURL != "" {
		gpu, err = gpuutil.New(gpuutil.Config{
			URL: wf.prometheusURL, Store: st, Interval: wf.gpuPollInterval, Lag: wf.gpuPollLag,
			Registry: reg, Logger: log,
		})
		if err != nil {
			return err
		}
	}
	// Every worker runs a scheduler; the one holding the scheduler lease
	// schedules (internal/scheduler), writes the jobs' EndpointSlices and
	// sweeps the clusters' heartbeats and runs the experiments controller.
	sch, err = scheduler.New(scheduler.Config{
		ID: id, Store: st, Kube: watch, Cluster: wf.cluster, Pods: pods, Listener: listener,
		LeaseTTL: wf.schedulerLeaseTTL, Period: wf.schedulePeriod, StarvationAge: wf.starvationAge,
		BorrowAging: wf.borrowAging,
		OnLead: func(ctx context.Context) {
			var wg sync.WaitGroup
			wg.Go(func() { agent.Sweep(ctx) })
			wg.Go(func() { experiments.Lead(ctx) })
			if gpu != nil {
				wg.Go(func() { _ = gpu.Run(ctx) })
			}
			w.LeadEndpoints(ctx)
			wg.Wait()
		},
		Registry: reg, Logger: log,
	})
	if err != nil {
		return err
	}
	// The tenant reconciler (internal/tenantctl) keeps tenant namespaces
	// provisioned; it runs in the worker process with the same client.
	tenantCfg := tenantctl.Config{
		Store: st, Client: kc, Listener: listener, NamespacePrefix: common.kube.namespacePrefix,
		Cluster: wf.cluster, Options: wf.tenantOptions(),
		Registry: reg, Logger: log,
	}
	if wf.homeKubeconfig != "" {
		home, err := common.kube.restConfigAt(wf.homeKubeconfig)
		if err != nil {
			return fmt.Errorf("--home-kubeconfig: %w", err)
		}
		hc, err := kubernetes.NewForConfig(home)
		if err != nil {
			return fmt.Errorf("--home-kubeconfig: %w", err)
		}
		tenantCfg.Secrets = tenantctl.StoreSecrets{Store: st, Home: kube.HomeSecrets{Client: hc}}
	} else if wf.cluster != cluster.Default {
		log.Warn("no --home-kubeconfig: tenant Secrets are not copied into this cluster, and its jobs cannot mount them",
			"cluster", wf.cluster)
	}
	tenants, err := tenantctl.New(tenantCfg)
	if err != nil {
		return err
	}
	if wf.metricsAddr != "" {
		stop, err := serveWorkerMetrics(ctx, log, wf.metricsAddr, reg, w)
		if err != nil {
			return err
		}
		defer stop()
	}
	// Any loop ending ends them all.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg                                 sync.WaitGroup
		workerErr, tenantErr, schedulerErr error
	)
	wg.Go(func() { _ = agent.Run(ctx) })
	if wf.cluster == cluster.Default {
		wg.Go(func() {
			defer cancel()
			if schedulerErr = sch.Run(ctx); schedulerErr != nil {
				log.Error("scheduler stopped", "error", schedulerErr)
			}
		})
	} else {
		// Another cluster's workers leave the scheduler (and its lease,
		// whose holder writes the EndpointSlices of its own cluster only)
		// to the default cluster's: they report their nodes (Observe)
		// and write their own cluster's slices, every one of them (a
		// second writer costs a conflict, never a wrong slice).
		wg.Go(func() { _ = sch.Observe(ctx) })
		wg.Go(func() { w.LeadEndpoints(ctx) })
	}
	wg.Go(func() {
		defer cancel()
		workerErr = w.Run(ctx)
	})
	wg.Go(func() {
		defer cancel()
		if tenantErr = tenants.Run(ctx); tenantErr != nil {
			log.Error("tenant reconciler stopped", "error", tenantErr)
		}
	})
	wg.Wait()
	return errors.Join(workerErr, tenantErr, schedulerErr)
}

// serveWorkerMetrics serves /metrics, /healthz (the process answers) and
// /readyz (caches synced, Postgres reached recently).
func serveWorkerMetrics(ctx context.Context, log *slog.Logger, addr string, reg *prometheus.Registry, w *worker.Worker) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprintln(rw, "ok") })
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, _ *http.Request) {
		if err := w.Ready(); err != nil {
			http.Error(rw, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(rw, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("worker metrics server failed", "error", err)
		}
	}()
	log.Info("worker metrics listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// warningLogger logs each distinct API server warning once: Pod Security's
// "restricted" warning, for one, comes back with every pod created in a
// baseline namespace, and would otherwise drown the worker's log.
type warningLogger struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]bool
}

func (w *warningLogger) HandleWarningHeaderWithContext(_ context.Context, code int, _, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	dup := w.seen[text]
	if !dup && len(w.seen) < 1000 {
		w.seen[text] = true
	}
	w.mu.Unlock()
	if !dup {
		w.log.Info("Kubernetes API warning (each distinct warning is logged once)", "warning", text)
	}
}

// defaultWorkerID is <hostname>-<pid>-<random>: unique among workers and
// new after every restart, so a restarted worker never takes its
// predecessor's leases for its own.
func defaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b)
}

// withPoolSize sets pgxpool's pool_max_conns to n unless the URL sets it:
// pgxpool's default (the number of CPUs, at least 4) would make the
// reconcile goroutines queue for connections.
func withPoolSize(databaseURL string, n int) string {
	if databaseURL == "" || strings.Contains(databaseURL, "pool_max_conns") {
		return databaseURL
	}
	if u, err := url.Parse(databaseURL); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("pool_max_conns", strconv.Itoa(n))
		u.RawQuery = q.Encode()
		return u.String()
	}
	return databaseURL + " pool_max_conns=" + strconv.Itoa(n)
}

// validHTTPURL: an absolute http(s) URL with a host.
func validHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
