package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/spf13/cobra"
	"golang.org/x/oauth2"
)

// tyctl login: an OIDC login for a person at a terminal. The device
// authorization flow (RFC 8628) when the issuer offers it — it works over
// SSH and in containers, where no browser can reach tyctl — else the
// authorization code flow with PKCE (RFC 7636) on a loopback redirect (RFC
// 8252), as kubectl's oidc-login and gcloud do. golang.org/x/oauth2 runs
// both flows; go-oidc reads the issuer's discovery document and verifies
// the ID token before it is stored. The ID token is what Trainyard's API
// verifies, so it is the bearer; the refresh token renews it when it
// expires (refreshLogin), before a call rather than after a refusal.

const (
	defaultClientID = "trainyard"
	defaultScopes   = "openid profile email offline_access"
	// expirySkew: a token this close to its expiry is renewed first, so
	// that it does not expire between the check and the server's.
	expirySkew = 30 * time.Second
	// loginTimeout bounds how long login waits for the person to sign in.
	loginTimeout = 5 * time.Minute
)

type loginFlags struct {
	issuer, clientID, clientSecret, flow string
	scopes                               []string
	noBrowser                            bool
}

func newLoginCmd(a *app) *cobra.Command {
	var f loginFlags
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Sign in with your identity provider (OIDC) and keep the token in tyctl's config",
		Long: `Sign in with the OIDC issuer Trainyard trusts. With the device flow (when
the issuer offers it) tyctl prints a URL and a code to enter on any device;
otherwise it opens a browser on the issuer's sign-in page and waits for the
answer on a loopback port (authorization code with PKCE).

The ID token and its refresh token are stored in tyctl's config file
($TYCTL_CONFIG, else ~/.config/tyctl/config.yaml, mode 0600), with the
--server, --tenant, --insecure and --ca-file given here, and used by every
later command (and by the Python client) below flags and environment. The
token is renewed with the refresh token when it expires.`,
		Example: `  tyctl login --issuer https://login.example.com --server trainyard.example.com:443 --tenant vision
  tyctl login            # again, with the issuer of the last login`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.login(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.issuer, "issuer", "", "OIDC issuer URL (the server's --oidc-issuer); the last login's when empty")
	fl.StringVar(&f.clientID, "client-id", "", "OAuth client id registered for tyctl; the server's --oidc-audience (default "+defaultClientID+")")
	fl.StringVar(&f.clientSecret, "client-secret", "", "client secret, only for issuers that give public clients one")
	fl.StringSliceVar(&f.scopes, "scopes", []string{defaultScopes}, "scopes to ask for (offline_access brings the refresh token; add groups for Dex)")
	fl.StringVar(&f.flow, "flow", "auto", "auto (device when offered, else browser), device or browser")
	fl.BoolVar(&f.noBrowser, "no-browser", false, "print the sign-in URL instead of opening a browser")
	return cmd
}

