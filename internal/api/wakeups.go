package api

import (
	"sync"

	"github.com/trainyard/trainyard/internal/store"
)

// tenantWakeups fans the events channel out by tenant. Writers NOTIFY
// store.ChannelEvents with the tenant id as payload; a watcher only cares
// about its own tenant. One subscription to the Listener (taken while
// anybody watches, dropped when the last watcher leaves) is read by one
// goroutine that wakes just the watchers of the payload's tenant, so a busy
// tenant costs other tenants' watchers nothing, and the Listener's
// per-subscription buffer is drained at once instead of filling up behind a
// watcher that is busy reading Postgres.
//
// A wake-up is a hint: each watcher's channel holds one pending wake-up, and
// more coalesce into it. Watchers poll on a timer as well, for what a
// reconnecting Listener loses.
type tenantWakeups struct {
	src Notifications // nil: nobody is ever woken, watchers poll

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	stop func() // ends the subscription to src; nil while nobody watches
}

func newTenantWakeups(src Notifications) *tenantWakeups {
	return &tenantWakeups{src: src, subs: map[string]map[chan struct{}]struct{}{}}
}

// Subscribe returns a channel that receives a value after events of
// tenantID were written, and the function that ends the subscription.
func (w *tenantWakeups) Subscribe(tenantID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	if w == nil || w.src == nil {
		return ch, func() {}
	}
	w.mu.Lock()
	if w.subs[tenantID] == nil {
		w.subs[tenantID] = map[chan struct{}]struct{}{}
	}
	w.subs[tenantID][ch] = struct{}{}
	if w.stop == nil {
		payloads, stop := w.src.Subscribe(store.ChannelEvents)
		w.stop = stop
		go w.run(payloads)
	}
	w.mu.Unlock()

	var once sync.Once
	return ch, func() { once.Do(func() { w.unsubscribe(tenantID, ch) }) }
}

func (w *tenantWakeups) unsubscribe(tenantID string, ch chan struct{}) {
	w.mu.Lock()
	delete(w.subs[tenantID], ch)
	if len(w.subs[tenantID]) == 0 {
		delete(w.subs, tenantID)
	}
	var stop func()
	if len(w.subs) == 0 {
		stop, w.stop = w.stop, nil
	}
	w.mu.Unlock()
	if stop != nil {
		stop() // closes payloads: run returns
	}
}

func (w *tenantWakeups) run(payloads <-chan string) {
	for tenantID := range payloads {
		w.wake(tenantID)
	}
}

func (w *tenantWakeups) wake(tenantID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs[tenantID] {
		select {
		case ch <- struct{}{}:
		default: // one is pending already
		}
	}
}

// subscribers counts the watchers of tenantID (for tests).
func (w *tenantWakeups) subscribers(tenantID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.subs[tenantID])
}
