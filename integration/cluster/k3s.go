package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/k3s"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// K3sImage is the k3s image TRAINYARD_CLUSTER=k3s runs unless
// TRAINYARD_K3S_IMAGE names another.
const K3sImage = "rancher/k3s:v1.34.1-k3s1"

// startK3s is the laptop path (TRAINYARD_CLUSTER=k3s, Docker required): one
// k3s container from testcontainers. Its single node runs pods for real, so
// there is no kwok here: the sim.trainyard.dev/* annotations do nothing, the
// GPU and spot nodes do not exist, and a pod's exit code is its program's.
// Tests that depend on simulated behaviour need the local cluster.
func startK3s(ctx context.Context, opts Options) (*Cluster, error) {
	opts = opts.withDefaults()
	image := K3sImage
	if v := os.Getenv("TRAINYARD_K3S_IMAGE"); v != "" {
		image = v
	}
	ctr, err := k3s.Run(ctx, image)
	if err != nil {
		if ctr != nil {
			_ = testcontainers.TerminateContainer(ctr)
		}
		return nil, fmt.Errorf("k3s container (needs a Docker engine): %w", err)
	}
	terminate := func() { _ = testcontainers.TerminateContainer(ctr) }
	kubeconfig, err := ctr.GetKubeConfig(ctx)
	if err != nil {
		terminate()
		return nil, err
	}
	dir, scratch := opts.StateDir, ""
	if dir == "" {
		if dir, err = os.MkdirTemp("", "trainyard-k3s-"); err != nil {
			terminate()
			return nil, err
		}
		scratch = dir // ours to remove on Stop
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		terminate()
		return nil, err
	}
	// No BinDir: Kubectl uses the kubectl on PATH rather than building one.
	c := &Cluster{Kubeconfig: path, StateDir: dir, Kind: "k3s", scratch: scratch, stopExtra: []func(){terminate}}
	if err := c.connect(); err != nil {
		terminate()
		return nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, opts.ReadyTimeout)
	defer cancel()
	err = waitFor(waitCtx, "default ServiceAccount", nil, func() bool {
		_, err := c.client.CoreV1().ServiceAccounts("default").Get(waitCtx, "default", metav1.GetOptions{})
		return err == nil
	})
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}
