package deliver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/webhook"
)

// fakeStore hands out its messages once and keeps the attempts.
type fakeStore struct {
	mu       sync.Mutex
	pending  []store.OutboxMessage
	attempts map[int64]store.Attempt
	released []int64
}

func (f *fakeStore) DeliveryClaim(_ context.Context, _ string, limit, perWebhook int, _ time.Duration, room map[string]int) ([]store.OutboxMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out, rest []store.OutboxMessage
	taken := map[string]int{}
	for _, m := range f.pending {
		key := m.Tenant + "/" + m.Webhook
		n, ok := room[key]
		if !ok {
			n = perWebhook
		}
		if len(out) < limit && taken[key] < n {
			taken[key]++
			out = append(out, m)
		} else {
			rest = append(rest, m)
		}
	}
	f.pending = rest
	return out, nil
}

func (f *fakeStore) DeliveryFinish(_ context.Context, _ string, id int64, a store.Attempt) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[id] = a
	return nil
}

func (f *fakeStore) DeliveryRelease(_ context.Context, _ string, ids []int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, ids...)
	for _, id := range ids {
		f.pending = append(f.pending, store.OutboxMessage{Delivery: webhook.Delivery{ID: id}})
	}
	return nil
}

func (f *fakeStore) attempt(id int64) (store.Attempt, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.attempts[id]
	return a, ok
}

type secrets struct{}

func (secrets) SecretValue(_ context.Context, ns, name, key string) ([]byte, error) {
	if ns != "ty-a" || !strings.HasPrefix(name, webhook.SecretPrefix) || key != webhook.SecretKey {
		return nil, errors.New("no such secret")
	}
	return []byte(secret), nil
}

var secret = webhook.NewSecret()

func start(t *testing.T, st *fakeStore, policy webhook.Policy, perReceiver int) {
	t.Helper()
	d, err := New(Config{ID: "test", Store: st, Policy: policy, PerReceiver: perReceiver, Poll: 20 * time.Millisecond,
		Timeout: 2 * time.Second, Lease: time.Minute,
		Secrets: secrets{},
		Render: Render{
			Job:    func(j job.Job) (json.RawMessage, error) { return json.Marshal(map[string]string{"name": j.Name}) },
			Tenant: func(t tenant.Tenant) (json.RawMessage, error) { return json.Marshal(t.ID) },
		}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func msg(id int64, url string) store.OutboxMessage {
	return store.OutboxMessage{
		Delivery: webhook.Delivery{ID: id, Tenant: "a", Webhook: "h", MessageID: "m" + string(rune('0'+id)),
			Topic: webhook.TopicJobSucceeded, Subject: "train", EventTime: time.Unix(1700000000, 0)},
		URL: url, SecretVersion: 1, Namespace: "ty-a", Job: &job.Job{Name: "train"},
	}
}

// verify checks a request as the Standard Webhooks specification says,
// written here from the specification rather than with the signer.
func verify(t *testing.T, r *http.Request, body []byte) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.Header.Get("webhook-id") + "." + r.Header.Get("webhook-timestamp") + "." + string(body)))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	found := false
	for _, sig := range strings.Fields(r.Header.Get("webhook-signature")) {
		v, s, _ := strings.Cut(sig, ",")
		found = found || (v == "v1" && hmac.Equal([]byte(s), []byte(want)))
	}
	require.True(t, found, "signature %q", r.Header.Get("webhook-signature"))
}

func TestDeliverSignsACloudEvent(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		verify(t, r, body)
		require.Equal(t, webhook.ContentType, r.Header.Get("Content-Type"))
		got.Store(body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	st := &fakeStore{pending: []store.OutboxMessage{msg(1, srv.URL)}, attempts: map[int64]store.Attempt{}}
	start(t, st, webhook.Policy{AllowLoopback: true}, 4)
	require.Eventually(t, func() bool { _, ok := st.attempt(1); return ok }, 5*time.Second, 10*time.Millisecond)
	a, _ := st.attempt(1)
	require.Equal(t, store.Delivered, a.Outcome)
	require.Equal(t, 204, a.StatusCode)
	var ce map[string]any
	require.NoError(t, json.Unmarshal(got.Load().([]byte), &ce))
	require.Equal(t, "1.0", ce["specversion"])
	require.Equal(t, "dev.trainyard.job.succeeded", ce["type"])
	require.Equal(t, "train", ce["subject"])
	require.Equal(t, "m1", ce["id"])
	require.Equal(t, "trainyard:/tenants/a", ce["source"])
	require.Equal(t, map[string]any{"name": "train"}, ce["data"])
}

func TestDeliverOutcomes(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/gone", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { t.Error("a redirect was followed") })
	mux.HandleFunc("/busy", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "600")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	st := &fakeStore{pending: []store.OutboxMessage{msg(1, srv.URL+"/gone"), msg(2, srv.URL+"/redirect"), msg(3, srv.URL+"/busy")},
		attempts: map[int64]store.Attempt{}}
	start(t, st, webhook.Policy{AllowLoopback: true}, 4)
	require.Eventually(t, func() bool { st.mu.Lock(); defer st.mu.Unlock(); return len(st.attempts) == 3 }, 5*time.Second, 10*time.Millisecond)
	a, _ := st.attempt(1)
	require.Equal(t, store.Gone, a.Outcome)
	a, _ = st.attempt(2)
	require.Equal(t, store.Retry, a.Outcome)
	require.Equal(t, 302, a.StatusCode)
	a, _ = st.attempt(3)
	require.Equal(t, store.Retry, a.Outcome)
	require.GreaterOrEqual(t, a.RetryAfter, 10*time.Minute)
}

func TestDeliverRefusesDisallowedAddresses(t *testing.T) {
	hit := atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit.Store(true) }))
	defer srv.Close()
	st := &fakeStore{pending: []store.OutboxMessage{msg(1, srv.URL)}, attempts: map[int64]store.Attempt{}}
	start(t, st, webhook.Policy{}, 4) // loopback not allowed
	require.Eventually(t, func() bool { _, ok := st.attempt(1); return ok }, 5*time.Second, 10*time.Millisecond)
	a, _ := st.attempt(1)
	require.Equal(t, store.Retry, a.Outcome)
	require.Contains(t, a.Error, "not allowed")
	require.False(t, hit.Load())
}

// A receiver that hangs holds its own slots only.
func TestSlowReceiverDoesNotDelayOthers(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer fast.Close()
	var pending []store.OutboxMessage
	for i := range int64(6) {
		m := msg(i+1, slow.URL)
		m.Webhook = "slow"
		pending = append(pending, m)
	}
	pending = append(pending, msg(9, fast.URL))
	st := &fakeStore{pending: pending, attempts: map[int64]store.Attempt{}}
	start(t, st, webhook.Policy{AllowLoopback: true}, 2)
	require.Eventually(t, func() bool { a, ok := st.attempt(9); return ok && a.Outcome == store.Delivered }, time.Second, 5*time.Millisecond)
}
