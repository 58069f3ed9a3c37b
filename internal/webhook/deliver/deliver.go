// Package deliver sends what the webhook outbox holds: a Deliverer claims
// due messages (store.DeliveryClaim: leased, SKIP LOCKED, only the first
// pending message of each job per webhook), posts each as a signed
// CloudEvent and records the attempt (store.DeliveryFinish). Any number of
// Deliverers share the outbox; each runs in a worker process.
//
//	wake (NOTIFY on events or webhooks, or the poll) ─► claim up to the free slots
//	     ─► per message: a slot of its receiver (host:port), else hand it back
//	     ─► sign, POST (the Policy's dialer, timeouts, no redirects) ─► finish
//
// At least once, and only with the same webhook-id: a message is leased
// while it is sent (Lease, longer than Timeout); a Deliverer that dies
// leaves it to run out and another sends it again. Its attempt is written
// only by its holder: one whose lease ran out loses the write
// (ErrLeaseLost), and the message's next sender records its own.
//
// A slow receiver holds at most PerReceiver of the Concurrency slots, so
// the others' messages keep going.
package deliver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/webhook"
)

// Store is what a Deliverer needs of internal/store.
type Store interface {
	DeliveryClaim(ctx context.Context, holder string, limit, perWebhook int, lease time.Duration, room map[string]int) ([]store.OutboxMessage, error)
	DeliveryFinish(ctx context.Context, holder string, id int64, a store.Attempt) error
	DeliveryRelease(ctx context.Context, holder string, ids []int64) error
}

// SecretSource reads a webhook's signing secret from its Kubernetes Secret.
type SecretSource interface {
	SecretValue(ctx context.Context, namespace, name, key string) ([]byte, error)
}

// Render turns what a message carries into its CloudEvent's data: the job
// or the tenant as the API returns it (internal/api's JSON).
type Render struct {
	Job    func(job.Job) (json.RawMessage, error)
	Tenant func(tenant.Tenant) (json.RawMessage, error)
}

// Defaults of Config.
const (
	DefaultConcurrency = 64
	DefaultPerReceiver = 4
	DefaultTimeout     = 10 * time.Second
	DefaultPoll        = time.Second
	DefaultLease       = time.Minute
)

