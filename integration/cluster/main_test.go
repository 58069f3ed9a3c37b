//go:build integration

package cluster_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/trainyard/trainyard/integration/cluster"
)

// tc is the one cluster the package's tests share. With
// TRAINYARD_CLUSTER_KUBECONFIG set it is that cluster.
var tc *cluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The first run builds the binaries (minutes); later ones start in seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Progress: os.Stderr})
	if err != nil {
		// A missing binary or a component that will not start fails the package: never a skip.
		fmt.Fprintf(os.Stderr, "FAIL: start cluster: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "cluster (%s) ready in %s: %s\n", c.Kind, time.Since(began).Round(time.Millisecond), c.Kubeconfig)
	tc = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stop cluster: %v\n", err)
		return 1
	}
	return code
}
