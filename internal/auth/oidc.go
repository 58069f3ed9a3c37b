package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// OIDCConfig configures the OIDC authenticator.
type OIDCConfig struct {
	// Issuer is the issuer URL. Discovery is read from
	// Issuer/.well-known/openid-configuration, and a token's "iss" must
	// equal it exactly. Required; https, or http on a loopback host (tests).
	Issuer string
	// Audience must be one of the token's "aud" values. Required.
	Audience string
	// GroupsClaim names the claim that holds the caller's groups, either a
	// list of strings or a single string. Defaults to "groups". When no
	// top-level claim has exactly this name and it contains dots, it is
	// read as a path into nested objects (Keycloak's "realm_access.roles").
	GroupsClaim string
	// AdminGroup makes its members platform admins. Defaults to none: with
	// it empty nobody is a platform admin.
	AdminGroup string
	// HTTPClient fetches discovery and the JWKS. Defaults to a client with
	// a 10 s timeout.
	HTTPClient *http.Client
	// Logger gets discovery progress. Defaults to slog.Default().
	Logger *slog.Logger
	// RetryMin and RetryMax bound the jittered exponential backoff between
	// discovery attempts while the issuer is unreachable. Default to 1 s
	// and 1 min.
	RetryMin, RetryMax time.Duration
	// KeyRefreshInterval is the least time between two JWKS fetches that
	// tokens signed by an unknown key can trigger. Defaults to 10 s.
	KeyRefreshInterval time.Duration
	// TokenCacheSize bounds how many verified tokens are remembered
	// (tokencache.go). Defaults to 10,000; negative turns the cache off.
	TokenCacheSize int
	// Now is the clock for expiry checks. Defaults to time.Now.
	Now func() time.Time
}

const (
	defaultGroupsClaim    = "groups"
	discoveryTimeout      = 10 * time.Second
	maxTokenBytes         = 32 << 10
	defaultRetryMin       = time.Second
	defaultRetryMax       = time.Minute
	defaultKeyRefreshWait = 10 * time.Second
)

// signingAlgs are the only JWS algorithms accepted: asymmetric ones. "none"
// and the HMAC family never verify, whatever discovery advertises, so a
// token signed with the issuer's public key as an HMAC secret is refused.
var signingAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512,
	oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.EdDSA,
}

