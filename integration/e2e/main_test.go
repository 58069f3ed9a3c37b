//go:build integration

// Package e2e is Trainyard's end-to-end suite: the real trainyard binaries,
// real Postgres, a real OIDC issuer and, for the Kubernetes side, the local
// control plane of integration/cluster.
package e2e

import (
	"testing"

	"github.com/trainyard/trainyard/integration/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
