package oidctest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The login flows tyctl login uses, served by the test issuer the way a
// real identity provider serves them, with the browser's part automated:
//
//   - authorization code with PKCE (RFC 7636) on a loopback redirect
//     (RFC 8252): GET /authorize logs the configured user in at once and
//     redirects to the client's loopback redirect_uri with a code; POST
//     /token exchanges it, checking the code verifier against the
//     challenge;
//   - device authorization (RFC 8628), when enabled: POST /device/code
//     starts one, GET /device?user_code=... is the user approving it (what
//     they would do on their phone), POST /token answers
//     authorization_pending until then;
//   - refresh (RFC 6749 §6): refresh tokens rotate, each works once.
//
// Tokens from the token endpoint are ID tokens for the client (aud =
// client_id) of the configured user, signed like every other token, so the
// server verifies them for real. Their lifetime is SetTokenLifetime's, to
// test refresh on expiry.

const deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

type flows struct {
	mu        sync.Mutex
	login     Claims
	device    bool
	ttl       time.Duration
	codes     map[string]authCode
	devices   map[string]*deviceGrant // by device code
	userCodes map[string]string       // user code → device code
	refresh   map[string]grant        // refresh token → whose
	calls     map[string]int          // token requests by grant type
}

type grant struct {
	clientID string
	claims   Claims
}

type authCode struct {
	grant
	redirectURI, challenge string
	expires                time.Time
}

type deviceGrant struct {
	clientID string
	approved *Claims
	expires  time.Time
}

func newFlows() *flows {
	return &flows{
		login: Claims{Subject: "alice"}, ttl: time.Hour,
		codes: map[string]authCode{}, devices: map[string]*deviceGrant{}, userCodes: map[string]string{},
		refresh: map[string]grant{}, calls: map[string]int{},
	}
}

// SetLogin sets who logs in through /authorize and /device (default
// subject "alice", no groups).
func (i *Issuer) SetLogin(c Claims) {
	i.flows.mu.Lock()
	defer i.flows.mu.Unlock()
	i.flows.login = c
}

// EnableDeviceFlow advertises (and serves) the device authorization
// endpoint; off by default, as many issuers have it off.
func (i *Issuer) EnableDeviceFlow(on bool) {
	i.flows.mu.Lock()
	defer i.flows.mu.Unlock()
	i.flows.device = on
}

// SetTokenLifetime sets how long tokens from the token endpoint live
// (default an hour).
func (i *Issuer) SetTokenLifetime(d time.Duration) {
	i.flows.mu.Lock()
	defer i.flows.mu.Unlock()
	i.flows.ttl = d
}

// TokenRequests counts the token endpoint's successful answers for a grant
// type: "authorization_code", "refresh_token" or the device grant's URN.
func (i *Issuer) TokenRequests(grantType string) int {
	i.flows.mu.Lock()
	defer i.flows.mu.Unlock()
	return i.flows.calls[grantType]
}

