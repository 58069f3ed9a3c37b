package auth

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/auth/oidctest"
)

func newTestOIDC(t *testing.T, iss *oidctest.Issuer, mutate ...func(*OIDCConfig)) *OIDC {
	t.Helper()
	cfg := OIDCConfig{
		Issuer:     iss.URL(),
		Audience:   oidctest.DefaultAudience,
		AdminGroup: "platform-admins",
		Logger:     discardLogger(),
	}
	for _, m := range mutate {
		m(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	o, err := NewOIDC(ctx, cfg)
	require.NoError(t, err)
	return o
}

func TestOIDCAuthenticate(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	o := newTestOIDC(t, iss)
	require.NoError(t, o.Ready())

	custom := newTestOIDC(t, iss, func(c *OIDCConfig) { c.GroupsClaim = "roles" })
	nested := newTestOIDC(t, iss, func(c *OIDCConfig) { c.GroupsClaim = "realm_access.roles" })
	alice := oidctest.Claims{Subject: "alice", Email: "alice@example.com"}

	cases := []struct {
		name  string
		authn *OIDC
		token string
		want  Principal // zero: rejected
		// reason must appear in the (logged) error of a rejection, so each
		// case fails for the reason it is about.
		reason string
	}{
		{"valid", o, iss.Token(alice), Principal{Subject: "alice", Email: "alice@example.com"}, ""},
		{"groups as list", o, iss.TokenFor("bob", "ml", "data"), Principal{Subject: "bob", Groups: []string{"ml", "data"}}, ""},
		{"groups as one string", o, iss.Token(oidctest.Claims{Subject: "bob", Extra: map[string]any{"groups": "ml"}}), Principal{Subject: "bob", Groups: []string{"ml"}}, ""},
		{"empty groups dropped", o, iss.TokenFor("bob", "", "ml"), Principal{Subject: "bob", Groups: []string{"ml"}}, ""},
		{"groups null", o, iss.Token(oidctest.Claims{Subject: "bob", Extra: map[string]any{"groups": nil}}), Principal{Subject: "bob"}, ""},
		{"admin group", o, iss.TokenFor("root", "ml", "platform-admins"), Principal{Subject: "root", Groups: []string{"ml", "platform-admins"}, PlatformAdmin: true}, ""},
		{"admin group must match exactly", o, iss.TokenFor("eve", "Platform-Admins"), Principal{Subject: "eve", Groups: []string{"Platform-Admins"}}, ""},
		{"custom claim", custom, iss.Token(oidctest.Claims{Subject: "bob", GroupsClaim: "roles", Groups: []string{"ml"}}), Principal{Subject: "bob", Groups: []string{"ml"}}, ""},
		{"custom claim ignores groups", custom, iss.TokenFor("bob", "platform-admins"), Principal{Subject: "bob"}, ""},
		{"nested claim", nested, iss.Token(oidctest.Claims{Subject: "bob", Extra: map[string]any{"realm_access": map[string]any{"roles": []string{"ml"}}}}), Principal{Subject: "bob", Groups: []string{"ml"}}, ""},
		{"unverified email dropped", o, iss.Token(oidctest.Claims{Subject: "bob", Email: "ceo@example.com", Extra: map[string]any{"email_verified": false}}), Principal{Subject: "bob"}, ""},
		{"nbf within leeway", o, iss.Token(oidctest.Claims{Subject: "bob", NotBefore: time.Now().Add(time.Minute)}), Principal{Subject: "bob"}, ""},

		{"groups of the wrong type", o, iss.Token(oidctest.Claims{Subject: "bob", Extra: map[string]any{"groups": 7}}), Principal{}, "neither a string nor a list"},
		{"groups list with a number", o, iss.Token(oidctest.Claims{Subject: "bob", Extra: map[string]any{"groups": []any{"ml", 7}}}), Principal{}, "neither a string nor a list"},
		{"wrong audience", o, iss.WrongAudienceToken(alice), Principal{}, "expected audience"},
		{"no audience", o, iss.Token(oidctest.Claims{Subject: "alice", Audience: []string{}}), Principal{}, "expected audience"},
		{"expired", o, iss.ExpiredToken(alice), Principal{}, "token is expired"},
		{"not yet valid", o, iss.Token(oidctest.Claims{Subject: "alice", NotBefore: time.Now().Add(time.Hour)}), Principal{}, "nbf"},
		{"wrong issuer", o, iss.WrongIssuerToken(alice), Principal{}, "different provider"},
		{"bad signature", o, iss.BadSignatureToken(alice), Principal{}, "no key of the issuer verifies the signature"},
		{"unknown key", o, iss.UnknownKeyToken(alice), Principal{}, "no key of the issuer verifies the signature"},
		{"alg none", o, iss.AlgNoneToken(alice), Principal{}, "unexpected signature algorithm \"none\""},
		{"hmac with the public key", o, iss.HMACToken(alice), Principal{}, "unexpected signature algorithm \"HS256\""},
		{"no subject", o, iss.Token(oidctest.Claims{}), Principal{}, "no sub claim"},
		{"NUL in subject", o, iss.Token(oidctest.Claims{Subject: "a\x00b"}), Principal{}, "NUL byte"},
		{"NUL in a group", o, iss.TokenFor("bob", "ml\x00"), Principal{}, "NUL byte"},
		{"empty", o, "", Principal{}, "empty token"},
		{"oversized", o, strings.Repeat("a", maxTokenBytes+1), Principal{}, "exceeds"},
		{"token of another issuer", o, oidctest.NewIssuer(t).Token(alice), Principal{}, "no key of the issuer verifies the signature"},
	}
	for i, m := range oidctest.MalformedTokens() {
		cases = append(cases, struct {
			name   string
			authn  *OIDC
			token  string
			want   Principal
			reason string
		}{"malformed " + string(rune('a'+i)), o, m, Principal{}, "token rejected"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.authn.Authenticate(context.Background(), c.token)
			if c.want.Subject == "" {
				require.ErrorIs(t, err, ErrUnauthenticated)
				require.ErrorContains(t, err, c.reason)
				require.NotErrorIs(t, err, ErrUnavailable)
				require.Equal(t, Principal{}, p)
				if len(c.token) > 20 {
					require.NotContains(t, err.Error(), c.token, "the reason is logged: it must not hold the token")
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.authn.cfg.Issuer, p.Issuer, "the audit log records who vouched")
			require.WithinDuration(t, time.Now().Add(time.Hour), p.Expiry, time.Minute, "streams end when the token does")
			p.Issuer, p.Expiry = "", time.Time{}
			require.Equal(t, c.want, p)
		})
	}
}

func TestOIDCConfig(t *testing.T) {
	for name, cfg := range map[string]OIDCConfig{
		"no issuer":       {Audience: "a"},
		"no audience":     {Issuer: "https://idp.example.com"},
		"plain http":      {Issuer: "http://idp.example.com", Audience: "a"},
		"no host":         {Issuer: "https://", Audience: "a"},
		"unknown scheme":  {Issuer: "ftp://127.0.0.1", Audience: "a"},
		"unparsable url":  {Issuer: "https://[::1", Audience: "a"},
		"http on private": {Issuer: "http://10.0.0.1", Audience: "a"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewOIDC(context.Background(), cfg)
			require.Error(t, err)
		})
	}
}

// The server must come up while the issuer is down, answer UNAVAILABLE,
// and recover on its own.
func TestOIDCDiscoveryRetries(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	iss.SetAvailable(false)
	o := newTestOIDC(t, iss, func(c *OIDCConfig) { c.RetryMin, c.RetryMax = 10*time.Millisecond, 40*time.Millisecond })

	require.ErrorContains(t, o.Ready(), "not discovered yet")
	require.ErrorContains(t, o.Ready(), "503")
	_, err := o.Authenticate(context.Background(), iss.TokenFor("alice"))
	require.ErrorIs(t, err, ErrUnavailable)
	require.NotErrorIs(t, err, ErrUnauthenticated)

	iss.SetAvailable(true)
	require.Eventually(t, func() bool { return o.Ready() == nil }, 5*time.Second, 10*time.Millisecond)
	p, err := o.Authenticate(context.Background(), iss.TokenFor("alice"))
	require.NoError(t, err)
	require.Equal(t, "alice", p.Subject)
}

func TestOIDCDiscoveryStopsWithContext(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	iss.SetAvailable(false)
	ctx, cancel := context.WithCancel(context.Background())
	o, err := NewOIDC(ctx, OIDCConfig{Issuer: iss.URL(), Audience: "a", Logger: discardLogger(), RetryMin: 5 * time.Millisecond, RetryMax: 5 * time.Millisecond})
	require.NoError(t, err)
	cancel()
	select {
	case <-o.retried:
	case <-time.After(5 * time.Second):
		t.Fatal("the background discovery did not end with its context")
	}
	iss.SetAvailable(true) // nothing is left to discover it
	require.Error(t, o.Ready())
}

func TestOIDCIssuerMismatch(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	// Discovery says "http://127.0.0.1:port", config says ".../": go-oidc
	// refuses, and so stays not ready rather than trusting the wrong iss.
	o := newTestOIDC(t, iss, func(c *OIDCConfig) { c.Issuer = iss.URL() + "/" })
	require.ErrorContains(t, o.Ready(), "issuer")
}

func TestOIDCKeyRotation(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	o := newTestOIDC(t, iss, func(c *OIDCConfig) { c.KeyRefreshInterval = time.Nanosecond })
	old := iss.TokenFor("alice")
	iss.RotateKey()
	for _, tok := range []string{iss.TokenFor("alice"), old} {
		p, err := o.Authenticate(context.Background(), tok)
		require.NoError(t, err)
		require.Equal(t, "alice", p.Subject)
	}
}

// Forged tokens must not turn into a stream of JWKS requests.
func TestOIDCRefetchIsRateLimited(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	o := newTestOIDC(t, iss)
	before := iss.JWKSFetches()
	for range 50 {
		_, err := o.Authenticate(context.Background(), iss.UnknownKeyToken(oidctest.Claims{Subject: "eve"}))
		require.ErrorIs(t, err, ErrUnauthenticated)
		_, err = o.Authenticate(context.Background(), iss.BadSignatureToken(oidctest.Claims{Subject: "eve"}))
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
	require.LessOrEqual(t, iss.JWKSFetches()-before, 1)
}

// An issuer outage after startup: tokens with known keys still verify;
// ones that need a fetch are UNAVAILABLE, not UNAUTHENTICATED.
func TestOIDCJWKSOutage(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	o := newTestOIDC(t, iss, func(c *OIDCConfig) { c.KeyRefreshInterval = time.Nanosecond })
	iss.SetAvailable(false)

	_, err := o.Authenticate(context.Background(), iss.TokenFor("alice"))
	require.NoError(t, err)

	iss.RotateKey()
	_, err = o.Authenticate(context.Background(), iss.TokenFor("alice"))
	require.ErrorIs(t, err, ErrUnavailable)
	require.NotErrorIs(t, err, ErrUnauthenticated)
	require.NoError(t, o.Ready(), "discovery stays done; the next fetch may succeed")

	iss.SetAvailable(true)
	_, err = o.Authenticate(context.Background(), iss.TokenFor("alice"))
	require.NoError(t, err)
}

func TestParseJWKSSkipsUnusableKeys(t *testing.T) {
	_, err := parseJWKS([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))
	require.ErrorContains(t, err, "no usable")
	_, err = parseJWKS([]byte(`{"keys":[{"kty":"OKP","crv":"Ed448","x":"AAAA"}]}`))
	require.ErrorContains(t, err, "no usable")
	_, err = parseJWKS([]byte(`not json`))
	require.Error(t, err)
}

func TestFirstOf(t *testing.T) {
	dev, err := ParseDevTokens([]byte("tokens: [{token: dev-token-1, subject: dev}]"), "")
	require.NoError(t, err)
	iss := oidctest.NewIssuer(t)
	o := newTestOIDC(t, iss)
	both := FirstOf(dev, o)

	p, err := both.Authenticate(context.Background(), "dev-token-1")
	require.NoError(t, err)
	require.Equal(t, "dev", p.Subject)
	p, err = both.Authenticate(context.Background(), iss.TokenFor("alice"))
	require.NoError(t, err)
	require.Equal(t, "alice", p.Subject)
	_, err = both.Authenticate(context.Background(), "nope-nope")
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.NotErrorIs(t, err, ErrUnavailable)

	down := oidctest.NewIssuer(t)
	down.SetAvailable(false)
	withDown := FirstOf(dev, newTestOIDC(t, down))
	_, err = withDown.Authenticate(context.Background(), "nope-nope")
	require.ErrorIs(t, err, ErrUnavailable)
	require.NotErrorIs(t, err, ErrUnauthenticated)
	_, err = withDown.Authenticate(context.Background(), "dev-token-1")
	require.NoError(t, err, "dev tokens work while the issuer is down")

	_, err = FirstOf().Authenticate(context.Background(), "x")
	require.ErrorIs(t, err, ErrUnauthenticated)
}
