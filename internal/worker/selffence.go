package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trainyard/trainyard/internal/kube"
)

// SelfFence stops a remote cluster's jobs when its agent has been cut off
// from the control plane for too long (issue 45). The control plane
// gives a silent cluster's jobs to other clusters once the cluster's last
// heartbeat is older than its timeout plus the lost grace (the requeue
// point, which the control plane tells the agent with every heartbeat).
// A partitioned cluster's pods would run on meanwhile, side by side with
// their requeued copies. So an agent whose heartbeats have not been
// recorded for longer than the requeue point less a margin deletes the
// pods of every job in its cluster: by the time the copies start elsewhere, the old pods have
// had their grace period and are gone.
//
//	last contact ──────────── fence point ─── requeue point (control plane)
//	             └ calls fail ┘            │
//	                                       └ delete every job pod here,
//	                                         Margin (≥ the pods' grace) early
//
// The fence point is RequeueAfter - Margin, but never earlier than
// RequeueAfter/2: with a requeue point shorter than the margin (tests),
// half of it. Nothing is fenced before the first heartbeat answered (the
// requeue point is unknown then; nothing was claimed either). Once
// contact is back, the worker's renewals tell it which jobs are still its
// own; the pods it deleted are restarts it counts, or the orphan sweep's
// to clean up when the jobs moved.
type SelfFence struct {
	cfg SelfFenceConfig
	log *slog.Logger
	// fenced: pods were deleted since the last contact (logged once).
	fenced  bool
	deleted prometheus.Counter
}

// SelfFenceConfig configures a SelfFence.
type SelfFenceConfig struct {
	// LastContact is when the control plane last recorded a heartbeat,
	// and RequeueAfter what it answered (0: not known yet)
	// (agentclient.Client). Required.
	LastContact  func() time.Time
	RequeueAfter func() time.Duration
	// Kube deletes the pods. Required.
	Kube kubernetes.Interface
	// Margin is how long before the requeue point the pods are deleted:
	// at least the longest grace period they get (--max-termination-
	// grace-period) plus the time a delete takes. Defaults to 5m30s.
	Margin time.Duration
	// Interval is how often the contact is checked. Defaults to 5s.
	Interval time.Duration
	// Now is the clock (tests). Defaults to time.Now.
	Now      func() time.Time
	Registry prometheus.Registerer
	Logger   *slog.Logger
}

// NewSelfFence builds a SelfFence (not started).
func NewSelfFence(cfg SelfFenceConfig) (*SelfFence, error) {
	if cfg.LastContact == nil || cfg.RequeueAfter == nil || cfg.Kube == nil {
		return nil, errors.New("worker: SelfFenceConfig.LastContact, RequeueAfter and Kube are required")
	}
	if cfg.Margin <= 0 {
		cfg.Margin = 5*time.Minute + 30*time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f := &SelfFence{cfg: cfg, log: cfg.Logger.With("component", "self-fence"),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trainyard_agent_fenced_pods_total",
			Help: "Job pods a remote agent deleted because it was cut off from the control plane for longer than the requeue point less the margin.",
		})}
	if err := cfg.Registry.Register(f.deleted); err != nil {
		return nil, err
	}
	return f, nil
}

// FencePoint is how long after the last contact the pods go, given the
// control plane's requeue point; 0: never (the point is unknown).
func FencePoint(requeueAfter, margin time.Duration) time.Duration {
	if requeueAfter <= 0 {
		return 0
	}
	return max(requeueAfter-margin, requeueAfter/2)
}

// Run checks every Interval until ctx ends.
func (f *SelfFence) Run(ctx context.Context) {
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := f.Check(ctx); err != nil && ctx.Err() == nil {
				f.log.Warn("deleting job pods while cut off from the control plane failed; trying again", "error", err)
			}
		}
	}
}

// Check deletes every job pod of the cluster when the fence point has
// passed since the last contact, and says how many it deleted.
func (f *SelfFence) Check(ctx context.Context) (int, error) {
	point := FencePoint(f.cfg.RequeueAfter(), f.cfg.Margin)
	silent := f.cfg.Now().Sub(f.cfg.LastContact())
	if point == 0 || silent < point {
		if f.fenced && silent < point {
			f.log.Info("the control plane answers again")
			f.fenced = false
		}
		return 0, nil
	}
	pods, err := f.cfg.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedByValue + "," + kube.LabelJob})
	if err != nil {
		return 0, fmt.Errorf("list job pods: %w", err)
	}
	n := 0
	var errs []error
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		uid := p.UID
		err := f.cfg.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	f.deleted.Add(float64(n))
	if n > 0 || !f.fenced {
		f.log.Warn("cut off from the control plane past the fence point: deleting this cluster's job pods, so that none runs beside its copy elsewhere",
			"silent_for", silent.Round(time.Second), "fence_point", point, "requeue_after", f.cfg.RequeueAfter(), "deleted", n)
	}
	f.fenced = true
	return n, errors.Join(errs...)
}