func (c OIDCConfig) withDefaults() OIDCConfig {
	if c.GroupsClaim == "" {
		c.GroupsClaim = defaultGroupsClaim
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: discoveryTimeout}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RetryMin <= 0 {
		c.RetryMin = defaultRetryMin
	}
	if c.RetryMax < c.RetryMin {
		c.RetryMax = max(defaultRetryMax, c.RetryMin)
	}
	if c.KeyRefreshInterval <= 0 {
		c.KeyRefreshInterval = defaultKeyRefreshWait
	}
	if c.TokenCacheSize == 0 {
		c.TokenCacheSize = defaultTokenCacheSize
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c OIDCConfig) validate() error {
	if c.Issuer == "" {
		return errors.New("oidc: issuer is required")
	}
	if err := checkSecureURL(c.Issuer); err != nil {
		return fmt.Errorf("oidc: issuer: %w", err)
	}
	if c.Audience == "" {
		return errors.New("oidc: audience is required")
	}
	return nil
}

// checkSecureURL allows https anywhere and plain http only on loopback, so
// keys cannot be swapped in transit but tests can run an issuer locally.
func checkSecureURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch {
	case u.Host == "":
		return fmt.Errorf("%q has no host", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%q must use https (plain http only on a loopback host)", raw)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// OIDC authenticates bearer JWTs from one OIDC issuer.
type OIDC struct {
	cfg OIDCConfig
	log *slog.Logger

	state    atomic.Pointer[oidcState] // nil until discovery succeeded
	tokens   *tokenCache               // nil when turned off
	verified atomic.Int64              // signature checks run (tests)

	mu      sync.Mutex
	lastErr error // of the latest failed discovery attempt

	retried chan struct{} // closed when the background discovery (retry) has ended
}

type oidcState struct {
	verifier *oidc.IDTokenVerifier
	keys     *keySet
}

// NewOIDC builds the authenticator and runs discovery once. It fails only
// on invalid configuration: when the issuer cannot be reached, discovery
// keeps being retried in the background until it succeeds or ctx ends,
// Authenticate answers ErrUnavailable meanwhile and Ready reports why. ctx
// bounds that background work; cancel it at shutdown.
func NewOIDC(ctx context.Context, cfg OIDCConfig) (*OIDC, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	o := &OIDC{cfg: cfg, log: cfg.Logger.With("component", "oidc", "issuer", cfg.Issuer), tokens: newTokenCache(cfg.TokenCacheSize)}
	if err := o.discover(ctx); err != nil {
		o.setErr(err)
		o.log.Warn("oidc discovery failed; retrying in the background, requests get UNAVAILABLE until it succeeds", "err", err)
		o.retried = make(chan struct{})
		go o.retry(ctx)
		return o, nil
	}
	o.log.Info("oidc issuer discovered", "audience", cfg.Audience, "groups_claim", cfg.GroupsClaim)
	return o, nil
}

// Ready returns nil once discovery and the first JWKS fetch succeeded, and
// the reason otherwise. Meant for /readyz.
func (o *OIDC) Ready() error {
	if o.state.Load() != nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return fmt.Errorf("oidc issuer %s not discovered yet: %v", o.cfg.Issuer, o.lastErr)
}

func (o *OIDC) setErr(err error) {
	o.mu.Lock()
	o.lastErr = err
	o.mu.Unlock()
}

func (o *OIDC) retry(ctx context.Context) {
	defer close(o.retried)
	delay := o.cfg.RetryMin
	for attempt := 2; ; attempt++ {
		// Full jitter in [delay/2, delay) keeps many replicas from
		// stampeding a recovering issuer.
		wait := delay/2 + rand.N(delay/2+1)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		err := o.discover(ctx)
		if err == nil {
			o.log.Info("oidc issuer discovered", "attempt", attempt)
			return
		}
		if ctx.Err() != nil {
			return
		}
		o.setErr(err)
		delay = min(2*delay, o.cfg.RetryMax)
		o.log.Warn("oidc discovery failed", "attempt", attempt, "next_in", delay, "err", err)
	}
}

// discover fetches the discovery document and the key set once.
func (o *OIDC) discover(ctx context.Context) error {
	actx, cancel := context.WithTimeout(oidc.ClientContext(ctx, o.cfg.HTTPClient), discoveryTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(actx, o.cfg.Issuer)
	if err != nil {
		return err
	}
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := provider.Claims(&meta); err != nil {
		return fmt.Errorf("reading discovery document: %w", err)
	}
	if meta.JWKSURI == "" {
		return errors.New("discovery document has no jwks_uri")
	}
	if err := checkSecureURL(meta.JWKSURI); err != nil {
		return fmt.Errorf("jwks_uri: %w", err)
	}
	keys := newKeySet(meta.JWKSURI, o.cfg.HTTPClient, o.cfg.KeyRefreshInterval)
	if _, err := keys.refresh(actx); err != nil {
		return fmt.Errorf("fetching JWKS: %w", err)
	}
	verifier := oidc.NewVerifier(o.cfg.Issuer, keys, &oidc.Config{
		ClientID:             o.cfg.Audience,
		SupportedSigningAlgs: signingAlgs,
		Now:                  o.cfg.Now,
	})
	o.state.Store(&oidcState{verifier: verifier, keys: keys})
	return nil
}

// Authenticate verifies rawToken's signature (against the issuer's JWKS),
// issuer, audience, expiry and not-before, then maps its claims. A token
// that verified before against the same keys and has not expired is not
// checked again (tokencache.go).
func (o *OIDC) Authenticate(ctx context.Context, rawToken string) (Principal, error) {
	st := o.state.Load()
	if st == nil {
		return Principal{}, unavailable("oidc discovery has not succeeded yet", o.Ready())
	}
	if rawToken == "" {
		return Principal{}, unauthenticated("empty token", nil)
	}
	if len(rawToken) > maxTokenBytes {
		return Principal{}, unauthenticated(fmt.Sprintf("token of %d bytes exceeds %d", len(rawToken), maxTokenBytes), nil)
	}
	keys := st.keys.version()
	if p, ok := o.tokens.get(rawToken, keys, o.cfg.Now()); ok {
		return p, nil
	}
	p, err := o.verify(ctx, st, rawToken)
	if err != nil {
		return Principal{}, err
	}
	o.tokens.put(rawToken, keys, p)
	return p, nil
}

// verify checks rawToken's signature and claims and maps them.
func (o *OIDC) verify(ctx context.Context, st *oidcState, rawToken string) (Principal, error) {
	o.verified.Add(1)
	ctx, probe := withFetchProbe(ctx)
	tok, err := st.verifier.Verify(ctx, rawToken)
	if err != nil {
		if probe.failed {
			return Principal{}, unavailable("issuer signing keys could not be fetched", err)
		}
		return Principal{}, unauthenticated("token rejected", err)
	}
	if tok.Subject == "" {
		return Principal{}, unauthenticated("token has no sub claim", nil)
	}
	var claims map[string]json.RawMessage
	if err := tok.Claims(&claims); err != nil {
		return Principal{}, unauthenticated("token claims are not a JSON object", err)
	}
	groups, err := groupsClaim(claims, o.cfg.GroupsClaim)
	if err != nil {
		return Principal{}, unauthenticated("bad groups claim", err)
	}
	// Subjects and groups reach Postgres (memberships, the audit log),
	// which cannot store a NUL byte: such a token is refused here rather
	// than failing every query of its holder.
	if strings.ContainsRune(tok.Subject, 0) || slices.ContainsFunc(groups, func(g string) bool { return strings.ContainsRune(g, 0) }) {
		return Principal{}, unauthenticated("sub or groups claim contains a NUL byte", nil)
	}
	p := Principal{Subject: tok.Subject, Email: emailClaim(claims), Groups: groups, Issuer: tok.Issuer, Expiry: tok.Expiry}
	p.PlatformAdmin = p.InGroup(o.cfg.AdminGroup)
	return p, nil
}

// groupsClaim reads the named claim as a list of strings or one string.
// Any other shape is an error rather than "no groups": a misconfigured
// issuer should be loud, not silently strip people's access.
func groupsClaim(claims map[string]json.RawMessage, name string) ([]string, error) {
	raw, ok := claims[name]
	if !ok && strings.Contains(name, ".") {
		raw, ok = nestedClaim(claims, strings.Split(name, "."))
	}
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		out := list[:0]
		for _, g := range list {
			if g != "" {
				out = append(out, g)
			}
		}
		return out, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	return nil, fmt.Errorf("claim %q is neither a string nor a list of strings", name)
}

func nestedClaim(claims map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	raw, ok := claims[path[0]]
	for _, key := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil, false
		}
		raw, ok = obj[key]
	}
	return raw, ok
}

// emailClaim returns the email unless the issuer says it is unverified.
func emailClaim(claims map[string]json.RawMessage) string {
	var email string
	if json.Unmarshal(claims["email"], &email) != nil {
		return ""
	}
	var verified bool
	if v, ok := claims["email_verified"]; ok && json.Unmarshal(v, &verified) == nil && !verified {
		return ""
	}
	return email
}
