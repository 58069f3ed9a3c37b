package auth

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/auth/oidctest"
)

// A fake clock for expiry: tokens are signed with real times, the
// authenticator reads this one.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestTokenCacheVerifiesOnce(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	o := newTestOIDC(t, iss)
	tok := iss.TokenFor("alice", "ml-team")
	for range 5 {
		p, err := o.Authenticate(context.Background(), tok)
		require.NoError(t, err)
		require.Equal(t, "alice", p.Subject)
		require.Equal(t, []string{"ml-team"}, p.Groups)
		p.Groups[0] = "mutated" // a caller's copy, not the cache's
	}
	require.EqualValues(t, 1, o.verified.Load())

	// Another token is its own entry; bad tokens are never remembered.
	_, err := o.Authenticate(context.Background(), iss.TokenFor("bob"))
	require.NoError(t, err)
	bad := iss.BadSignatureToken(oidctest.Claims{Subject: "eve"})
	for range 3 {
		_, err = o.Authenticate(context.Background(), bad)
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
	require.EqualValues(t, 5, o.verified.Load())
}

func TestTokenCacheRefusesExpiredAtOnce(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	clock := &testClock{now: time.Now()}
	o := newTestOIDC(t, iss, func(c *OIDCConfig) { c.Now = clock.Now })
	tok := iss.Token(oidctest.Claims{Subject: "alice", Expiry: clock.Now().Add(time.Minute)})
	_, err := o.Authenticate(context.Background(), tok)
	require.NoError(t, err)
	_, err = o.Authenticate(context.Background(), tok)
	require.NoError(t, err)
	require.EqualValues(t, 1, o.verified.Load())

	clock.Add(2 * time.Minute)
	_, err = o.Authenticate(context.Background(), tok)
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.ErrorContains(t, err, "expired")
}

// When the issuer replaces its key, a cached token signed by the old one is
// refused as soon as the key set is fetched again (here, because a token of
// the new key asks for it), not when its entry ages out.
func TestTokenCacheRefusesRekeyedAtOnce(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	o := newTestOIDC(t, iss, func(c *OIDCConfig) { c.KeyRefreshInterval = time.Nanosecond })
	old := iss.TokenFor("alice")
	_, err := o.Authenticate(context.Background(), old)
	require.NoError(t, err)

	iss.ReplaceKey()
	_, err = o.Authenticate(context.Background(), iss.TokenFor("bob"))
	require.NoError(t, err, "a token of the new key fetches the new key set")
	_, err = o.Authenticate(context.Background(), old)
	require.ErrorIs(t, err, ErrUnauthenticated)
}

func TestTokenCacheOff(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	o := newTestOIDC(t, iss, func(c *OIDCConfig) { c.TokenCacheSize = -1 })
	tok := iss.TokenFor("alice")
	for range 3 {
		_, err := o.Authenticate(context.Background(), tok)
		require.NoError(t, err)
	}
	require.EqualValues(t, 3, o.verified.Load())
}

func TestTokenCacheIsBounded(t *testing.T) {
	c := newTokenCache(2)
	exp := time.Now().Add(time.Hour)
	for _, tok := range []string{"a", "b", "c"} {
		c.put(tok, 1, Principal{Subject: tok, Expiry: exp})
	}
	_, ok := c.get("a", 1, time.Now())
	require.False(t, ok, "the least recently used entry went")
	p, ok := c.get("c", 1, time.Now())
	require.True(t, ok)
	require.Equal(t, "c", p.Subject)
	_, ok = c.get("c", 2, time.Now())
	require.False(t, ok, "another key set version is a miss")
}
