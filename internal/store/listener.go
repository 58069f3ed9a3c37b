package store

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// AdmittedPayload is ChannelJobs' payload for jobs of tenantID admitted
// to cluster.
func AdmittedPayload(tenantID, cluster string) string { return tenantID + "/@" + cluster }

// NOTIFY channels. Payloads are wake-up hints, never the only signal:
// readers re-read Postgres, and poll on a timer in case a hint was lost.
const (
	// ChannelJobs: a job needs a worker's attention. Payload "<tenant>/<uid>",
	// or "<tenant>/@<cluster>" when jobs of the tenant became claimable in
	// the cluster (admitted: nobody owns them yet, so one wake-up of that
	// cluster's claimers serves them all; AdmittedPayload). A payload
	// "<tenant>/", from a scheduler before clusters were named here, wakes
	// every claimer.
	ChannelJobs = "trainyard_jobs"
	// ChannelEvents: new events were written, or an experiment was
	// created (for the experiments controller). Payload: the tenant id.
	ChannelEvents = "trainyard_events"
	// ChannelTenants: a tenant or its secrets changed. Payload: the tenant id.
	ChannelTenants = "trainyard_tenants"
	// ChannelSchedule: a job now waits for the scheduler (submitted or
	// requeued). Payload: the tenant id.
	ChannelSchedule = "trainyard_schedule"
	// ChannelFreed: something that matters only to jobs already waiting
	// changed (a job finished or was cancelled while queued; a quota or
	// policy). An idle scheduler, with nothing waiting, ignores it.
	// Payload: the tenant id.
	ChannelFreed = "trainyard_freed"
	// ChannelWebhooks: a webhook message is due that no job event announced
	// (a ping, a redelivery, a quota change, a webhook enabled again); job
	// events wake deliverers on ChannelEvents. Payload: the tenant id.
	ChannelWebhooks = "trainyard_webhooks"
)

// ListenerConfig configures a Listener.
type ListenerConfig struct {
	// Buffer is each subscription's channel capacity. When it is full, new
	// payloads are dropped (coalesced into the wake-ups already pending).
	// Defaults to 64.
	Buffer int
	// MinBackoff is the first wait before reconnecting. Defaults to 100ms.
	MinBackoff time.Duration
	// MaxBackoff caps the wait between reconnects. Defaults to 10s.
	MaxBackoff time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to their defaults.
func (c ListenerConfig) WithDefaults() ListenerConfig {
	if c.Buffer <= 0 {
		c.Buffer = 64
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 10 * time.Second
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = c.MinBackoff
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Listener holds one dedicated connection that LISTENs on the channels its
// subscribers want and fans notifications out to them. It reconnects with
// backoff; notifications sent while it was disconnected are lost, so
// OnReconnect hooks run after every (re)connection — the first included —
// once all channels are listened to: re-poll there.
type Listener struct {
	connCfg *pgx.ConnConfig
	cfg     ListenerConfig
	wake    chan struct{} // subscriptions changed; capacity 1

	mu        sync.Mutex
	subs      map[string]map[*subscription]struct{}
	listening map[string]bool // channels LISTENed on the current connection
	hooks     []func()
	dropped   map[string]uint64 // payloads not handed to a full subscriber, by channel
}

type subscription struct{ ch chan string }

// NewListener returns a Listener for databaseURL. Call Run to start it.
func NewListener(databaseURL string, cfg ListenerConfig) (*Listener, error) {
	connCfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("store: listener: parse database URL: %v", err)
	}
	if connCfg.RuntimeParams == nil {
		connCfg.RuntimeParams = map[string]string{}
	}
	connCfg.RuntimeParams["application_name"] = "trainyard-listener"
	return &Listener{
		connCfg:   connCfg,
		cfg:       cfg.WithDefaults(),
		wake:      make(chan struct{}, 1),
		subs:      map[string]map[*subscription]struct{}{},
		listening: map[string]bool{},
		dropped:   map[string]uint64{},
	}, nil
}

// Subscribe returns a channel of payloads sent on channel, and a function
// that ends the subscription and closes it. It does not wait for LISTEN;
// see Listening and OnReconnect.
func (l *Listener) Subscribe(channel string) (<-chan string, func()) {
	sub := &subscription{ch: make(chan string, l.cfg.Buffer)}
	l.mu.Lock()
	if l.subs[channel] == nil {
		l.subs[channel] = map[*subscription]struct{}{}
	}
	l.subs[channel][sub] = struct{}{}
	l.mu.Unlock()
	l.poke()

	var once sync.Once
	return sub.ch, func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.subs[channel], sub)
			if len(l.subs[channel]) == 0 {
				delete(l.subs, channel)
			}
			close(sub.ch)
			l.mu.Unlock()
			l.poke()
		})
	}
}

