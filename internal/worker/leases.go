package worker

import (
	"context"

	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/worker/ownership"
)

// newKeeper is the worker's claim and renewal loop (ownership.Keeper) over
// its owned set: claimed and found jobs go to the queue.
func (w *Worker) newKeeper() *ownership.Keeper {
	return ownership.NewKeeper(ownership.KeeperConfig{
		ID: w.cfg.ID, Store: w.store, LeaseTTL: w.cfg.LeaseTTL, ClaimInterval: w.cfg.ClaimInterval,
		ClaimBatch: w.cfg.ClaimBatch, MaxOwned: w.cfg.MaxOwnedJobs, Resync: w.cfg.Resync,
		Queue:      func(k store.JobKey) { w.queue.Add(k) },
		StashGuard: w.stashGuard,
		Claimed:    w.metrics.claimed, ClaimDelay: w.metrics.claimDelay, LeasesLost: w.metrics.leasesLost,
		Log: w.log,
	}, w.own)
}

// claim and renew are the keeper's, for the tests that drive them.
func (w *Worker) claim(ctx context.Context) { w.keeper.Claim(ctx) }
func (w *Worker) renew(ctx context.Context) { w.keeper.Renew(ctx) }

// disown stops acting on a job that is finished or no longer ours.
func (w *Worker) disown(k store.JobKey) {
	w.own.Drop(k)
}
