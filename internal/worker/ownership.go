package worker

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// ownership is the set of jobs this worker holds a lease on, as far as it
// knows. Postgres is the truth (every write is fenced); this set decides
// what the worker acts on between writes, and is trimmed to what each
// renewal returns.
type ownership struct {
	mu   sync.Mutex
	jobs map[store.JobKey]*ownedJob
}

type ownedJob struct {
	// until is a local lower bound of the lease's expiry: the time the
	// claim or renewal was sent plus the TTL. Past it the worker no longer
	// acts on the job in Kubernetes without a fenced write first.
	until time.Time
	state job.State
	// loadedAt is the start of the last pass that loaded the job (zero:
	// none yet). The resync skips jobs loaded since the last one.
	loadedAt time.Time
	// dispatchPending: the job was admitted by this worker and its objects
	// are not all created yet (for the dispatch latency metric).
	dispatchPending bool
	// claimed is the row the claim returned, until the first pass takes it
	// instead of loading the job (see stash).
	claimed *store.WorkerJob
}

func newOwnership() *ownership { return &ownership{jobs: map[store.JobKey]*ownedJob{}} }

// add records claimed keys, leased until until, and returns them.
func (o *ownership) add(keys []store.JobKey, until time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, k := range keys {
		if j := o.jobs[k]; j != nil {
			j.until = until
			continue
		}
		o.jobs[k] = &ownedJob{until: until}
	}
}

// stash keeps a job's row as its claim returned it, for the first pass,
// which then needs no load: in a burst of admissions that is one read of
// Postgres less for every job dispatched. Only a QUEUED or STARTING job's
// row is kept: a job just admitted is STARTING (job.Admit), and its first
// pass creates its pods without a save before them. Every write of a job
// by others (cancel, preemption, offboarding) notifies the job's channel,
// and a notification drops the row
// (dropClaimed), so the pass loads the job instead; one that comes while
// the pass runs makes another pass, on a load. One that comes while the
// claim is under way (a cancel committed just after it, notified before
// the job was owned) keeps the whole claim's rows out (Worker.stashGuard),
// as does a payload the listener dropped. A notification lost altogether
// (its writer died between commit and NOTIFY) can let a first pass create
// pods of a job cancelled or preempted since its claim: their creation
// events bring the pass, on a load, that removes them. A job claimed in
// another state (a takeover) is always loaded.
func (o *ownership) stash(w store.WorkerJob) {
	if s := w.Job.Status.State; s != job.Queued && s != job.Starting {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if j := o.jobs[w.Key()]; j != nil {
		j.claimed = &w
	}
}

// dropClaimed forgets the rows stashed for keys (all of them when keys is
// empty): the jobs changed since their claim.
func (o *ownership) dropClaimed(keys ...store.JobKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(keys) == 0 {
		for _, j := range o.jobs {
			j.claimed = nil
		}
		return
	}
	for _, k := range keys {
		if j := o.jobs[k]; j != nil {
			j.claimed = nil
		}
	}
}

// takeClaimed returns, once, the row stashed for k's first pass.
func (o *ownership) takeClaimed(k store.JobKey) (store.WorkerJob, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := o.jobs[k]
	if j == nil || j.claimed == nil {
		return store.WorkerJob{}, false
	}
	w := *j.claimed
	j.claimed = nil
	return w, true
}

// renewed applies a renewal that returned keys: they are leased until
// until; every other owned job is lost. found are returned keys the set did
// not hold (claimed by an earlier run of this worker id, or dropped while
// still leased): they are owned again.
func (o *ownership) renewed(keys []store.JobKey, until time.Time) (lost, found []store.JobKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	live := make(map[store.JobKey]bool, len(keys))
	for _, k := range keys {
		live[k] = true
		if j := o.jobs[k]; j != nil {
			j.until = until
			continue
		}
		o.jobs[k] = &ownedJob{until: until}
		found = append(found, k)
	}
	for k := range o.jobs {
		if !live[k] {
			delete(o.jobs, k)
			lost = append(lost, k)
		}
	}
	return lost, found
}

// extend moves every job's lease to until (a renewal that lost none).
func (o *ownership) extend(until time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, j := range o.jobs {
		j.until = until
	}
}

// expire drops jobs whose lease has certainly run out (renewals failing).
func (o *ownership) expire(now time.Time) (lost []store.JobKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, j := range o.jobs {
		if !now.Before(j.until) {
			delete(o.jobs, k)
			lost = append(lost, k)
		}
	}
	return lost
}

func (o *ownership) owns(k store.JobKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.jobs[k] != nil
}

// leased reports whether the job's lease is still live by the local
// estimate, with margin to spare for the API calls that follow.
func (o *ownership) leased(k store.JobKey, now time.Time, margin time.Duration) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := o.jobs[k]
	return j != nil && now.Add(margin).Before(j.until)
}

// until returns the local lower bound of the job's lease expiry; ok is
// false when the job is not owned.
func (o *ownership) until(k store.JobKey) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := o.jobs[k]
	if j == nil {
		return time.Time{}, false
	}
	return j.until, true
}

// drop forgets a job; it reports whether it was owned.
func (o *ownership) drop(k store.JobKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.jobs[k]
	delete(o.jobs, k)
	return ok
}

// unstarted reports whether the worker owns k and has not started it:
// claimed and not loaded yet, QUEUED (admitted before admissions wrote
// STARTING), or its pods still to be created (markDispatch).
func (o *ownership) unstarted(k store.JobKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := o.jobs[k]
	return j != nil && (j.state == "" || j.state == job.Queued || j.dispatchPending)
}

// loaded records a pass's load of k at at, and the state it read.
func (o *ownership) loaded(k store.JobKey, s job.State, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if j := o.jobs[k]; j != nil {
		j.state, j.loadedAt = s, at
	}
}

// idle returns the jobs not loaded since before.
func (o *ownership) idle(before time.Time) []store.JobKey {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []store.JobKey
	for k, j := range o.jobs {
		if j.loadedAt.Before(before) {
			out = append(out, k)
		}
	}
	return out
}

func (o *ownership) setState(k store.JobKey, s job.State) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if j := o.jobs[k]; j != nil {
		j.state = s
	}
}

// markDispatch sets or clears dispatchPending and returns its old value.
func (o *ownership) markDispatch(k store.JobKey, pending bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := o.jobs[k]
	if j == nil {
		return false
	}
	old := j.dispatchPending
	j.dispatchPending = pending
	return old
}

func (o *ownership) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.jobs)
}

func (o *ownership) keys() []store.JobKey {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]store.JobKey, 0, len(o.jobs))
	for k := range o.jobs {
		out = append(out, k)
	}
	return out
}

func (o *ownership) byState() map[job.State]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[job.State]int{}
	for _, j := range o.jobs {
		if j.state != "" {
			out[j.state]++
		}
	}
	return out
}

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
			for _, k := range w.own.idle(time.Now().Add(-w.cfg.Resync)) {
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
		room := min(w.cfg.MaxOwnedJobs-w.own.count(), w.cfg.ClaimBatch)
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
		w.own.add(keys, sent.Add(w.cfg.LeaseTTL))
		if after, _ := w.stashGuard(); listening && after == guard {
			for _, j := range jobs {
				w.own.stash(j)
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
			w.own.extend(sent.Add(w.cfg.LeaseTTL))
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
	lost, found := w.own.renewed(keys, sent.Add(w.cfg.LeaseTTL))
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
	lost := w.own.expire(time.Now())
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
	w.own.drop(k)
}

// jitter spreads d by ±20% so that workers started together do not poll
// in step.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
