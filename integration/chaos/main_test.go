//go:build integration || chaos

package chaos

import (
	"os"
	"testing"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
)

func TestMain(m *testing.M) {
	// The suite crashes and restarts etcd and kube-apiserver, so it always
	// runs a local control plane of its own: never a cluster it is pointed
	// at (TRAINYARD_CLUSTER_KUBECONFIG), which other tests may be using.
	os.Unsetenv(cluster.EnvKubeconfig)
	os.Unsetenv(cluster.EnvKind)
	harness.Main(m)
}
