// Package web serves Trainyard's web console: a single-page application
// (TypeScript, React, built by Vite from this directory's src/) whose
// built files, dist/, are committed and embedded in the binary, so that
// `go build` needs no npm and the console always matches the server it
// ships in. `make web` rebuilds dist/; `make verify` rebuilds it and fails
// when the committed copy differs.
//
// The console is a client of the public REST API and nothing else: it
// holds the caller's bearer token and calls /v1/... like curl would, so it
// can never show more than the token may see. The only other thing served
// here is its configuration (how to sign in), which is no secret.
//
// # Sources (src/)
//
//	api/client.ts   fetch with the bearer token: JSON calls, watches
//	                (newline-delimited JSON) and log streams (text); a 401
//	                anywhere ends the session
//	api/types.ts    the REST JSON the console reads (proto/trainyard/v1)
//	session.tsx     sign-in state, the token's expiry timer
//	auth.ts         sessionStorage, JWT expiry, the OIDC client (oidc-client-ts)
//	live.ts         a tenant's watch, resumed after the last event id
//	jobfile.ts      a job file's YAML lines: syntax errors, TFJob detection,
//	                violations placed on their line (the server's jobs:parse
//	                applies the job-file rules)
//	filter.ts       the list filter: the API's grammar, and the same test
//	                applied to watched jobs
//	pages/          Jobs, Job, Submit, Tenants, SignIn
//
// # Routes
//
//	/assets/*            hashed build output: cached for a year
//	/console/config.json how to sign in (OIDC issuer and public client id, token field)
//	any other GET        index.html, uncached: the app routes in the browser
//
// Every answer carries a Content-Security-Policy that allows scripts and
// styles from this origin only and connections to this origin and the OIDC
// issuer, so an injected script could neither run nor send a token away.
package web

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
)

//go:embed dist
var dist embed.FS

// Config says how the console signs people in.
type Config struct {
	// OIDCIssuer and ClientID: sign-in with the authorization code flow
	// and PKCE, as a public client (no secret). Off when either is empty.
	OIDCIssuer string
	ClientID   string
	// Scopes requested at sign-in. Defaults to "openid profile email".
	Scopes string
	// TokenSignIn shows a field to paste a bearer token (dev auth).
	TokenSignIn bool
}

// clientConfig is /console/config.json.
type clientConfig struct {
	OIDC        *oidcConfig `json:"oidc,omitempty"`
	TokenSignIn bool        `json:"tokenSignIn"`
}

type oidcConfig struct {
	Issuer   string `json:"issuer"`
	ClientID string `json:"clientId"`
	Scopes   string `json:"scopes"`
}

// Handler serves the console. Mount it at "/": the more specific patterns
// of the API, /docs and the health endpoints take precedence. It answers
// GET and HEAD; anything else is 404, as it was before the console.
func Handler(cfg Config) http.Handler {
	files, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // embedded at build time
	}
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		panic("web: dist/index.html is missing: run make web")
	}
	cc := clientConfig{TokenSignIn: cfg.TokenSignIn}
	connect := "'self'"
	if cfg.OIDCIssuer != "" && cfg.ClientID != "" {
		scopes := cfg.Scopes
		if scopes == "" {
			scopes = "openid profile email"
		}
		cc.OIDC = &oidcConfig{Issuer: cfg.OIDCIssuer, ClientID: cfg.ClientID, Scopes: scopes}
		if u, err := url.Parse(cfg.OIDCIssuer); err == nil && u.Host != "" {
			// The browser reads discovery and redeems the code at the issuer.
			connect += " " + u.Scheme + "://" + u.Host
		}
	}
	configJSON, err := json.Marshal(cc)
	if err != nil {
		panic(err)
	}
	csp := "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src " + connect + "; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	assets := http.FileServerFS(files)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		p := path.Clean(r.URL.Path)
		switch {
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			// The mux sends every path no other route takes here; only
			// reads are the console's.
			http.NotFound(w, r)
		case p == "/console/config.json":
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "no-cache")
			_, _ = w.Write(configJSON)
		case strings.HasPrefix(p, "/assets/") || p == "/favicon.svg":
			if strings.HasPrefix(p, "/assets/") {
				h.Set("Cache-Control", "public, max-age=31536000, immutable")
			}
			assets.ServeHTTP(w, r)
		case path.Ext(p) != "":
			// A file that is not ours (robots.txt, a stale asset): a 404,
			// not the app.
			http.NotFound(w, r)
		default:
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			_, _ = w.Write(index)
		}
	})
}
