package ownership

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// Store is what claiming and renewing need of storage (a part of
// worker.Store).
type Store interface {
	JobClaim(ctx context.Context, workerID string, limit int, ttl time.Duration) ([]store.WorkerJob, error)
	JobLeaseExtend(ctx context.Context, workerID string, ttl time.Duration) (bool, error)
	JobLeaseRenew(ctx context.Context, workerID string, ttl time.Duration) ([]store.JobKey, error)
}

// KeeperConfig configures a Keeper; every field is required (the worker's
// Config has the defaults).
type KeeperConfig struct {
	ID       string
	Store    Store
	LeaseTTL time.Duration
	// ClaimInterval is the polling fallback (jittered); Wake claims sooner.
	ClaimInterval time.Duration
	// ClaimBatch bounds one claim; MaxOwned the jobs owned at once.
	ClaimBatch, MaxOwned int
	// Resync: jobs not loaded for this long are queued again.
	Resync time.Duration
	// Queue asks for a pass of a job.
	Queue func(store.JobKey)
	// StashGuard tells whether a claim's rows may be kept for their first
	// passes: the claim keeps them only when it returns the same value
	// before and after, and true (Set.Stash).
	StashGuard func() (int64, bool)
	// Claimed counts the jobs claimed, LeasesLost the jobs lost.
	Claimed, LeasesLost prometheus.Counter
	// ClaimDelay observes, for each claimed job not started yet (STARTING),
	// the time since its admission. Optional.
	ClaimDelay prometheus.Observer
	Log        *slog.Logger
}

// Keeper claims jobs into a Set and keeps their lease, in one goroutine
// (Run), so that a claim and a renewal never interleave: a renewal that
// started before a claim committed would not return the claimed jobs and
// would drop them again.
type Keeper struct {
	cfg  KeeperConfig
	set  *Set
	wake chan struct{}
	// contact is the time (unix nanos) of the last claim or renewal that
	// reached the store.
	contact atomic.Int64
	// extended counts renewals since the jobs were last listed; listNext
	// asks the next renewal to list them. Only Run's goroutine uses them.
	extended int
	listNext bool
}

// NewKeeper returns a Keeper of set.
func NewKeeper(cfg KeeperConfig, set *Set) *Keeper {
	k := &Keeper{cfg: cfg, set: set, wake: make(chan struct{}, 1)}
	k.contact.Store(time.Now().UnixNano())
	return k
}

// LastContact is when a claim or renewal last reached the store (or the
// Keeper was made).
func (k *Keeper) LastContact() time.Time { return time.Unix(0, k.contact.Load()) }

// Run claims and renews until ctx ends.
func (k *Keeper) Run(ctx context.Context) {
	k.contact.Store(time.Now().UnixNano())
	renew := time.NewTicker(k.cfg.LeaseTTL / 3)
	defer renew.Stop()
	resync := time.NewTicker(k.cfg.Resync)
	defer resync.Stop()
	claim := time.NewTimer(0)
	defer claim.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			k.Renew(ctx)
		case <-k.wake:
			k.Claim(ctx)
		case <-claim.C:
			k.Claim(ctx)
			claim.Reset(Jitter(k.cfg.ClaimInterval))
		case <-resync.C:
			// The safety net under events and timers is for jobs nothing
			// woke: one that had a pass since the last resync needs none.
			// (Requeueing all 15,000 jobs of a large admission cost 15,000
			// passes at once, each a load.)
			for _, key := range k.set.Idle(time.Now().Add(-k.cfg.Resync)) {
				k.cfg.Queue(key)
			}
		}
	}
}

