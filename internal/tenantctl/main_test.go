//go:build integration

package tenantctl

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/trainyard/trainyard/integration/cluster"
)

// tc is the cluster the package's tests share: the local control plane
// (real kube-apiserver with RBAC and Pod Security admission), or the one
// TRAINYARD_CLUSTER_KUBECONFIG points at.
var tc *cluster.Cluster

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Progress: os.Stderr})
	if err != nil {
		// No cluster is a failure, never a skip.
		fmt.Fprintf(os.Stderr, "FAIL: start cluster: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "cluster (%s) ready in %s\n", c.Kind, time.Since(began).Round(time.Millisecond))
	tc = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stop cluster: %v\n", err)
		return 1
	}
	return code
}