func (a *app) login(cmd *cobra.Command, f loginFlags) error {
	path, cfg, err := a.configFileOf()
	if err != nil {
		return err
	}
	if f.issuer == "" && cfg.Login != nil {
		f.issuer, f.clientID, f.clientSecret = cfg.Login.Issuer, orDefault(f.clientID, cfg.Login.ClientID), orDefault(f.clientSecret, cfg.Login.ClientSecret)
	}
	if f.issuer == "" {
		return errors.New("--issuer is required for the first login: the OIDC issuer URL Trainyard trusts (its --oidc-issuer)")
	}
	f.clientID = orDefault(f.clientID, defaultClientID)
	ctx, cancel := context.WithTimeout(cmd.Context(), loginTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(ctx, f.issuer)
	if err != nil {
		return fmt.Errorf("the issuer %s: %w", f.issuer, err)
	}
	conf := &oauth2.Config{ClientID: f.clientID, ClientSecret: f.clientSecret, Endpoint: provider.Endpoint(), Scopes: splitScopes(f.scopes)}
	var tok *oauth2.Token
	switch useDevice := provider.Endpoint().DeviceAuthURL != ""; {
	case f.flow == "device" && !useDevice:
		return fmt.Errorf("the issuer %s does not offer the device flow; use --flow browser", f.issuer)
	case f.flow == "device", f.flow == "auto" && useDevice:
		tok, err = a.deviceLogin(ctx, conf, f.noBrowser)
	case f.flow == "browser", f.flow == "auto":
		tok, err = a.browserLogin(ctx, conf, f.noBrowser)
	default:
		return fmt.Errorf("--flow %s: want auto, device or browser", f.flow)
	}
	if err != nil {
		return err
	}
	state := &loginState{Issuer: f.issuer, ClientID: f.clientID, ClientSecret: f.clientSecret}
	if err := storeTokens(ctx, provider, state, tok); err != nil {
		return err
	}
	// The connection settings given with login are kept with it.
	fs := cmd.Flags()
	if fs.Changed("server") {
		cfg.Server = a.flags.server
	}
	if fs.Changed("tenant") {
		cfg.Tenant = a.flags.tenant
	}
	if fs.Changed("insecure") {
		cfg.Insecure = a.flags.insecure
	}
	if fs.Changed("ca-file") {
		cfg.CAFile = a.flags.caFile
	}
	cfg.Login = state
	if err := saveConfig(path, cfg); err != nil {
		return err
	}
	subject := "you"
	if id, err := provider.Verifier(&oidc.Config{ClientID: f.clientID}).Verify(ctx, state.IDToken); err == nil {
		subject = id.Subject
	}
	fmt.Fprintf(a.stderr, "Logged in as %s (token kept in %s, valid until %s)\n", subject, path, state.Expiry.Local().Format(time.DateTime))
	return nil
}

// deviceLogin: the person opens a URL on any device and enters a code;
// tyctl polls the token endpoint until they have.
func (a *app) deviceLogin(ctx context.Context, conf *oauth2.Config, noBrowser bool) (*oauth2.Token, error) {
	da, err := conf.DeviceAuth(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting the device login: %w", err)
	}
	fmt.Fprintf(a.stderr, "To sign in, open %s and enter the code %s\n", da.VerificationURI, da.UserCode)
	if da.VerificationURIComplete != "" && !noBrowser {
		_ = a.openURL(da.VerificationURIComplete) // a convenience: the printed URL works too
	}
	tok, err := conf.DeviceAccessToken(ctx, da)
	if err != nil {
		return nil, fmt.Errorf("device login: %w", err)
	}
	return tok, nil
}

// browserLogin: the issuer's sign-in page in a browser, its answer on a
// loopback port; PKCE keeps a code intercepted on the way useless.
func (a *app) browserLogin(ctx context.Context, conf *oauth2.Config, noBrowser bool) (*oauth2.Token, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	conf.RedirectURL = fmt.Sprintf("http://%s/callback", ln.Addr())
	verifier, state := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	type result struct {
		code string
		err  error
	}
	done := make(chan result, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/callback" || q.Get("state") != state {
			http.Error(w, "not the answer tyctl waits for", http.StatusBadRequest)
			return
		}
		res := result{code: q.Get("code")}
		if e := q.Get("error"); e != "" || res.code == "" {
			res.err = fmt.Errorf("the issuer refused the login: %s %s", e, q.Get("error_description"))
			http.Error(w, "Sign-in failed; see tyctl.", http.StatusBadRequest)
		} else {
			fmt.Fprintln(w, "Signed in to Trainyard. You can close this tab and go back to tyctl.")
		}
		select {
		case done <- res:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier))
	fmt.Fprintf(a.stderr, "To sign in, open:\n  %s\n", authURL)
	if !noBrowser {
		if err := a.openURL(authURL); err != nil {
			fmt.Fprintf(a.stderr, "(could not open a browser: %v)\n", err)
		}
	}
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("no sign-in within %s: %w", loginTimeout, ctx.Err())
	case res := <-done:
		if res.err != nil {
			return nil, res.err
		}
		tok, err := conf.Exchange(ctx, res.code, oauth2.VerifierOption(verifier))
		if err != nil {
			return nil, fmt.Errorf("exchanging the code: %w", err)
		}
		return tok, nil
	}
}

// storeTokens verifies the token endpoint's ID token (issuer, audience,
// signature, expiry) and keeps it with the refresh token.
func storeTokens(ctx context.Context, p *oidc.Provider, l *loginState, tok *oauth2.Token) error {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return errors.New("the issuer returned no ID token (is openid among the scopes?)")
	}
	id, err := p.Verifier(&oidc.Config{ClientID: l.ClientID}).Verify(ctx, raw)
	if err != nil {
		return fmt.Errorf("the issuer's ID token does not verify: %w", err)
	}
	l.IDToken, l.Expiry = raw, id.Expiry
	if tok.RefreshToken != "" {
		l.RefreshToken = tok.RefreshToken
	}
	return nil
}

// refreshLogin renews a stored login's ID token that expired (or is about
// to) with its refresh token, and saves it; nothing happens while it is
// fresh. The refreshed token is what s carries from then on.
func (a *app) refreshLogin(ctx context.Context, s *settings) error {
	l := s.login
	if l == nil || l.Expiry.Sub(a.now()) > expirySkew {
		return nil
	}
	if l.RefreshToken == "" {
		return fmt.Errorf("the login stored in %s expired at %s and cannot be renewed: run tyctl login", s.configPath, l.Expiry.Local().Format(time.DateTime))
	}
	p, err := oidc.NewProvider(ctx, l.Issuer)
	if err != nil {
		return fmt.Errorf("renewing the login: the issuer %s: %w", l.Issuer, err)
	}
	conf := &oauth2.Config{ClientID: l.ClientID, ClientSecret: l.ClientSecret, Endpoint: p.Endpoint()}
	tok, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: l.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		// Never the error's body: it can echo the refresh token.
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return fmt.Errorf("renewing the login failed (%s): run tyctl login", re.ErrorCode)
		}
		return fmt.Errorf("renewing the login failed: run tyctl login (%v)", err)
	}
	fresh := *l
	if err := storeTokens(ctx, p, &fresh, tok); err != nil {
		return err
	}
	// Re-read the file: only the login changes, whatever else was edited.
	cfg, err := loadConfig(s.configPath, a.readFile)
	if err != nil {
		return err
	}
	cfg.Login = &fresh
	if err := saveConfig(s.configPath, cfg); err != nil {
		return err
	}
	s.login, s.token = &fresh, fresh.IDToken
	return nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func splitScopes(in []string) []string {
	var out []string
	for _, s := range in {
		out = append(out, strings.Fields(s)...)
	}
	return out
}
