package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// keySet is the issuer's JWKS, cached, used by go-oidc's verifier as its
// oidc.KeySet. go-oidc's own RemoteKeySet refetches the JWKS on every
// signature that does not verify, so a stream of forged tokens becomes a
// stream of requests to the identity provider, and a fetch failure looks
// like a bad token. This one refetches at most once per minInterval and
// reports fetch failures through the request's fetchProbe, so an issuer
// outage is UNAVAILABLE, not UNAUTHENTICATED.
type keySet struct {
	url         string
	client      *http.Client
	minInterval time.Duration

	fetching chan struct{} // a one-slot semaphore: one fetch at a time
	fetches  atomic.Uint64 // successful fetches: the keys' version

	mu        sync.RWMutex
	keys      []jose.JSONWebKey
	fetchedAt time.Time // of the latest attempt, successful or not
	fetchErr  error     // of the latest attempt
}

const (
	maxJWKSBytes = 1 << 20
	fetchTimeout = 30 * time.Second
)

func newKeySet(url string, client *http.Client, minInterval time.Duration) *keySet {
	return &keySet{url: url, client: client, minInterval: minInterval, fetching: make(chan struct{}, 1)}
}

// VerifySignature implements oidc.KeySet. go-oidc has already checked the
// algorithm against signingAlgs; it is checked again here because this
// method parses the token on its own.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	algs := make([]jose.SignatureAlgorithm, len(signingAlgs))
	for i, a := range signingAlgs {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	jws, err := jose.ParseSigned(raw, algs)
	if err != nil {
		return nil, fmt.Errorf("malformed jws: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("want exactly one signature, got %d", len(jws.Signatures))
	}
	if payload, ok := verifyWith(jws, k.cached()); ok {
		return payload, nil
	}
	// An unknown key id is how rotation shows up: look again, unless we
	// looked very recently.
	keys, err := k.refresh(ctx)
	if err != nil {
		markFetchFailed(ctx)
		return nil, err
	}
	if payload, ok := verifyWith(jws, keys); ok {
		return payload, nil
	}
	return nil, errors.New("no key of the issuer verifies the signature")
}

func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey) ([]byte, bool) {
	hdr := jws.Signatures[0].Header
	for i := range keys {
		key := &keys[i]
		if hdr.KeyID != "" && key.KeyID != hdr.KeyID {
			continue
		}
		if key.Algorithm != "" && key.Algorithm != hdr.Algorithm {
			continue
		}
		if payload, err := jws.Verify(key); err == nil {
			return payload, true
		}
	}
	return nil, false
}

func (k *keySet) cached() []jose.JSONWebKey {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.keys
}

// refresh fetches the JWKS unless an attempt finished less than
// minInterval ago, in which case that attempt's outcome is returned.
func (k *keySet) refresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	select {
	case k.fetching <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-k.fetching }()

	k.mu.RLock()
	keys, at, ferr := k.keys, k.fetchedAt, k.fetchErr
	k.mu.RUnlock()
	if !at.IsZero() && time.Since(at) < k.minInterval {
		return keys, ferr
	}

	// One caller's cancellation must not fail the fetch for the others
	// waiting on it, nor open a cool-down with a spurious error.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	fresh, err := k.fetch(fctx)

	k.mu.Lock()
	defer k.mu.Unlock()
	k.fetchedAt = time.Now()
	k.fetchErr = err
	if err != nil {
		return nil, err
	}
	k.keys = fresh
	k.fetches.Add(1)
	return fresh, nil
}

// version changes whenever the keys may have: on every successful fetch.
func (k *keySet) version() uint64 { return k.fetches.Load() }

func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", k.url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", k.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s: %s", k.url, resp.Status)
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("get %s: key set larger than %d bytes", k.url, maxJWKSBytes)
	}
	return parseJWKS(body)
}

// parseJWKS keeps the public signing keys and skips the rest (encryption
// keys, private or symmetric keys, key types go-jose does not know) as
// RFC 7517 §5 asks, instead of failing the whole set.
func parseJWKS(body []byte) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("decoding key set: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if err := json.Unmarshal(raw, &key); err != nil {
			continue
		}
		if !key.Valid() || !key.IsPublic() || key.Use == "enc" {
			continue
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, errors.New("key set holds no usable public signing key")
	}
	return keys, nil
}

type fetchProbeKey struct{}

// fetchProbe records, for one Authenticate call, that the key set could
// not be fetched. go-oidc flattens KeySet errors into strings, so the
// signal travels in the context instead.
type fetchProbe struct{ failed bool }

func withFetchProbe(ctx context.Context) (context.Context, *fetchProbe) {
	p := &fetchProbe{}
	return context.WithValue(ctx, fetchProbeKey{}, p), p
}

func markFetchFailed(ctx context.Context) {
	if p, ok := ctx.Value(fetchProbeKey{}).(*fetchProbe); ok {
		p.failed = true
	}
}
