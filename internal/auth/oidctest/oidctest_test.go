package oidctest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/internal/auth/oidctest"
)

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// Another process sees a plain OIDC issuer over HTTP on loopback.
func TestIssuerServesDiscoveryAndKeys(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	if !strings.HasPrefix(iss.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL() = %q, want loopback", iss.URL())
	}
	var disc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if code := getJSON(t, iss.URL()+"/.well-known/openid-configuration", &disc); code != http.StatusOK {
		t.Fatalf("discovery: %d", code)
	}
	if disc.Issuer != iss.URL() {
		t.Fatalf("issuer %q, want %q", disc.Issuer, iss.URL())
	}
	var jwks struct {
		Keys []struct {
			Kid string `json:"kid"`
			Kty string `json:"kty"`
			D   string `json:"d"`
		} `json:"keys"`
	}
	getJSON(t, disc.JWKSURI, &jwks)
	if len(jwks.Keys) != 1 || jwks.Keys[0].Kty != "RSA" || jwks.Keys[0].D != "" {
		t.Fatalf("jwks: %+v, want one public RSA key", jwks.Keys)
	}
	iss.RotateKey()
	getJSON(t, disc.JWKSURI, &jwks)
	if len(jwks.Keys) != 2 {
		t.Fatalf("after rotation: %d keys, want 2", len(jwks.Keys))
	}
	if iss.JWKSFetches() != 2 {
		t.Fatalf("JWKSFetches() = %d, want 2", iss.JWKSFetches())
	}

	iss.SetAvailable(false)
	if code := getJSON(t, iss.URL()+"/.well-known/openid-configuration", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("unavailable discovery: %d", code)
	}
}

func TestStartAndClose(t *testing.T) {
	iss, err := oidctest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := iss.URL()
	iss.Close()
	if _, err := http.Get(url + "/.well-known/openid-configuration"); err == nil {
		t.Fatal("closed issuer still answers")
	}
}
