// Package storetest holds test doubles of the store's parts, for the tests
// of the packages built on them.
package storetest

import "sync"

// Notifications is an in-memory store.Subscriber: what a Listener would be,
// with Notify in place of Postgres's NOTIFY. Payloads are delivered to every
// subscription of any channel (the store's channels carry tenant ids).
type Notifications struct {
	mu    sync.Mutex
	subs  map[chan string]bool
	calls int
}

// Subscribe is store.Subscriber's.
func (f *Notifications) Subscribe(channel string) (<-chan string, func()) {
	ch := make(chan string, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[chan string]bool{}
	}
	f.subs[ch] = true
	f.calls++
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.subs, ch)
			close(ch)
		})
	}
}

// Notify delivers payload to every open subscription.
func (f *Notifications) Notify(payload string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		ch <- payload
	}
}

// Open counts the open subscriptions.
func (f *Notifications) Open() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// Subscriptions counts the Subscribe calls so far.
func (f *Notifications) Subscriptions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}
