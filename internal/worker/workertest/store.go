package workertest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Store is an in-memory worker.Store. The zero value is not usable: New.
type Store struct {
	mu      sync.Mutex
	jobs    map[store.JobKey]*row
	tenants map[string]tenant.Tenant
	leases  map[string]time.Time // worker id → expiry
	events  map[store.JobKey][]job.Event
	calls   map[string]int
	seq     int64
	// AfterLoad, when set, is called after JobLoad read a job (outside the
	// store's lock): a write there lands between a pass's load and its
	// save, as a cancel racing a pass does.
	AfterLoad func(store.JobKey)
	// Now is the clock of the jobs' times (admission, events): a test's
	// settable clock, as the worker's Config.Now. Defaults to time.Now.
	// Leases run on the wall clock whatever it is, as the worker's local
	// estimate of them does.
	Now func() time.Time
}

type row struct {
	wj  store.WorkerJob
	seq int64
	// claimAfter: the job is claimable (when unowned) from this time; the
	// zero time is "-infinity". waiting is "infinity": not admitted.
	claimAfter time.Time
	waiting    bool
}

// New returns an empty Store.
func New() *Store {
	return &Store{
		jobs: map[store.JobKey]*row{}, tenants: map[string]tenant.Tenant{}, leases: map[string]time.Time{},
		events: map[store.JobKey][]job.Event{}, calls: map[string]int{}, Now: time.Now,
	}
}

func (s *Store) call(name string) {
	s.calls[name]++
}

// Calls returns how often each method was called.
func (s *Store) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// ResetCalls forgets the calls counted so far.
func (s *Store) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
}

// AddTenant stores a tenant (its Namespace and State as given).
func (s *Store) AddTenant(t tenant.Tenant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tenants[t.ID] = t
}

// AddJob stores a job as the API creates it (spec defaulted, QUEUED, a new
// uid unless j has one, version 1) and, when admitted, admits it as the
// scheduler does (job.Admit: STARTING), which makes it claimable.
func (s *Store) AddJob(j job.Job, admitted bool) store.JobKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	j.Spec.Default()
	if j.UID == "" {
		j.UID = uuid.NewString()
	}
	if j.CreateTime.IsZero() {
		j.CreateTime = s.Now()
	}
	if j.Status.State == "" {
		j.Status.State = job.Queued
	}
	s.seq++
	r := &row{wj: store.WorkerJob{Job: j, Version: 1, Active: true}, seq: s.seq, waiting: true}
	k := r.wj.Key()
	s.jobs[k] = r
	if admitted {
		s.admit(r)
	}
	return k
}

// Admit admits a QUEUED job as the scheduler's commit does.
func (s *Store) Admit(k store.JobKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[k]
	if !ok {
		return fmt.Errorf("%w: job %s", store.ErrNotFound, k)
	}
	s.admit(r)
	return nil
}

func (s *Store) admit(r *row) {
	r.wj.Admitted, r.waiting, r.claimAfter = true, false, time.Time{}
	if st, drafts, ok := job.Admit(r.wj.Job, s.Now()); ok {
		r.wj.Job.Status = st
		s.appendEvents(r, eventsOf(drafts))
	}
	r.wj.Version++
}

func eventsOf(drafts []job.EventDraft) []job.Event {
	out := make([]job.Event, len(drafts))
	for i, d := range drafts {
		out[i] = job.Event{Type: d.Type, Reason: d.Reason, Message: d.Message}
	}
	return out
}

// Cancel requests a job's cancellation, as the API does.
func (s *Store) Cancel(k store.JobKey) {
	s.update(k, func(r *row) { r.wj.Job.Status.CancelRequested = true })
}

// Delete marks a job deleted, as the API does: it needs a worker (at once)
// to remove what is left, then its purge.
func (s *Store) Delete(k store.JobKey) {
	s.update(k, func(r *row) {
		if !r.wj.Active {
			r.wj.WorkerID = ""
		}
		r.wj.Deleted, r.wj.Active = true, true
		r.waiting, r.claimAfter = false, time.Time{}
	})
}

// Suspend requests a job's suspension, as the API does.
func (s *Store) Suspend(k store.JobKey) {
	s.update(k, func(r *row) { r.wj.Job.Status.SuspendRequested = true })
}

// Resume resumes a job, as the API does: a SUSPENDED job is QUEUED again,
// waiting for admission.
func (s *Store) Resume(k store.JobKey) {
	s.update(k, func(r *row) {
		r.wj.Job.Status.SuspendRequested = false
		if r.wj.Job.Status.State == job.Suspended {
			r.wj.Job.Status.State = job.Queued
			r.waiting = true
		}
	})
}

// Preempt marks a job preempted for the job by, as the scheduler does.
func (s *Store) Preempt(k store.JobKey, by, message string) {
	s.update(k, func(r *row) { r.wj.PreemptFor, r.wj.PreemptMessage = by, message })
}

