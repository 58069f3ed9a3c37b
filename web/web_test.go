package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w
}

func TestRoutes(t *testing.T) {
	h := Handler(Config{OIDCIssuer: "https://id.example.com/realms/x", ClientID: "trainyard", TokenSignIn: true})

	for _, p := range []string{"/", "/tenants/vision/jobs", "/signin/callback"} {
		w := get(t, h, "GET", p)
		require.Equal(t, http.StatusOK, w.Code, p)
		require.Contains(t, w.Body.String(), `<div id="root">`, p)
		require.Equal(t, "no-cache", w.Header().Get("Cache-Control"))
	}
	require.Equal(t, http.StatusNotFound, get(t, h, "POST", "/tenants").Code, "the console only reads")
	require.Equal(t, http.StatusNotFound, get(t, h, "GET", "/robots.txt").Code)
	require.Equal(t, http.StatusNotFound, get(t, h, "GET", "/assets/nope.js").Code)

	// Every asset index.html names is served, cached for good.
	index := get(t, h, "GET", "/").Body.String()
	for _, part := range strings.Split(index, `"`) {
		if strings.HasPrefix(part, "/assets/") {
			w := get(t, h, "GET", part)
			require.Equal(t, http.StatusOK, w.Code, part)
			require.Contains(t, w.Header().Get("Cache-Control"), "immutable")
		}
	}

	csp := get(t, h, "GET", "/").Header().Get("Content-Security-Policy")
	require.Contains(t, csp, "script-src 'self';")
	require.Contains(t, csp, "connect-src 'self' https://id.example.com;", "the browser redeems the code at the issuer")
	require.Contains(t, csp, "frame-ancestors 'none'")
}

func TestConfig(t *testing.T) {
	var got map[string]any
	w := get(t, Handler(Config{OIDCIssuer: "https://id.example.com", ClientID: "console"}), "GET", "/console/config.json")
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
	require.Equal(t, map[string]any{
		"oidc":        map[string]any{"issuer": "https://id.example.com", "clientId": "console", "scopes": "openid profile email"},
		"tokenSignIn": false,
	}, got)

	w = get(t, Handler(Config{TokenSignIn: true}), "GET", "/console/config.json")
	require.JSONEq(t, `{"tokenSignIn": true}`, w.Body.String(), "no OIDC without an issuer")
}
