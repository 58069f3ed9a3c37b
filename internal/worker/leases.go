package worker

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/trainyard/trainyard/internal/store"
)

// runOwnership claims and renews in one goroutine, so that a claim and a
// renewal never interleave (a renewal that started before a claim
// committed would not return the claimed jobs and drop them again).
func (w *Worker) runOwnership(ctx context.Context) {
	renew := time.NewTicker(w.cfg.LeaseTTL / 3)
	defer renew.Stop()
	resync := time.NewTicker(w.cfg.Resync)
	defer resync.Stop()
	claim := time.NewTimer(0)
	defer claim.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			w.renew(ctx)
		case <-w.claimWake:
			w.claim(ctx)
		case <-claim.C:
			w.claim(ctx)
			claim.Reset(jitter(w.cfg.ClaimInterval))
		case <-resync.C:
			// The safety net under events and timers is for jobs nothing
			// woke: one that had a pass since the last resync needs none.
			// (Requeueing all 15,000 jobs of a large admission cost 15,000
			// passes at once, each a load.)
			for _, k := range w.own.Idle(time.Now().Add(-w.cfg.Resync)) {
				w.queue.Add(k)
			}
		}
	}
}

// wakeClaimer asks for a claim soon; wake-ups coalesce.
func (w *Worker) wakeClaimer() {
	select {
	case w.claimWake <- struct{}{}:
	default:
	}
}

// claim takes jobs without a live owner until there are none or this
// worker owns MaxOwnedJobs. Its rounds are bounded so that renewals, which
// share the goroutine, are never starved.
func (w *Worker) claim(ctx context.Context) {
	for range 10 {
		room := min(w.cfg.MaxOwnedJobs-w.own.Count(), w.cfg.ClaimBatch)
		if room <= 0 {
			return
		}
		sent := time.Now()
		guard, listening := w.stashGuard()
		jobs, err := w.store.JobClaim(ctx, w.cfg.ID, room, w.cfg.LeaseTTL)
		if err != nil {
			w.listNext = true // it may have committed
			if ctx.Err() == nil {
				w.log.Warn("claiming jobs failed", "error", err)
			}
			return
		}
		w.renewOK.Store(time.Now().UnixNano())
		keys := store.KeysOf(jobs)
		w.own.Add(keys, sent.Add(w.cfg.LeaseTTL))
		if after, _ := w.stashGuard(); listening && after == guard {
			for _, j := range jobs {
				w.own.Stash(j)
			}
		}
		w.metrics.claimed.Add(float64(len(keys)))
		for _, k := range keys {
			w.log.Debug("claimed job", "job", k)
			w.queue.Add(k)
		}
		if len(keys) < room {
			return
		}
	}
}

// listEvery is how many renewals at most go by without listing the jobs
// the worker owns (every 20 s with the default TTL of 10 s).
const listEvery = 6

// renew extends every lease and stops acting on jobs not renewed. When
// renewals fail, jobs are dropped once their lease has certainly expired:
// another worker may own them by then.
//
// A lease that was still live when extended lost no job (JobLeaseExtend),
// so most renewals do not list the jobs. Every listEvery-th does, and the
// one after a failed claim (it may have committed, its answer lost) or a
// lease found run out: the list finds jobs owned but not known here, and
// drops those known here but not owned.
func (w *Worker) renew(ctx context.Context) {
	sent := time.Now()
	if !w.listNext && w.extended < listEvery-1 {
		live, err := w.store.JobLeaseExtend(ctx, w.cfg.ID, w.cfg.LeaseTTL)
		if err == nil && live {
			w.extended++
			w.renewOK.Store(time.Now().UnixNano())
			w.own.Extend(sent.Add(w.cfg.LeaseTTL))
			return
		}
		if err != nil {
			w.failedRenewal(ctx, err)
			return
		}
	}
	keys, err := w.store.JobLeaseRenew(ctx, w.cfg.ID, w.cfg.LeaseTTL)
	if err != nil {
		w.failedRenewal(ctx, err)
		return
	}
	w.extended, w.listNext = 0, false
	w.renewOK.Store(time.Now().UnixNano())
	lost, found := w.own.Renewed(keys, sent.Add(w.cfg.LeaseTTL))
	w.lose(lost)
	for _, k := range found {
		w.queue.Add(k)
	}
}

// failedRenewal drops the jobs whose lease has certainly run out.
func (w *Worker) failedRenewal(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	lost := w.own.Expire(time.Now())
	w.log.Warn("renewing leases failed", "error", err, "jobs_dropped", len(lost))
	w.lose(lost)
}

func (w *Worker) lose(keys []store.JobKey) {
	for _, k := range keys {
		w.log.Info("lost the lease of a job; another worker takes it over", "job", k)
		w.metrics.leasesLost.Inc()
	}
}

// disown stops acting on a job that is finished or no longer ours.
func (w *Worker) disown(k store.JobKey) {
	w.own.Drop(k)
}

// jitter spreads d by ±20% so that workers started together do not poll
// in step.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