// TakeOver gives a job to another worker, as that worker's claim would once
// the owner's lease ran out: the owner's next fenced write finds it lost.
func (s *Store) TakeOver(k store.JobKey, workerID string, ttl time.Duration) {
	s.mu.Lock()
	s.leases[workerID] = time.Now().Add(ttl)
	s.mu.Unlock()
	s.update(k, func(r *row) { r.wj.WorkerID = workerID })
}

// ExpireLease ends a worker's lease now.
func (s *Store) ExpireLease(workerID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.leases[workerID]; ok {
		s.leases[workerID] = time.Now().Add(-time.Millisecond)
	}
}

func (s *Store) update(k store.JobKey, f func(*row)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.jobs[k]; ok {
		f(r)
		r.wj.Version++
	}
}

// Job returns a stored job as JobLoad would, without counting a call; ok
// is false once it is purged.
func (s *Store) Job(k store.JobKey) (store.WorkerJob, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[k]
	if !ok {
		return store.WorkerJob{}, false
	}
	return r.wj, true
}

// Events returns a job's events, oldest first.
func (s *Store) Events(k store.JobKey) []job.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events[k])
}

func (s *Store) live(workerID string) bool {
	exp, ok := s.leases[workerID]
	return ok && exp.After(time.Now())
}

// fence is the verdict of a fenced write of k by workerID at version (any
// version when version < 0), as store's fence.verdict.
func (s *Store) fence(workerID string, k store.JobKey, version int64) (*row, error) {
	r, ok := s.jobs[k]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: job %s", store.ErrNotFound, k.UID)
	case r.wj.WorkerID != workerID || !s.live(workerID):
		return nil, fmt.Errorf("%w: job %s is not leased to %s", store.ErrLeaseLost, k.UID, workerID)
	case version >= 0 && r.wj.Version != version:
		return nil, fmt.Errorf("%w: job %s is at version %d, not %d", store.ErrConflict, k.UID, r.wj.Version, version)
	}
	return r, nil
}

func (s *Store) appendEvents(r *row, events []job.Event) {
	k := r.wj.Key()
	for _, e := range events {
		e.Type = cmp.Or(e.Type, job.EventNormal)
		e.State = cmp.Or(e.State, r.wj.Job.Status.State)
		if e.CreateTime.IsZero() {
			e.CreateTime = s.Now()
		}
		s.events[k] = append(s.events[k], e)
	}
}

// JobLoad implements worker.Store.
func (s *Store) JobLoad(_ context.Context, tenantID, uid string) (store.WorkerJob, error) {
	k := store.JobKey{Tenant: tenantID, UID: uid}
	s.mu.Lock()
	s.call("JobLoad")
	r, ok := s.jobs[k]
	var wj store.WorkerJob
	if ok {
		wj = r.wj
	}
	after := s.AfterLoad
	s.mu.Unlock()
	if !ok {
		return store.WorkerJob{}, fmt.Errorf("%w: job %s in tenant %q", store.ErrNotFound, uid, tenantID)
	}
	if after != nil {
		after(k)
	}
	return wj, nil
}

// JobSave implements worker.Store.
func (s *Store) JobSave(_ context.Context, p store.JobSaveParams) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("JobSave")
	switch {
	case p.Status.State == "":
		return 0, fmt.Errorf("%w: job %s: status has no state", store.ErrFailedPrecondition, p.UID)
	case p.Requeue != nil && ((p.Status.State != job.Queued && p.Status.State != job.Suspended) || p.Done):
		return 0, fmt.Errorf("%w: job %s: a requeued job is QUEUED or SUSPENDED and not done", store.ErrFailedPrecondition, p.UID)
	case p.Park > 0 && (p.Done || p.Requeue != nil):
		return 0, fmt.Errorf("%w: job %s: a parked job is neither done nor requeued", store.ErrFailedPrecondition, p.UID)
	}
	r, err := s.fence(p.WorkerID, store.JobKey{Tenant: p.Tenant, UID: p.UID}, p.Version)
	if err != nil {
		return 0, err
	}
	st := p.Status
	st.CancelRequested = r.wj.Job.Status.CancelRequested // the column is the truth
	st.SuspendRequested = r.wj.Job.Status.SuspendRequested
	r.wj.Job.Status = st
	r.wj.Version++
	r.wj.Active = r.wj.Active && !p.Done
	if p.Done || p.Requeue != nil || p.Park > 0 {
		r.wj.WorkerID = ""
	}
	switch {
	case p.Requeue != nil:
		r.wj.Admitted, r.waiting = false, true
		r.wj.PreemptFor, r.wj.PreemptMessage = "", ""
	case p.Park > 0:
		r.claimAfter = time.Now().Add(p.Park)
	}
	s.appendEvents(r, p.Events)
	return r.wj.Version, nil
}

