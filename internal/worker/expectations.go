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
type expectations struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]time.Time
}

func newExpectations(ttl time.Duration) *expectations {
	return &expectations{ttl: ttl, m: map[string]time.Time{}}
}

// expect records a write whose effect is awaited.
func (e *expectations) expect(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = time.Now().Add(e.ttl)
	if len(e.m) > 10000 {
		now := time.Now()
		for k, exp := range e.m {
			if now.After(exp) {
				delete(e.m, k)
			}
		}
	}
}

// pending reports whether a write's effect is still awaited.
func (e *expectations) pending(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.m[key]
	if ok && time.Now().After(exp) {
		delete(e.m, key)
		return false
	}
	return ok
}

// observed clears the expectations for keys.
func (e *expectations) observed(keys ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range keys {
		delete(e.m, k)
	}
}

func createKey(kind, ns, name string) string { return "create/" + kind + "/" + ns + "/" + name }
func deleteKey(uid string) string            { return "delete/" + uid }
