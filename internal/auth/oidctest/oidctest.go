// Package oidctest runs an OpenID Connect issuer for tests: discovery and a
// JWKS served over HTTP on loopback, an RSA signing key, tokens both good
// and deliberately bad, and the login flows a CLI uses (authorization code
// with PKCE, device authorization, refresh; flows.go). The issuer is a real HTTP server, so another
// process (the trainyard binary in the end-to-end suite) can be pointed at
// URL() with --oidc-issuer.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// DefaultAudience is the audience tokens get unless Claims say otherwise.
const DefaultAudience = "trainyard"

// Issuer is a running test issuer. Its methods are safe for concurrent use.
type Issuer struct {
	url string
	srv *http.Server
	ln  net.Listener

	mu        sync.Mutex
	keys      []signingKey // published in the JWKS; the last one signs
	foreign   signingKey   // never published
	available bool

	jwksFetches atomic.Int64
	flows       *flows // the login flows (flows.go)
}

type signingKey struct {
	kid string
	key *rsa.PrivateKey
}

// NewIssuer starts an issuer on 127.0.0.1 with a random port and stops it
// when the test ends.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	i, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatalf("oidctest: %v", err)
	}
	t.Cleanup(i.Close)
	return i
}

// Start starts an issuer listening on addr (e.g. "127.0.0.1:0"). Call
// Close when done.
func Start(addr string) (*Issuer, error) {
	signing, err := newKey()
	if err != nil {
		return nil, err
	}
	foreign, err := newKey()
	if err != nil {
		return nil, err
	}
	// Same kid as the published key: a token signed by it gets past the
	// key lookup and must fail on the signature itself.
	foreign.kid = signing.kid

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("oidctest: listen: %w", err)
	}
	i := &Issuer{
		url:       "http://" + ln.Addr().String(),
		ln:        ln,
		keys:      []signingKey{signing},
		foreign:   foreign,
		available: true,
		flows:     newFlows(),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", i.serveDiscovery)
	mux.HandleFunc("GET /keys", i.serveJWKS)
	mux.HandleFunc("GET /authorize", i.serveAuthorize)
	mux.HandleFunc("POST /device/code", i.serveDeviceCode)
	mux.HandleFunc("GET /device", i.serveDevice)
	mux.HandleFunc("POST /token", i.serveToken)
	i.srv = &http.Server{Handler: allowCORS(mux), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = i.srv.Serve(ln) }()
	return i, nil
}

// allowCORS lets browser apps (the web console) read discovery and the
// JWKS and redeem codes from another origin, as real issuers do.
func allowCORS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST")
			w.Header().Set("Access-Control-Allow-Headers", "*")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func newKey() (signingKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return signingKey{}, fmt.Errorf("oidctest: generating key: %w", err)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	return signingKey{kid: fmt.Sprintf("%x", id), key: key}, nil
}

// URL is the issuer URL: the "iss" of its tokens and the base of discovery.
func (i *Issuer) URL() string { return i.url }

// Close stops the server.
func (i *Issuer) Close() { _ = i.srv.Close() }

// SetAvailable(false) makes discovery and the JWKS answer 503, as an
// identity provider outage would; SetAvailable(true) heals it.
func (i *Issuer) SetAvailable(ok bool) {
	i.mu.Lock()
	i.available = ok
	i.mu.Unlock()
}

// RotateKey adds a new signing key with a new kid. Tokens are signed with
// it from now on; the old key stays published so earlier tokens verify.
func (i *Issuer) RotateKey() {
	k, err := newKey()
	if err != nil {
		panic(err)
	}
	i.mu.Lock()
	i.keys = append(i.keys, k)
	i.mu.Unlock()
}

// ReplaceKey publishes a new signing key in place of every earlier one, as
// an issuer does when a key is compromised: tokens signed before no longer
// verify once a verifier fetches the key set again.
func (i *Issuer) ReplaceKey() {
	k, err := newKey()
	if err != nil {
		panic(err)
	}
	i.mu.Lock()
	i.keys = []signingKey{k}
	i.mu.Unlock()
}

// JWKSFetches counts JWKS requests served so far.
func (i *Issuer) JWKSFetches() int { return int(i.jwksFetches.Load()) }

func (i *Issuer) isAvailable() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.available
}

func (i *Issuer) serveDiscovery(w http.ResponseWriter, _ *http.Request) {
	if !i.isAvailable() {
		http.Error(w, "issuer unavailable", http.StatusServiceUnavailable)
		return
	}
	doc := map[string]any{
		"issuer":                                i.url,
		"jwks_uri":                              i.url + "/keys",
		"authorization_endpoint":                i.url + "/authorize",
		"token_endpoint":                        i.url + "/token",
		"response_types_supported":              []string{"code", "id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
	}
	if i.deviceEnabled() {
		doc["device_authorization_endpoint"] = i.url + "/device/code"
		doc["grant_types_supported"] = []string{"authorization_code", "refresh_token", deviceGrantType}
	}
	writeJSON(w, doc)
}

func (i *Issuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	i.jwksFetches.Add(1)
	if !i.isAvailable() {
		http.Error(w, "issuer unavailable", http.StatusServiceUnavailable)
		return
	}
	i.mu.Lock()
	var set jose.JSONWebKeySet
	for _, k := range i.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.key.PublicKey, KeyID: k.kid, Algorithm: string(jose.RS256), Use: "sig"})
	}
	i.mu.Unlock()
	writeJSON(w, set)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Claims describe a token. Zero fields get defaults that make a valid token.
