package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/store"
)

// ClusterAgent is the worker's report of its cluster (issue 45). Every
// worker heartbeats the cluster it runs in (--cluster, default "default")
// every ClusterAgentConfig.Heartbeat: capacity, usage and node count, and
// the node list when it changed (its digest), so the scheduler can build
// one snapshot over every cluster's nodes. The worker holding the
// scheduler lease also sweeps: a cluster whose last heartbeat is older
// than ClusterAgentConfig.Timeout becomes UNREACHABLE, and READY (or what
// the operator set) again once it reports.
//
//	every worker:          nodes (the scheduler's informers) ─► ClusterHeartbeat
//	scheduler lease holder: every min(Heartbeat, Timeout/3) ─► ClusterSweep ─► metrics, log
//
// The sweep runs on the scheduler lease rather than in each agent: health
// needs one writer, the lease already elects one (and fences nothing
// here: two sweeps write the same verdict), and its holder is the process
// that will read every cluster's health for the next snapshot.
type ClusterAgent struct {
	cfg ClusterAgentConfig
	log *slog.Logger

	// published is the digest of the nodes last written (or found
	// written); the loop goroutine's.
	published string

	heartbeatAge *prometheus.GaugeVec
	state        *prometheus.GaugeVec
	transitions  *prometheus.CounterVec
	lost         *prometheus.CounterVec
	beatErrors   prometheus.Counter
	mu           sync.Mutex
	known        map[string]bool // clusters in the gauges, to remove the deleted
}

// ClusterStore is what the agent writes; *store.Store implements it.
type ClusterStore interface {
	ClusterHeartbeat(ctx context.Context, p store.ClusterHeartbeatParams) (bool, error)
	ClusterSweep(ctx context.Context, timeout time.Duration) ([]store.ClusterHealth, error)
	ClusterRequeueLost(ctx context.Context, holder, cluster string, unreachableFor time.Duration) ([]store.JobKey, error)
}

