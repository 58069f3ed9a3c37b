package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
)

// Config configures a Worker. Zero fields take the defaults WithDefaults
// names.
type Config struct {
	// ID names this worker in the jobs it owns (jobs.worker_id). It must be
	// unique among running workers and should differ after a restart, so
	// that a restarted worker never mistakes its predecessor's leases for
	// its own. Required.
	ID string
	// Store is storage: *store.Store (Postgres). Required.
	Store Store
	// Kube is the Kubernetes client (its QPS and burst are the caller's).
	// Required.
	Kube kubernetes.Interface
	// Watch is the client the informers list and watch with. Optional:
	// Kube when nil. Give it its own connection to the API server
	// (cmd/trainyard does): over one HTTP/2 connection the watch streams'
	// events and the creates' answers queue behind each other.
	Watch kubernetes.Interface
	// Pods is the factory of the pod informer (kube.PodInformers), shared
	// with the process's scheduler so that every pod event is received
	// and decoded once. Optional: the worker makes its own from Watch.
	Pods informers.SharedInformerFactory
	// Listener wakes the worker on job and tenant notifications. Optional:
	// without it the worker relies on polling alone.
	Listener *store.Listener
	// Cluster is the cluster whose jobs Store's claims return
	// (store.WithCluster): admissions to other clusters do not wake this
	// worker. Defaults to cluster.Default.
	Cluster string

	// Concurrency is the number of reconcile goroutines. Defaults to 32:
	// a pass spends most of its time waiting for the API server (a pod
	// create under load takes 50-150 ms on the local cluster), so these
	// bound the creates in flight. At 16, 6,000 admitted single-pod jobs
	// had their pods after 41.5 s against raw client-go's 17.2 s with 32
	// creates in flight (0.42x); at 32, 0.51-0.57x (make bench, admission).
	Concurrency int
	// LeaseTTL is how long a claim or renewal holds this worker's lease,
	// and with it its jobs; it is renewed every LeaseTTL/3, and a dead
	// worker's jobs are taken over once it passed. Defaults to 10s.
	LeaseTTL time.Duration
	// MaxOwnedJobs bounds the jobs this worker owns at once (running or
	// being cleaned up; a job waiting for admission is not owned).
	// Defaults to 1000.
	MaxOwnedJobs int
	// ClaimInterval is the polling fallback for claims (jittered ±20%);
	// notifications wake the claimer sooner. Defaults to 1s.
	ClaimInterval time.Duration
	// ClaimBatch is the most jobs one claim query takes. Defaults to 100.
	ClaimBatch int
	// UnschedulableTimeout: an admitted job whose pods stay unschedulable
	// this long (the room the scheduler saw was taken meanwhile) has its
	// pods removed and goes back to the queue, without counting against
	// its backoffLimit. Defaults to 5m.
	UnschedulableTimeout time.Duration
	// RequeueBackoff is how long such a job waits before it may be
	// admitted again, doubling with each requeue up to RequeueBackoffMax.
	// Default to 30s and 10m.
	RequeueBackoff    time.Duration
	RequeueBackoffMax time.Duration
	// SweepInterval is how often the orphan sweep looks for Trainyard
	// objects whose job is gone or finished and cleaned up (jittered; also
	// once when the caches have synced). Defaults to 1m.
	SweepInterval time.Duration
	// Resync is how often the worker re-queues the jobs it owns that had
	// no pass since the last time, a safety net under the informers'
	// events and the timers. Defaults to 5m.
	Resync time.Duration
	// LogTailLines is how many lines of a failed replica's log are kept.
	// Defaults to 50.
	LogTailLines int64
	// LogTailBytes caps one kept log tail. Defaults to 8 KiB. A job keeps
	// at most MaxLogTailBytesPerJob of tails, and a pass reads at most
	// MaxLogTailsPerPass of them.
	LogTailBytes int64
	// CreateParallelism bounds the concurrent API calls of one reconcile
	// pass (the pods of a job are created at once), and its concurrent log
	// reads. Defaults to 16.
	CreateParallelism int
	// FinishedTTL is how long a finished job's kept pods (and a Service
	// still naming running ones) are kept when its run policy sets no
	// ttlSecondsAfterFinished; then they are deleted, and the job's record,
	// events and kept log tails stay. A job's own TTL always wins. 0, the default here, keeps them until the
	// job is deleted; `trainyard worker` defaults to DefaultFinishedTTLFlag.
	FinishedTTL time.Duration
	// PodOptions are handed to kube.RenderPod (the job ServiceAccount).
	PodOptions kube.PodOptions
	// Metrics stores the metric points of experiment trials (the
	// trainyard-metric lines of their chief's or worker 0's log; see
	// trialmetrics.go). Nil: trial metrics are not read.
	Metrics MetricsStore
	// MetricsInterval is how often the log of a running trial this worker
	// owns is read for metric lines (each read asks for the lines since
	// the last one). Defaults to DefaultMetricsInterval.
	MetricsInterval time.Duration

	// Registry receives the worker's metrics. Defaults to a private
	// registry (metrics are then collected but not exported).
	Registry prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock of plans (tests set it). Defaults to time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultConcurrency          = 32
	DefaultLeaseTTL             = 10 * time.Second
	DefaultMaxOwnedJobs         = 1000
	DefaultClaimInterval        = time.Second
	DefaultClaimBatch           = 100
	DefaultUnschedulableTimeout = 5 * time.Minute
	DefaultRequeueBackoff       = 30 * time.Second
	DefaultRequeueBackoffMax    = 10 * time.Minute
	DefaultSweepInterval        = time.Minute
	DefaultResync               = 5 * time.Minute
	DefaultLogTailLines         = 50
	DefaultLogTailBytes         = 8 << 10
	DefaultCreateParallelism    = 16
	DefaultMetricsInterval      = 15 * time.Second
	// DefaultFinishedTTLFlag is `trainyard worker --default-ttl-after-finished`:
	// a day to look at a finished job's pods with kubectl, then they go.
	DefaultFinishedTTLFlag = 24 * time.Hour
)

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	setInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	if c.Cluster == "" {
		c.Cluster = cluster.Default
	}
	setInt(&c.Concurrency, DefaultConcurrency)
	setInt(&c.MaxOwnedJobs, DefaultMaxOwnedJobs)
	setInt(&c.ClaimBatch, DefaultClaimBatch)
	setInt(&c.CreateParallelism, DefaultCreateParallelism)
	set(&c.LeaseTTL, DefaultLeaseTTL)
	set(&c.ClaimInterval, DefaultClaimInterval)
	set(&c.UnschedulableTimeout, DefaultUnschedulableTimeout)
	set(&c.RequeueBackoff, DefaultRequeueBackoff)
	set(&c.RequeueBackoffMax, DefaultRequeueBackoffMax)
	set(&c.SweepInterval, DefaultSweepInterval)
	set(&c.Resync, DefaultResync)
	if c.MetricsInterval <= 0 {
		c.MetricsInterval = DefaultMetricsInterval
	}
	if c.LogTailLines <= 0 {
		c.LogTailLines = DefaultLogTailLines
	}
	if c.LogTailBytes <= 0 {
		c.LogTailBytes = DefaultLogTailBytes
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.ID == "":
		return errors.New("worker: ID is required")
	case c.Store == nil:
		return errors.New("worker: Store is required")
	case c.Kube == nil:
		return errors.New("worker: Kube is required")
	case c.LeaseTTL < time.Second:
		return fmt.Errorf("worker: lease TTL %s is too short (at least 1s: renewals run every TTL/3)", c.LeaseTTL)
	case c.FinishedTTL < 0 || c.FinishedTTL > math.MaxInt32*time.Second:
		return fmt.Errorf("worker: default TTL after finished %s is out of range 0..%ds", c.FinishedTTL, math.MaxInt32)
	}
	return nil
}

// runPolicy is the job's run policy with the operator's default TTL where
// the job sets none.
func (c Config) runPolicy(rp job.RunPolicy) job.RunPolicy {
	if rp.TTLSecondsAfterFinished == nil && c.FinishedTTL > 0 {
		rp.TTLSecondsAfterFinished = new(int32(c.FinishedTTL / time.Second))
	}
	return rp
}
