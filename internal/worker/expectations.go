package worker

import (
	"strings"
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
// not be let go (see Worker.finishing). A create whose expectation ran out
// without its informer event is remembered as lapsed until an event for
// the object comes or a live GET finds it gone: before its job is let go,
// finishing reads those objects by name instead of trusting the cache.
type expectations struct {
	ttl time.Duration
	now func() time.Time
	mu  sync.Mutex
	m   map[string]expectation
	// byJob holds the keys of each job's awaited creates.
	byJob map[string]map[string]struct{}
	// lapsed maps the key of each lapsed create to its job's uid.
	lapsed map[string]string
}

// maxLapsed bounds the lapsed creates remembered; beyond it a lapse is
// forgotten, and what its job leaves is the orphan sweep's. A lapse needs
// a watch that was down for longer than the TTL, so even this is a lot.
const maxLapsed = 10000

type expectation struct {
	until time.Time
	job   string // the job uid of a create; "" for deletes
}

func newExpectations(ttl time.Duration) *expectations {
	return &expectations{ttl: ttl, now: time.Now, m: map[string]expectation{},
		byJob: map[string]map[string]struct{}{}, lapsed: map[string]string{}}
}

// expect records a write whose effect is awaited; job is the uid of the
// job a create is for ("" for a delete).
func (e *expectations) expect(key, job string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	delete(e.lapsed, key)
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
				e.lapseLocked(k)
			}
		}
	}
}

// pending reports whether a write's effect is still awaited.
func (e *expectations) pending(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pendingLocked(key, e.now())
}

func (e *expectations) pendingLocked(key string, now time.Time) bool {
	x, ok := e.m[key]
	if ok && now.After(x.until) {
		e.lapseLocked(key)
		return false
	}
	return ok
}

// lapseLocked ends an expectation whose event never came; a create's is
// remembered as lapsed.
func (e *expectations) lapseLocked(key string) {
	if x := e.m[key]; x.job != "" && len(e.lapsed) < maxLapsed {
		e.lapsed[key] = x.job
	}
	e.deleteLocked(key)
}

// creating reports whether creates of the job are still awaited.
func (e *expectations) creating(job string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	for k := range e.byJob[job] {
		if e.pendingLocked(k, now) {
			return true
		}
	}
	return false
}

// lapsedCreates lists the job's lapsed creates (createKey keys).
func (e *expectations) lapsedCreates(job string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for k, j := range e.lapsed {
		if j == job {
			out = append(out, k)
		}
	}
	return out
}

// observed clears the expectations for keys, and lapsed creates: the
// object was seen (by an informer event, or found gone by a live read).
func (e *expectations) observed(keys ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range keys {
		e.deleteLocked(k)
		delete(e.lapsed, k)
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

// parseCreateKey is createKey's inverse.
func parseCreateKey(key string) (kind, ns, name string, ok bool) {
	parts := strings.SplitN(key, "/", 4)
	if len(parts) != 4 || parts[0] != "create" {
		return "", "", "", false
	}
	return parts[1], parts[2], parts[3], true
}