// Wake asks for a claim soon; wake-ups coalesce.
func (k *Keeper) Wake() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// Claim takes jobs without a live owner until there are none or the Set
// holds MaxOwned. Its rounds are bounded so that renewals, which share
// the goroutine, are never starved. Not concurrently with Renew: Run.
func (k *Keeper) Claim(ctx context.Context) {
	for range 10 {
		room := min(k.cfg.MaxOwned-k.set.Count(), k.cfg.ClaimBatch)
		if room <= 0 {
			return
		}
		sent := time.Now()
		guard, listening := k.cfg.StashGuard()
		jobs, err := k.cfg.Store.JobClaim(ctx, k.cfg.ID, room, k.cfg.LeaseTTL)
		if err != nil {
			k.listNext = true // it may have committed
			if ctx.Err() == nil {
				k.cfg.Log.Warn("claiming jobs failed", "error", err)
			}
			return
		}
		k.contact.Store(time.Now().UnixNano())
		keys := store.KeysOf(jobs)
		k.set.Add(keys, sent.Add(k.cfg.LeaseTTL))
		if after, _ := k.cfg.StashGuard(); listening && after == guard {
			for _, j := range jobs {
				k.set.Stash(j)
			}
		}
		k.cfg.Claimed.Add(float64(len(keys)))
		k.observeDelays(jobs, time.Now())
		for _, key := range keys {
			k.cfg.Log.Debug("claimed job", "job", key)
			k.cfg.Queue(key)
		}
		if len(keys) < room {
			return
		}
	}
}

// observeDelays observes each claimed job's time since its admission,
// for jobs whose pods are not created yet.
func (k *Keeper) observeDelays(jobs []store.WorkerJob, now time.Time) {
	if k.cfg.ClaimDelay == nil {
		return
	}
	for _, j := range jobs {
		if j.Job.Status.State != job.Starting {
			continue
		}
		for _, c := range j.Job.Status.Conditions {
			if c.Type == job.CondAdmitted && c.Status {
				k.cfg.ClaimDelay.Observe(max(now.Sub(c.LastTransitionTime), 0).Seconds())
			}
		}
	}
}

// listEvery is how many renewals at most go by without listing the jobs
// the worker owns (every 20 s with the default TTL of 10 s).
const listEvery = 6

// Renew extends the lease and stops acting on jobs not renewed. When
// renewals fail, jobs are dropped once their lease has certainly expired:
// another worker may own them by then.
//
// A lease that was still live when extended lost no job (JobLeaseExtend),
// so most renewals do not list the jobs. Every listEvery-th does, and the
// one after a failed claim (it may have committed, its answer lost) or a
// lease found run out: the list finds jobs owned but not known here, and
// drops those known here but not owned. Not concurrently with Claim: Run.
func (k *Keeper) Renew(ctx context.Context) {
	sent := time.Now()
	if !k.listNext && k.extended < listEvery-1 {
		live, err := k.cfg.Store.JobLeaseExtend(ctx, k.cfg.ID, k.cfg.LeaseTTL)
		if err == nil && live {
			k.extended++
			k.contact.Store(time.Now().UnixNano())
			k.set.Extend(sent.Add(k.cfg.LeaseTTL))
			return
		}
		if err != nil {
			k.failedRenewal(ctx, err)
			return
		}
	}
	keys, err := k.cfg.Store.JobLeaseRenew(ctx, k.cfg.ID, k.cfg.LeaseTTL)
	if err != nil {
		k.failedRenewal(ctx, err)
		return
	}
	k.extended, k.listNext = 0, false
	k.contact.Store(time.Now().UnixNano())
	lost, found := k.set.Renewed(keys, sent.Add(k.cfg.LeaseTTL))
	k.lose(lost)
	for _, key := range found {
		k.cfg.Queue(key)
	}
}

// Listing says how many renewals went by since the owned jobs were last
// listed, and whether the next renewal lists them.
func (k *Keeper) Listing() (extended int, listNext bool) { return k.extended, k.listNext }

// failedRenewal drops the jobs whose lease has certainly run out.
func (k *Keeper) failedRenewal(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	lost := k.set.Expire(time.Now())
	k.cfg.Log.Warn("renewing leases failed", "error", err, "jobs_dropped", len(lost))
	k.lose(lost)
}

func (k *Keeper) lose(keys []store.JobKey) {
	for _, key := range keys {
		k.cfg.Log.Info("lost the lease of a job; another worker takes it over", "job", key)
		k.cfg.LeasesLost.Inc()
	}
}

// Jitter spreads d by ±20% so that workers started together do not poll
// in step.
func Jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