// Config configures a Deliverer.
type Config struct {
	// ID names this Deliverer in its leases; unique among those running.
	ID      string
	Store   Store
	Secrets SecretSource
	Render  Render
	// Policy says where messages may go; checked at every connection.
	Policy webhook.Policy
	// Wake, when set, is subscribed to on store.ChannelEvents and
	// store.ChannelWebhooks (a *store.Listener).
	Wake store.Subscriber
	// SourcePrefix starts each CloudEvent's source (a URI reference such
	// as "https://trainyard.example.com"). Defaults to "trainyard:".
	SourcePrefix string
	// Concurrency is the most messages in flight. Defaults to 64.
	Concurrency int
	// PerReceiver is the most messages in flight to one host:port. Defaults to 4.
	PerReceiver int
	// Timeout bounds one attempt (connect, TLS, request, response headers
	// and the first 4 KiB of its body). Defaults to 10s.
	Timeout time.Duration
	// Poll is how often the outbox is read without a wake-up (jittered).
	// Defaults to 1s.
	Poll time.Duration
	// Lease is how long a claimed message is this Deliverer's; it must
	// exceed Timeout. Defaults to 1m.
	Lease    time.Duration
	Registry prometheus.Registerer
	Logger   *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.PerReceiver <= 0 {
		c.PerReceiver = DefaultPerReceiver
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.SourcePrefix == "" {
		c.SourcePrefix = "trainyard:"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Deliverer sends the outbox's messages.
type Deliverer struct {
	cfg     Config
	client  *http.Client
	metrics *metrics
	done    chan struct{} // a send finished: a slot is free

	mu       sync.Mutex
	inFlight int
	// receivers counts messages in flight per host:port; webhooks the
	// webhooks ("tenant/id") in flight per receiver, which claims ask for
	// no more than the receiver's room.
	receivers map[string]int
	webhooks  map[string]map[string]int
	secrets   map[secretKey][]byte
}

type secretKey struct {
	namespace, name string
	version         int64
}

// New returns a Deliverer.
func New(cfg Config) (*Deliverer, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.ID == "" || cfg.Store == nil || cfg.Secrets == nil || cfg.Render.Job == nil || cfg.Render.Tenant == nil:
		return nil, errors.New("deliver: ID, Store, Secrets and Render are required")
	case cfg.Lease <= cfg.Timeout:
		return nil, fmt.Errorf("deliver: the lease (%s) must be longer than the timeout (%s)", cfg.Lease, cfg.Timeout)
	}
	transport := &http.Transport{
		Proxy:                 nil, // never a proxy from the environment: the Policy checks what is dialed
		DialContext:           cfg.Policy.DialContext(cfg.Timeout),
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		MaxConnsPerHost:       cfg.PerReceiver,
		MaxIdleConnsPerHost:   cfg.PerReceiver,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	d := &Deliverer{
		cfg: cfg,
		client: &http.Client{Transport: transport, Timeout: cfg.Timeout,
			// A redirect is an answer, not followed: it could lead anywhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		metrics:   newMetrics(cfg.Registry),
		done:      make(chan struct{}, 1),
		receivers: map[string]int{},
		webhooks:  map[string]map[string]int{},
		secrets:   map[secretKey][]byte{},
	}
	return d, nil
}

// Run delivers until ctx ends, then waits for the sends in flight.
func (d *Deliverer) Run(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	if d.cfg.Wake != nil {
		for _, ch := range []string{store.ChannelEvents, store.ChannelWebhooks} {
			payloads, stop := d.cfg.Wake.Subscribe(ch)
			defer stop()
			go func() {
				for range payloads {
					select {
					case wake <- struct{}{}:
					default:
					}
				}
			}()
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		full, err := d.dispatch(ctx, &wg)
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn("webhook outbox: claim failed", "error", err)
		}
		if full && err == nil {
			// As many as there were slots: there may be more.
			select {
			case <-ctx.Done():
				return nil
			case <-d.done:
			}
			continue
		}
		poll := d.cfg.Poll/2 + rand.N(d.cfg.Poll/2+1)
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-d.done:
		case <-time.After(poll):
		}
	}
}

// dispatch claims what the free slots allow and starts sending it; full
// says it claimed as many as it asked for.
func (d *Deliverer) dispatch(ctx context.Context, wg *sync.WaitGroup) (full bool, err error) {
	d.mu.Lock()
	free := d.cfg.Concurrency - d.inFlight
	// Each webhook in flight may take what its receiver has room for;
	// the claim asks no more of it, so a busy receiver costs no claims
	// handed back. Two webhooks at one receiver may together bring more
	// than its room: those are handed back below.
	room := map[string]int{}
	for recv, n := range d.receivers {
		for w := range d.webhooks[recv] {
			room[w] = d.cfg.PerReceiver - n
		}
	}
	d.mu.Unlock()
	if free <= 0 {
		return true, nil
	}
	msgs, err := d.cfg.Store.DeliveryClaim(ctx, d.cfg.ID, free, d.cfg.PerReceiver, d.cfg.Lease, room)
	if err != nil {
		return false, err
	}
	var busy []int64
	for _, m := range msgs {
		recv := receiver(m.URL)
		key := m.Tenant + "/" + m.Webhook
		d.mu.Lock()
		if d.receivers[recv] >= d.cfg.PerReceiver {
			d.mu.Unlock()
			busy = append(busy, m.ID)
			continue
		}
		d.inFlight++
		d.receivers[recv]++
		if d.webhooks[recv] == nil {
			d.webhooks[recv] = map[string]int{}
		}
		d.webhooks[recv][key]++
		d.mu.Unlock()
		wg.Go(func() {
			defer d.release(recv, key)
			d.deliver(context.WithoutCancel(ctx), m)
		})
	}
	if len(busy) > 0 {
		if err := d.cfg.Store.DeliveryRelease(ctx, d.cfg.ID, busy); err != nil {
			d.cfg.Logger.Warn("webhook outbox: release failed (the leases run out instead)", "error", err)
		}
	}
	return len(msgs) == free, nil
}

func (d *Deliverer) release(recv, key string) {
	d.mu.Lock()
	d.inFlight--
	if d.receivers[recv]--; d.receivers[recv] == 0 {
		delete(d.receivers, recv)
	}
	if d.webhooks[recv][key]--; d.webhooks[recv][key] == 0 {
		delete(d.webhooks[recv], key)
		if len(d.webhooks[recv]) == 0 {
			delete(d.webhooks, recv)
		}
	}
	d.mu.Unlock()
	select {
	case d.done <- struct{}{}:
	default:
	}
}

// receiver is what PerReceiver counts by: the URL's host and port.
func receiver(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Hostname() + ":" + port
}

// deliver makes one attempt of m and records it.
func (d *Deliverer) deliver(ctx context.Context, m store.OutboxMessage) {
	a := d.attempt(ctx, m)
	d.metrics.observe(m.Topic, a)
	log := d.cfg.Logger.With("tenant", m.Tenant, "webhook", m.Webhook, "delivery", m.ID, "webhookId", m.MessageID)
	if a.Outcome != store.Delivered {
		log.Info("webhook delivery failed", "status", a.StatusCode, "error", a.Error, "retryIn", a.RetryAfter.String(), "attempt", m.Attempts+1)
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := d.cfg.Store.DeliveryFinish(fctx, d.cfg.ID, m.ID, a); err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			log.Info("webhook delivery: lease lost; its next sender records it", "error", err)
			return
		}
		log.Warn("webhook delivery: recording the attempt failed; it is sent again when its lease runs out", "error", err)
	}
}

func (d *Deliverer) attempt(ctx context.Context, m store.OutboxMessage) store.Attempt {
	retry := func(code int, format string, args ...any) store.Attempt {
		return store.Attempt{Outcome: store.Retry, StatusCode: code, Error: fmt.Sprintf(format, args...), RetryAfter: webhook.Backoff(m.Attempts + 1)}
	}
	body, err := d.body(m)
	if err != nil {
		return retry(0, "rendering the message: %v", err)
	}
	key, err := d.secret(ctx, m)
	if err != nil {
		return retry(0, "reading the signing secret: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(body))
	if err != nil {
		return retry(0, "building the request: %v", err)
	}
	req.Header.Set("Content-Type", webhook.ContentType)
	req.Header.Set("User-Agent", "Trainyard-Webhooks/1")
	webhook.SetHeaders(req.Header, key, m.MessageID, time.Now(), body)
	start := time.Now()
	resp, err := d.client.Do(req)
	latency := time.Since(start)
	if err != nil {
		a := retry(0, "%v", err)
		a.Latency = latency
		return a
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return store.Attempt{Outcome: store.Delivered, StatusCode: code, Latency: latency}
	case code == http.StatusGone:
		return store.Attempt{Outcome: store.Gone, StatusCode: code, Latency: latency, Error: "410 Gone: the webhook is disabled",
			RetryAfter: webhook.Backoff(m.Attempts + 1)}
	default:
		a := retry(code, "the receiver answered %s", resp.Status)
		a.Latency = latency
		// A receiver asking for a pause gets it, up to the longest backoff.
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && (code == 429 || code == 503) {
			a.RetryAfter = max(a.RetryAfter, min(time.Duration(s)*time.Second, webhook.BackoffMax))
		}
		return a
	}
}

// body is m's CloudEvent as JSON.
func (d *Deliverer) body(m store.OutboxMessage) ([]byte, error) {
	var (
		data json.RawMessage
		err  error
	)
	switch {
	case m.Job != nil:
		data, err = d.cfg.Render.Job(*m.Job)
	case m.TenantSnapshot != nil:
		data, err = d.cfg.Render.Tenant(*m.TenantSnapshot)
	default:
		data, err = json.Marshal(map[string]string{"webhook": "tenants/" + m.Tenant + "/webhooks/" + m.Webhook})
	}
	if err != nil {
		return nil, err
	}
	ce := webhook.NewCloudEvent(m.Topic, webhook.Source(d.cfg.SourcePrefix, m.Tenant), m.Subject, m.MessageID, m.EventTime, data)
	return json.Marshal(ce)
}

// secret returns m's webhook's signing key, cached by its version.
func (d *Deliverer) secret(ctx context.Context, m store.OutboxMessage) ([]byte, error) {
	k := secretKey{m.Namespace, webhook.SecretName(m.Webhook), m.SecretVersion}
	d.mu.Lock()
	key, ok := d.secrets[k]
	d.mu.Unlock()
	if ok {
		return key, nil
	}
	raw, err := d.cfg.Secrets.SecretValue(ctx, k.namespace, k.name, webhook.SecretKey)
	if err != nil {
		return nil, err
	}
	key, err = webhook.DecodeSecret(string(raw))
	if err != nil {
		return nil, fmt.Errorf("the Secret %s/%s: %w", k.namespace, k.name, err)
	}
	d.mu.Lock()
	if len(d.secrets) > 10000 {
		clear(d.secrets)
	}
	d.secrets[k] = key
	d.mu.Unlock()
	return key, nil
}