func (i *Issuer) deviceEnabled() bool {
	i.flows.mu.Lock()
	defer i.flows.mu.Unlock()
	return i.flows.device
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// serveAuthorize is the browser's visit: the user is logged in already,
// consents, and is sent back to the client with a code.
func (i *Issuer) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	case err != nil || redirect.Scheme != "http" || !isLoopback(redirect.Hostname()):
		// RFC 8252 §7.3: native apps redirect to a loopback address.
		http.Error(w, "redirect_uri must be an http loopback address", http.StatusBadRequest)
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		http.Error(w, "PKCE with S256 is required", http.StatusBadRequest)
		return
	case !strings.Contains(" "+q.Get("scope")+" ", " openid "):
		http.Error(w, "scope must include openid", http.StatusBadRequest)
		return
	}
	code := random(16)
	f := i.flows
	f.mu.Lock()
	f.codes[code] = authCode{grant: grant{clientID: q.Get("client_id"), claims: f.login}, redirectURI: redirect.String(),
		challenge: q.Get("code_challenge"), expires: time.Now().Add(time.Minute)}
	f.mu.Unlock()
	back := redirect.Query()
	back.Set("code", code)
	back.Set("state", q.Get("state"))
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// serveDeviceCode starts a device authorization.
func (i *Issuer) serveDeviceCode(w http.ResponseWriter, r *http.Request) {
	if !i.deviceEnabled() {
		http.NotFound(w, r)
		return
	}
	_ = r.ParseForm()
	dc, uc := random(16), strings.ToUpper(random(4))
	f := i.flows
	f.mu.Lock()
	f.devices[dc] = &deviceGrant{clientID: r.PostForm.Get("client_id"), expires: time.Now().Add(10 * time.Minute)}
	f.userCodes[uc] = dc
	f.mu.Unlock()
	writeJSON(w, map[string]any{
		"device_code": dc, "user_code": uc,
		"verification_uri":          i.url + "/device",
		"verification_uri_complete": i.url + "/device?user_code=" + uc,
		"expires_in":                600,
		"interval":                  1,
	})
}

// serveDevice is the user entering the code on another device and approving.
func (i *Issuer) serveDevice(w http.ResponseWriter, r *http.Request) {
	f := i.flows
	f.mu.Lock()
	dc, ok := f.userCodes[r.URL.Query().Get("user_code")]
	if ok {
		login := f.login
		f.devices[dc].approved = &login
	}
	f.mu.Unlock()
	if !ok {
		http.Error(w, "unknown code", http.StatusBadRequest)
		return
	}
	fmt.Fprintln(w, "Signed in. You can close this window.")
}

// serveToken is the token endpoint of all three grants.
func (i *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request")
		return
	}
	form := r.PostForm
	// A client authenticates in the form or, as golang.org/x/oauth2 tries
	// first, with HTTP Basic; public clients have an empty secret.
	if id, _, ok := r.BasicAuth(); ok {
		form.Set("client_id", id)
	}
	f := i.flows
	f.mu.Lock()
	defer f.mu.Unlock()
	var g grant
	switch gt := form.Get("grant_type"); gt {
	case "authorization_code":
		c, ok := f.codes[form.Get("code")]
		delete(f.codes, form.Get("code"))
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		switch {
		case !ok || time.Now().After(c.expires) || c.clientID != form.Get("client_id") || c.redirectURI != form.Get("redirect_uri"):
			tokenError(w, "invalid_grant")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge:
			tokenError(w, "invalid_grant") // the PKCE check
			return
		}
		g = c.grant
	case deviceGrantType:
		d, ok := f.devices[form.Get("device_code")]
		switch {
		case !ok || d.clientID != form.Get("client_id"):
			tokenError(w, "invalid_grant")
			return
		case time.Now().After(d.expires):
			tokenError(w, "expired_token")
			return
		case d.approved == nil:
			tokenError(w, "authorization_pending")
			return
		}
		delete(f.devices, form.Get("device_code"))
		g = grant{clientID: d.clientID, claims: *d.approved}
	case "refresh_token":
		old, ok := f.refresh[form.Get("refresh_token")]
		delete(f.refresh, form.Get("refresh_token")) // rotation: each refresh token works once
		if !ok || old.clientID != form.Get("client_id") {
			tokenError(w, "invalid_grant")
			return
		}
		g = old
	default:
		tokenError(w, "unsupported_grant_type")
		return
	}
	f.calls[form.Get("grant_type")]++
	c := g.claims
	c.Audience = []string{g.clientID}
	c.IssuedAt = time.Now()
	c.Expiry = c.IssuedAt.Add(f.ttl)
	refresh := random(24)
	f.refresh[refresh] = g
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, map[string]any{
		"access_token": random(16), "token_type": "Bearer", "expires_in": int(f.ttl.Seconds()),
		"id_token": i.Token(c), "refresh_token": refresh,
	})
}

func tokenError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"error":%q}`, code)
}
