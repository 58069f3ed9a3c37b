package worker

import (
	"sync"
	"time"
)

// expectations remember writes to Kubernetes whose effect the informer
// caches do not show yet (the sample-controller's "expectations", made
// small). Between a create and the informer's add event every pass of the
// job would create the pod again and get AlreadyExists; between a delete
// and the update that shows its deletion timestamp it would delete again.
// Harmless, but under a burst of jobs those calls eat the client's QPS. An
// expectation is cleared by the informer event for the object, or expires
// after ttl in case that event never comes.
//
// Creates are also kept per job: while a job has creates the caches do not
// show, what the caches show of it is not all there is, and the job must
// not be let go (see Worker.finishing).
type expectations struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]expectation
	// byJob holds the keys of each job's awaited creates.
	byJob map[string]map[string]struct{}
}

type expectation struct {
	until time.Time
	job   string // the job uid of a create; "" for deletes
}

func newExpectations(ttl time.Duration) *expectations {
	return &expectations{ttl: ttl, m: map[string]expectation{}, byJob: map[string]map[string]struct{}{}}
}

// expect records a write whose effect is awaited; job is the uid of the
// job a create is for ("" for a delete).
func (e *expectations) expect(key, job string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	e.m[key] = expectation{until: now.Add(e.ttl), job: job}
	if job != "" {
		if e.byJob[job] == nil {
			e.byJob[job] = map[string]struct{}{}
		}
		e.byJob[job][key] = struct{}{}
	}
	if len(e.m) > 10000 {
		for k, x := range e.m {
			if now.After(x.until) {
				e.deleteLocked(k)
			}
		}
	}
}

// pending reports whether a write's effect is still awaited.
func (e *expectations) pending(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pendingLocked(key, time.Now())
}

func (e *expectations) pendingLocked(key string, now time.Time) bool {
	x, ok := e.m[key]
	if ok && now.After(x.until) {
		e.deleteLocked(key)
		return false
	}
	return ok
}

// creating reports whether creates of the job are still awaited.
func (e *expectations) creating(job string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	for k := range e.byJob[job] {
		if e.pendingLocked(k, now) {
			return true
		}
	}
	return false
}

// observed clears the expectations for keys.
func (e *expectations) observed(keys ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range keys {
		e.deleteLocked(k)
	}
}

func (e *expectations) deleteLocked(key string) {
	x, ok := e.m[key]
	if !ok {
		return
	}
	delete(e.m, key)
	if x.job != "" {
		delete(e.byJob[x.job], key)
		if len(e.byJob[x.job]) == 0 {
			delete(e.byJob, x.job)
		}
	}
}

func createKey(kind, ns, name string) string { return "create/" + kind + "/" + ns + "/" + name }
func deleteKey(uid string) string            { return "delete/" + uid }