// JobPark implements worker.Store.
func (s *Store) JobPark(_ context.Context, workerID, tenantID, uid string, version int64, after time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("JobPark")
	r, err := s.fence(workerID, store.JobKey{Tenant: tenantID, UID: uid}, version)
	if err != nil {
		return err
	}
	r.wj.WorkerID, r.claimAfter = "", time.Now().Add(max(after, 0))
	r.wj.Version++
	return nil
}

// JobPurge implements worker.Store.
func (s *Store) JobPurge(_ context.Context, workerID, tenantID, uid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("JobPurge")
	k := store.JobKey{Tenant: tenantID, UID: uid}
	r, err := s.fence(workerID, k, -1)
	if err != nil {
		return err
	}
	if !r.wj.Deleted {
		return fmt.Errorf("%w: job %s is not deleted", store.ErrFailedPrecondition, uid)
	}
	delete(s.jobs, k)
	delete(s.events, k)
	return nil
}

// JobListByKeys implements worker.Store.
func (s *Store) JobListByKeys(_ context.Context, keys []store.JobKey) ([]store.JobBrief, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("JobListByKeys")
	var out []store.JobBrief
	for _, k := range keys {
		if r, ok := s.jobs[k]; ok {
			out = append(out, store.JobBrief{Key: k, Active: r.wj.Active, CleanedUp: r.wj.Job.Status.CleanedUp,
				State: r.wj.Job.Status.State})
		}
	}
	return out, nil
}

// TenantGet implements worker.Store.
func (s *Store) TenantGet(_ context.Context, id string) (tenant.Tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("TenantGet")
	t, ok := s.tenants[id]
	if !ok {
		return tenant.Tenant{}, fmt.Errorf("%w: tenant %q", store.ErrNotFound, id)
	}
	return t, nil
}

// JobClaim implements worker.Store.
func (s *Store) JobClaim(ctx context.Context, workerID string, limit int, ttl time.Duration) ([]store.WorkerJob, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("JobClaim")
	if limit <= 0 {
		return nil, nil
	}
	now := time.Now()
	s.leases[workerID] = now.Add(ttl)
	var expired, due []*row
	for _, r := range s.jobs {
		switch {
		case !r.wj.Active:
		case r.wj.WorkerID != "" && r.wj.WorkerID != workerID && !s.live(r.wj.WorkerID):
			expired = append(expired, r)
		case r.wj.WorkerID == "" && !r.waiting && !r.claimAfter.After(now):
			due = append(due, r)
		}
	}
	bySeq := func(a, b *row) int { return cmp.Compare(a.seq, b.seq) }
	slices.SortFunc(expired, bySeq)
	slices.SortFunc(due, func(a, b *row) int {
		return cmp.Or(a.claimAfter.Compare(b.claimAfter), bySeq(a, b))
	})
	var out []store.WorkerJob
	for _, r := range append(expired, due...) {
		if len(out) == limit {
			break
		}
		r.wj.WorkerID = workerID
		r.wj.Version++
		out = append(out, r.wj)
	}
	return out, nil
}

// JobLeaseExtend implements worker.Store.
func (s *Store) JobLeaseExtend(ctx context.Context, workerID string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("JobLeaseExtend")
	if !s.live(workerID) {
		return false, nil
	}
	s.leases[workerID] = time.Now().Add(ttl)
	return true, nil
}

// JobLeaseRenew implements worker.Store.
func (s *Store) JobLeaseRenew(ctx context.Context, workerID string, ttl time.Duration) ([]store.JobKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("JobLeaseRenew")
	s.leases[workerID] = time.Now().Add(ttl)
	var keys []store.JobKey
	for k, r := range s.jobs {
		if r.wj.WorkerID == workerID && r.wj.Active {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// JobRelease implements worker.Store.
func (s *Store) JobRelease(_ context.Context, workerID string, keys ...store.JobKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("JobRelease")
	for _, k := range keys {
		if r, ok := s.jobs[k]; ok && r.wj.WorkerID == workerID {
			r.wj.WorkerID = ""
			r.wj.Version++
		}
	}
	return nil
}

// JobReleaseAll implements worker.Store.
func (s *Store) JobReleaseAll(_ context.Context, workerID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("JobReleaseAll")
	delete(s.leases, workerID)
	for _, r := range s.jobs {
		if r.wj.WorkerID == workerID {
			r.wj.WorkerID = ""
			r.wj.Version++
		}
	}
	return nil
}

// JobCounts implements worker.Store.
func (s *Store) JobCounts(_ context.Context) (map[job.State]int64, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("JobCounts")
	byState := map[job.State]int64{}
	var waiting int64
	for _, r := range s.jobs {
		st := r.wj.Job.Status.State
		if !r.wj.Active || r.wj.Deleted || st.Final() {
			continue
		}
		byState[st]++
		if st == job.Queued && !r.wj.Admitted && !r.wj.Job.Status.CancelRequested {
			waiting++
		}
	}
	return byState, waiting, nil
}