type Claims struct {
	Subject string
	Email   string
	// Groups go under GroupsClaim ("groups" by default) as a JSON list.
	// For other shapes (a single string) use Extra.
	Groups      []string
	GroupsClaim string
	// Audience defaults to DefaultAudience.
	Audience []string
	// Issuer defaults to URL().
	Issuer string
	// IssuedAt defaults to now, Expiry to IssuedAt + 1h. NotBefore is left
	// out when zero.
	IssuedAt, Expiry, NotBefore time.Time
	// Extra claims are set last and override everything above.
	Extra map[string]any
}

func (i *Issuer) payload(c Claims) []byte {
	now := time.Now()
	if c.IssuedAt.IsZero() {
		c.IssuedAt = now
	}
	if c.Expiry.IsZero() {
		c.Expiry = c.IssuedAt.Add(time.Hour)
	}
	if c.Issuer == "" {
		c.Issuer = i.url
	}
	if c.Audience == nil {
		c.Audience = []string{DefaultAudience}
	}
	if c.GroupsClaim == "" {
		c.GroupsClaim = "groups"
	}
	m := map[string]any{
		"iss": c.Issuer,
		"aud": c.Audience,
		"iat": c.IssuedAt.Unix(),
		"exp": c.Expiry.Unix(),
	}
	if c.Subject != "" {
		m["sub"] = c.Subject
	}
	if c.Email != "" {
		m["email"] = c.Email
	}
	if c.Groups != nil {
		m[c.GroupsClaim] = c.Groups
	}
	if !c.NotBefore.IsZero() {
		m["nbf"] = c.NotBefore.Unix()
	}
	for k, v := range c.Extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("oidctest: claims: %v", err))
	}
	return b
}

func sign(alg jose.SignatureAlgorithm, key any, kid string, payload []byte) string {
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: string(alg)}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		panic(fmt.Sprintf("oidctest: signer: %v", err))
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		panic(fmt.Sprintf("oidctest: sign: %v", err))
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		panic(fmt.Sprintf("oidctest: serialize: %v", err))
	}
	return s
}

func (i *Issuer) current() signingKey {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.keys[len(i.keys)-1]
}

// Token returns a valid RS256 token for c, signed by the current key.
func (i *Issuer) Token(c Claims) string {
	k := i.current()
	return sign(jose.RS256, k.key, k.kid, i.payload(c))
}

// TokenFor is Token for a subject and its groups, everything else default.
func (i *Issuer) TokenFor(subject string, groups ...string) string {
	return i.Token(Claims{Subject: subject, Groups: groups})
}

// ExpiredToken is Token with an expiry in the past.
func (i *Issuer) ExpiredToken(c Claims) string {
	c.IssuedAt = time.Now().Add(-2 * time.Hour)
	c.Expiry = time.Now().Add(-time.Hour)
	return i.Token(c)
}

// WrongAudienceToken is Token for another audience.
func (i *Issuer) WrongAudienceToken(c Claims) string {
	c.Audience = []string{"someone-else"}
	return i.Token(c)
}

// WrongIssuerToken is Token claiming another issuer, signed with this
// issuer's key (so only the iss check can catch it).
func (i *Issuer) WrongIssuerToken(c Claims) string {
	c.Issuer = "https://issuer.invalid"
	return i.Token(c)
}

// BadSignatureToken is signed by a key that is never published but whose
// kid is the published key's.
func (i *Issuer) BadSignatureToken(c Claims) string {
	i.mu.Lock()
	f := i.foreign
	i.mu.Unlock()
	return sign(jose.RS256, f.key, f.kid, i.payload(c))
}

// UnknownKeyToken is signed by an unpublished key with a kid nobody knows.
func (i *Issuer) UnknownKeyToken(c Claims) string {
	i.mu.Lock()
	f := i.foreign
	i.mu.Unlock()
	return sign(jose.RS256, f.key, "unknown-"+f.kid, i.payload(c))
}

// AlgNoneToken is an unsigned token with header {"alg":"none"}.
func (i *Issuer) AlgNoneToken(c Claims) string {
	enc := base64.RawURLEncoding
	hdr := enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	return hdr + "." + enc.EncodeToString(i.payload(c)) + "."
}

// HMACToken is signed HS256 with the issuer's public key (DER) as the
// secret: the classic algorithm-confusion attack.
func (i *Issuer) HMACToken(c Claims) string {
	k := i.current()
	secret, err := x509.MarshalPKIXPublicKey(&k.key.PublicKey)
	if err != nil {
		panic(err)
	}
	return sign(jose.HS256, secret, k.kid, i.payload(c))
}

// MalformedTokens are strings that are not JWTs at all, or almost.
func MalformedTokens() []string {
	enc := base64.RawURLEncoding
	return []string{
		"not-a-jwt",
		"a.b",
		"a.b.c",
		"....",
		enc.EncodeToString([]byte(`{"alg":"RS256"}`)) + "." + enc.EncodeToString([]byte(`not json`)) + ".c2ln",
		enc.EncodeToString([]byte(`not json`)) + ".e30.c2ln",
	}
}
