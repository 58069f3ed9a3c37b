package main

import (
	"net/http"

	"github.com/spf13/pflag"

	"github.com/trainyard/trainyard/web"
)

// consoleFlags configure the web console (package web) that serve and dev
// run at /.
type consoleFlags struct {
	enabled  bool
	clientID string
	scopes   string
}

func (c *consoleFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&c.enabled, "console", true, "serve the web console at / (it calls the REST API with the signed-in user's token)")
	fs.StringVar(&c.clientID, "console-client-id", "", "OIDC client id of the console: a public client (authorization code with PKCE, no secret) whose redirect URI is <this server>/signin/callback. Its ID tokens must carry --oidc-audience, so it defaults to that")
	fs.StringVar(&c.scopes, "console-oidc-scopes", "openid profile email", "scopes the console asks the OIDC issuer for (add the one that puts groups in ID tokens, if the issuer needs one)")
}

// handler is the console for a server with the authentication f sets up:
// sign-in through the OIDC issuer, and a token field with dev auth. Nil
// when the console is off.
func (c *consoleFlags) handler(f *serveFlags) http.Handler {
	if !c.enabled {
		return nil
	}
	cfg := web.Config{TokenSignIn: f.devAuth != "", Scopes: c.scopes}
	if f.oidcIssuer != "" {
		cfg.OIDCIssuer, cfg.ClientID = f.oidcIssuer, c.clientID
		if cfg.ClientID == "" {
			cfg.ClientID = f.oidcAudience
		}
	}
	return web.Handler(cfg)
}