// OnReconnect registers fn to run (in its own goroutine) after every
// successful connection, once every subscribed channel is listened to.
func (l *Listener) OnReconnect(fn func()) {
	l.mu.Lock()
	l.hooks = append(l.hooks, fn)
	l.mu.Unlock()
}

// Listening reports whether channel is being listened to right now.
func (l *Listener) Listening(channel string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.listening[channel]
}

func (l *Listener) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run connects, listens and dispatches until ctx is done; then it returns nil.
func (l *Listener) Run(ctx context.Context) error {
	backoff := l.cfg.MinBackoff
	for {
		conn, err := pgx.ConnectConfig(ctx, l.connCfg)
		if err == nil {
			var listened bool
			listened, err = l.serve(ctx, conn)
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(closeCtx)
			cancel()
			l.setListening(nil)
			if listened {
				backoff = l.cfg.MinBackoff
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		l.cfg.Logger.Warn("notification listener disconnected; reconnecting", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		backoff = min(2*backoff, l.cfg.MaxBackoff)
	}
}

// serve listens on conn until it fails or ctx ends. listened reports whether
// the connection got as far as listening.
func (l *Listener) serve(ctx context.Context, conn *pgx.Conn) (listened bool, err error) {
	current := map[string]bool{}
	if err := l.sync(ctx, conn, current); err != nil {
		return false, err
	}
	l.mu.Lock()
	hooks := append([]func(){}, l.hooks...)
	l.mu.Unlock()
	for _, fn := range hooks {
		go fn()
	}
	for {
		// Wait for a notification; a change of subscriptions interrupts the
		// wait so that the connection can (UN)LISTEN.
		waitCtx, cancel := context.WithCancel(ctx)
		woken, done := false, make(chan struct{})
		go func() {
			defer close(done)
			select {
			case <-l.wake:
				woken = true
				cancel()
			case <-waitCtx.Done():
			}
		}()
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		<-done
		switch {
		case err == nil:
			l.dispatch(n.Channel, n.Payload)
		case ctx.Err() != nil:
			return true, ctx.Err()
		case !woken || conn.IsClosed():
			return true, err
		}
		if woken {
			if err := l.sync(ctx, conn, current); err != nil {
				return true, err
			}
		}
	}
}

// sync makes the connection listen to exactly the subscribed channels.
func (l *Listener) sync(ctx context.Context, conn *pgx.Conn, current map[string]bool) error {
	l.mu.Lock()
	want := make(map[string]bool, len(l.subs))
	for ch := range l.subs {
		want[ch] = true
	}
	l.mu.Unlock()
	for ch := range want {
		if !current[ch] {
			if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
				return err
			}
			current[ch] = true
		}
	}
	for ch := range current {
		if !want[ch] {
			if _, err := conn.Exec(ctx, "UNLISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
				return err
			}
			delete(current, ch)
		}
	}
	l.setListening(current)
	return nil
}

func (l *Listener) setListening(current map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listening = map[string]bool{}
	for ch := range current {
		l.listening[ch] = true
	}
}

// dispatch hands payload to every subscriber of channel without blocking.
func (l *Listener) dispatch(channel, payload string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for sub := range l.subs[channel] {
		select {
		case sub.ch <- payload:
		default: // full: the subscriber has wake-ups pending and will re-read anyway
			l.dropped[channel]++
		}
	}
}

// Dropped returns how many payloads of channel were not handed to a
// subscriber whose buffer was full, so far: a subscriber that keeps state
// a payload would invalidate (the worker's claimed rows) can tell that it
// may have missed one.
func (l *Listener) Dropped(channel string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped[channel]
}
