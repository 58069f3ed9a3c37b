package ownership

import (
	"sync"
	"time"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// Set is the set of jobs this worker holds a lease on, as far as it
// knows. Postgres is the truth (every write is fenced); this set decides
// what the worker acts on between writes, and is trimmed to what each
// renewal returns.
type Set struct {
	mu   sync.Mutex
	jobs map[store.JobKey]*ownedJob
}

type ownedJob struct {
	// Until is a local lower bound of the lease's expiry: the time the
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
	// instead of loading the job (see Stash).
	claimed *store.WorkerJob
}

// NewSet returns an empty Set.
func NewSet() *Set { return &Set{jobs: map[store.JobKey]*ownedJob{}} }

// Add records claimed keys, leased until until, and returns them.
func (o *Set) Add(keys []store.JobKey, until time.Time) {
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

// Stash keeps a job's row as its claim returned it, for the first pass,
// which then needs no load: in a burst of admissions that is one read of
// Postgres less for every job dispatched. Only a QUEUED or STARTING job's
// row is kept: a job just admitted is STARTING (job.Admit), and its first
// pass creates its pods without a save before them. Every write of a job
// by others (cancel, preemption, offboarding) notifies the job's channel,
// and a notification drops the row
// (DropClaimed), so the pass loads the job instead; one that comes while
// the pass runs makes another pass, on a load. One that comes while the
// claim is under way (a cancel committed just after it, notified before
// the job was owned) keeps the whole claim's rows out (the worker's stashGuard),
// as does a payload the listener dropped. A notification lost altogether
// (its writer died between commit and NOTIFY) can let a first pass create
// pods of a job cancelled or preempted since its claim: their creation
// events bring the pass, on a load, that removes them. A job claimed in
// another state (a takeover) is always loaded.
func (o *Set) Stash(w store.WorkerJob) {
	if s := w.Job.Status.State; s != job.Queued && s != job.Starting {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if j := o.jobs[w.Key()]; j != nil {
		j.claimed = &w
	}
}

// DropClaimed forgets the rows stashed for keys (all of them when keys is
// empty): the jobs changed since their claim.
func (o *Set) DropClaimed(keys ...store.JobKey) {
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

// TakeClaimed returns, once, the row stashed for k's first pass.
func (o *Set) TakeClaimed(k store.JobKey) (store.WorkerJob, bool) {
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

// Renewed applies a renewal that returned keys: they are leased until
// until; every other owned job is lost. found are returned keys the set did
// not hold (claimed by an earlier run of this worker id, or dropped while
// still leased): they are owned again.
func (o *Set) Renewed(keys []store.JobKey, until time.Time) (lost, found []store.JobKey) {
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

// Extend moves every job's lease to until (a renewal that lost none).
func (o *Set) Extend(until time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, j := range o.jobs {
		j.until = until
	}
}

// Expire drops jobs whose lease has certainly run out (renewals failing).
func (o *Set) Expire(now time.Time) (lost []store.JobKey) {
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

func (o *Set) Owns(k store.JobKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.jobs[k] != nil
}

// Leased reports whether the job's lease is still live by the local
// estimate, with margin to spare for the API calls that follow.
func (o *Set) Leased(k store.JobKey, now time.Time, margin time.Duration) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := o.jobs[k]
	return j != nil && now.Add(margin).Before(j.until)
}

// Until returns the local lower bound of the job's lease expiry; ok is
// false when the job is not owned.
func (o *Set) Until(k store.JobKey) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := o.jobs[k]
	if j == nil {
		return time.Time{}, false
	}
	return j.until, true
}

// Drop forgets a job; it reports whether it was owned.
func (o *Set) Drop(k store.JobKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.jobs[k]
	delete(o.jobs, k)
	return ok
}

// Unstarted reports whether the worker owns k and has not started it:
// claimed and not loaded yet, QUEUED (admitted before admissions wrote
// STARTING), or its pods still to be created (MarkDispatch).
func (o *Set) Unstarted(k store.JobKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := o.jobs[k]
	return j != nil && (j.state == "" || j.state == job.Queued || j.dispatchPending)
}

// Loaded records a pass's load of k at at, and the state it read.
func (o *Set) Loaded(k store.JobKey, s job.State, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if j := o.jobs[k]; j != nil {
		j.state, j.loadedAt = s, at
	}
}

// Idle returns the jobs not loaded since before.
func (o *Set) Idle(before time.Time) []store.JobKey {
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

func (o *Set) SetState(k store.JobKey, s job.State) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if j := o.jobs[k]; j != nil {
		j.state = s
	}
}

// MarkDispatch sets or clears dispatchPending and returns its old value.
func (o *Set) MarkDispatch(k store.JobKey, pending bool) bool {
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

func (o *Set) Count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.jobs)
}

func (o *Set) Keys() []store.JobKey {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]store.JobKey, 0, len(o.jobs))
	for k := range o.jobs {
		out = append(out, k)
	}
	return out
}

func (o *Set) ByState() map[job.State]int {
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