// ClusterAgentConfig configures a ClusterAgent.
type ClusterAgentConfig struct {
	// Cluster is the cluster this worker runs in. Defaults to
	// cluster.Default.
	Cluster string
	// Agent is this worker's id, written with each heartbeat. Required.
	Agent string
	Store ClusterStore
	// Nodes returns the cluster's nodes, false until known
	// (scheduler.Scheduler.ClusterNodes). Required.
	Nodes func() ([]cluster.Node, bool)
	// Heartbeat is how often the agent reports. Defaults to
	// DefaultClusterHeartbeat.
	Heartbeat time.Duration
	// Timeout is how old a cluster's last heartbeat may be before the
	// sweep marks it UNREACHABLE. Defaults to DefaultClusterTimeout.
	Timeout time.Duration
	// LostGrace is how long a cluster stays UNREACHABLE (past Timeout)
	// before the sweep sends its unfinished jobs back to the queue to run
	// elsewhere (store.ClusterRequeueLost). Defaults to
	// DefaultClusterLostGrace.
	LostGrace time.Duration
	// Registry receives the metrics; defaults to a private registry.
	Registry prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Defaults of ClusterAgentConfig.
const (
	DefaultClusterHeartbeat = 10 * time.Second
	DefaultClusterTimeout   = 60 * time.Second
	DefaultClusterLostGrace = 10 * time.Minute
)

// NewClusterAgent builds a ClusterAgent (not started).
func NewClusterAgent(cfg ClusterAgentConfig) (*ClusterAgent, error) {
	if cfg.Cluster == "" {
		cfg.Cluster = cluster.Default
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultClusterHeartbeat
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultClusterTimeout
	}
	if cfg.LostGrace <= 0 {
		cfg.LostGrace = DefaultClusterLostGrace
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch {
	case cfg.Agent == "" || cfg.Store == nil || cfg.Nodes == nil:
		return nil, errors.New("worker: ClusterAgentConfig.Agent, Store and Nodes are required")
	case cfg.Timeout <= cfg.Heartbeat:
		return nil, fmt.Errorf("worker: the cluster timeout (%s) must be longer than the heartbeat (%s)", cfg.Timeout, cfg.Heartbeat)
	}
	if err := cluster.ValidateName(cfg.Cluster); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	a := &ClusterAgent{cfg: cfg, log: cfg.Logger.With("cluster", cfg.Cluster), known: map[string]bool{},
		heartbeatAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_cluster_heartbeat_age_seconds",
			Help: "Age of each cluster's last heartbeat at the last sweep (exported by the scheduler lease's holder); past --cluster-timeout the cluster is UNREACHABLE. -1: never heard from.",
		}, []string{"cluster"}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_cluster_state",
			Help: "1 for each cluster's state at the last sweep (READY, UNREACHABLE, DRAINING, CORDONED), exported by the scheduler lease's holder.",
		}, []string{"cluster", "state"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_cluster_reachability_changes_total",
			Help: "Clusters the sweep marked UNREACHABLE, or reachable again (state: the state after).",
		}, []string{"cluster", "state"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_cluster_lost_jobs_total",
			Help: "Jobs sent back to the queue because their cluster stayed unreachable past --cluster-lost-grace.",
		}, []string{"cluster"}),
		beatErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trainyard_cluster_heartbeat_errors_total",
			Help: "Heartbeats of this worker's cluster that could not be written (Postgres unreachable, or the cluster not registered).",
		}),
	}
	for _, c := range []prometheus.Collector{a.heartbeatAge, a.state, a.transitions, a.lost, a.beatErrors} {
		if err := cfg.Registry.Register(c); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Run heartbeats until ctx ends; it returns nil then. Failures are
// logged and retried at the next beat.
func (a *ClusterAgent) Run(ctx context.Context) error {
	a.log.Info("reporting this cluster", "heartbeat", a.cfg.Heartbeat, "agent", a.cfg.Agent)
	t := time.NewTicker(a.cfg.Heartbeat)
	defer t.Stop()
	for {
		if err := a.beat(ctx); err != nil && ctx.Err() == nil {
			a.beatErrors.Inc()
			a.log.Warn("cluster heartbeat failed; trying again", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// beat writes one heartbeat, with the nodes when they changed. Before the
// informers know the nodes it writes nothing: a heartbeat without them
// would report a cluster without capacity.
func (a *ClusterAgent) beat(ctx context.Context) error {
	nodes, ok := a.cfg.Nodes()
	if !ok {
		return nil
	}
	slices.SortFunc(nodes, func(x, y cluster.Node) int { return strings.Compare(x.Name, y.Name) })
	doc, err := json.Marshal(nodes)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(doc)
	digest := hex.EncodeToString(sum[:16])
	capacity, usage := cluster.Sum(nodes)
	p := store.ClusterHeartbeatParams{Cluster: a.cfg.Cluster, Agent: a.cfg.Agent, Capacity: capacity, Usage: usage, NodeCount: len(nodes)}
	if digest != a.published {
		p.Nodes, p.NodesDigest = nodes, digest
	}
	wrote, err := a.cfg.Store.ClusterHeartbeat(ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		// Deleted, or not registered yet: publish everything once it is.
		a.published = ""
		return fmt.Errorf("%w (register it: tyctl clusters register %s)", err, a.cfg.Cluster)
	}
	if err != nil {
		return err
	}
	if p.NodesDigest != "" {
		a.published = digest
		if wrote {
			a.log.Debug("cluster nodes published", "nodes", len(nodes), "digest", digest)
		}
	}
	return nil
}

// Sweep runs the sweep until ctx ends: the scheduler lease's OnLead (with
// the EndpointSlice controller), so that one process at a time does it.
// The state gauges are cleared when it stops leading.
func (a *ClusterAgent) Sweep(ctx context.Context) {
	every := min(a.cfg.Heartbeat, a.cfg.Timeout/3)
	t := time.NewTicker(every)
	defer t.Stop()
	defer a.resetGauges()
	for {
		if err := a.sweep(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("cluster sweep failed; trying again", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *ClusterAgent) sweep(ctx context.Context) error {
	health, err := a.cfg.Store.ClusterSweep(ctx, a.cfg.Timeout)
	if err != nil {
		return err
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[string]bool{}
	for _, h := range health {
		seen[h.Cluster] = true
		age := -1.0
		if !h.HeartbeatTime.IsZero() {
			age = max(now.Sub(h.HeartbeatTime).Seconds(), 0)
		}
		a.heartbeatAge.WithLabelValues(h.Cluster).Set(age)
		for _, s := range []cluster.State{cluster.Ready, cluster.Unreachable, cluster.Draining, cluster.Cordoned} {
			v := 0.0
			if s == h.State {
				v = 1
			}
			a.state.WithLabelValues(h.Cluster, string(s)).Set(v)
		}
		if !h.Changed {
			continue
		}
		a.transitions.WithLabelValues(h.Cluster, string(h.State)).Inc()
		if h.State == cluster.Unreachable {
			a.log.Warn("cluster unreachable: its agent missed heartbeats past the timeout", "unreachable", h.Cluster,
				"last_heartbeat", h.HeartbeatTime, "timeout", a.cfg.Timeout)
		} else {
			a.log.Info("cluster reachable again", "reachable", h.Cluster, "state", h.State)
		}
	}
	for _, h := range health {
		silent := now.Sub(h.HeartbeatTime)
		if h.State != cluster.Unreachable || h.HeartbeatTime.IsZero() || silent < a.cfg.Timeout+a.cfg.LostGrace {
			continue
		}
		// Its own holder id: a job left owned by a failed save must not
		// look like one of this worker's own (JobLeaseRenew would adopt
		// it into this cluster).
		moved, err := a.cfg.Store.ClusterRequeueLost(ctx, a.cfg.Agent+"/lost-clusters", h.Cluster, silent)
		if len(moved) > 0 {
			a.lost.WithLabelValues(h.Cluster).Add(float64(len(moved)))
			a.log.Warn("cluster lost: its jobs go back to the queue to run elsewhere", "lost", h.Cluster,
				"jobs", len(moved), "silent_for", silent.Round(time.Second))
		}
		if err != nil {
			a.log.Warn("taking back a lost cluster's jobs failed; the next sweep tries again", "lost", h.Cluster, "error", err)
		}
	}
	for c := range a.known {
		if !seen[c] {
			a.heartbeatAge.DeleteLabelValues(c)
			a.state.DeletePartialMatch(prometheus.Labels{"cluster": c})
		}
	}
	a.known = seen
	return nil
}

func (a *ClusterAgent) resetGauges() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.heartbeatAge.Reset()
	a.state.Reset()
	a.known = map[string]bool{}
}
