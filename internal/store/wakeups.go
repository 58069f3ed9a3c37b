package store

import (
	"sync"
	"time"
)

// Subscriber is what Wakeups listens to; *Listener implements it.
type Subscriber interface {
	Subscribe(channel string) (<-chan string, func())
}

// Wakeups fans one notification channel out by payload, a tenant id:
// ChannelEvents wakes the watchers of a tenant's jobs, ChannelTenants the
// streams whose access depends on the tenant's members and state. One
// subscription to the Listener (taken while anybody listens, dropped when
// the last one leaves) is read by one goroutine that wakes just the
// subscribers of the payload's tenant, so a busy tenant costs other
// tenants' subscribers nothing, and the Listener's per-subscription buffer
// is drained at once instead of filling up behind a subscriber that is busy
// reading Postgres.
//
// A wake-up is a hint: each subscriber's channel holds one pending wake-up,
// and more coalesce into it. Subscribers poll on a timer as well, for what
// a reconnecting Listener loses.
type Wakeups struct {
	src     Subscriber // nil: nobody is ever woken, subscribers poll
	channel string

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	last map[string]time.Time // when each subscribed tenant's last notification arrived
	stop func()               // ends the subscription to src; nil while nobody listens
}

// NewWakeups returns the fan-out of channel on src. src may be nil.
func NewWakeups(src Subscriber, channel string) *Wakeups {
	return &Wakeups{src: src, channel: channel, subs: map[string]map[chan struct{}]struct{}{}, last: map[string]time.Time{}}
}

// Subscribe returns a channel that receives a value after a notification
// for tenantID, and the function that ends the subscription.
func (w *Wakeups) Subscribe(tenantID string) (<-chan struct{}, func()) {
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
		payloads, stop := w.src.Subscribe(w.channel)
		w.stop = stop
		go w.run(payloads)
	}
	w.mu.Unlock()

	var once sync.Once
	return ch, func() { once.Do(func() { w.unsubscribe(tenantID, ch) }) }
}

func (w *Wakeups) unsubscribe(tenantID string, ch chan struct{}) {
	w.mu.Lock()
	delete(w.subs[tenantID], ch)
	if len(w.subs[tenantID]) == 0 {
		delete(w.subs, tenantID)
		delete(w.last, tenantID)
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

func (w *Wakeups) run(payloads <-chan string) {
	for tenantID := range payloads {
		w.wake(tenantID)
	}
}

func (w *Wakeups) wake(tenantID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.subs[tenantID]) == 0 {
		return
	}
	w.last[tenantID] = time.Now()
	for ch := range w.subs[tenantID] {
		select {
		case ch <- struct{}{}:
		default: // one is pending already
		}
	}
}

// Last returns when the last notification for tenantID arrived while it
// had subscribers (zero if none did). It is set before they are woken: a
// subscriber woken by a notification that reads Last afterwards gets that
// notification's time or a later one's, and a read that starts after it
// sees what the notification announced (NOTIFY leaves after commit).
// Watchers woken together share one read this way (api's tailReads).
func (w *Wakeups) Last(tenantID string) time.Time {
	if w == nil {
		return time.Time{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last[tenantID]
}
