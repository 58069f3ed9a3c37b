//go:build integration

// Package console tests the web console (package web) the way people use
// it: headless Chromium, driven by chromedp, against `trainyard serve`
// and a worker on the local cluster, with real Postgres and a real OIDC
// issuer (integration/harness). Each test waits on what the page shows,
// never on time.
package console

import (
	"testing"

	"github.com/trainyard/trainyard/integration/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
