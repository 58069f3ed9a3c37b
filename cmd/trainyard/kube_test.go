package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: "t"}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

func testKubeFlags(t *testing.T) *kubeFlags {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(testKubeconfig), 0o600))
	return &kubeFlags{kubeconfig: path, qps: 200, burst: 400}
}

// Trainyard's Kubernetes clients speak protobuf and ask for no gzip
// (kube.TuneRESTConfig).
func TestRestConfigAsksForProtobufWithoutCompression(t *testing.T) {
	cfg, err := testKubeFlags(t).restConfig()
	require.NoError(t, err)
	require.True(t, cfg.DisableCompression)
	require.Equal(t, "application/vnd.kubernetes.protobuf", cfg.ContentType)
	require.Equal(t, "application/vnd.kubernetes.protobuf,application/json", cfg.AcceptContentTypes)
	require.Equal(t, "trainyard", cfg.UserAgent)
	require.InDelta(t, 200, cfg.QPS, 0)
	require.Equal(t, 400, cfg.Burst)
}

// client-go shares one transport (one HTTP/2 connection) among clients of
// the same config; ownConnection's clients each have their own.
func TestOwnConnectionIsNotShared(t *testing.T) {
	cfg, err := testKubeFlags(t).restConfig()
	require.NoError(t, err)
	// The connection pool is the innermost round tripper, under the
	// user-agent and auth wrappers.
	transport := func(c kubernetes.Interface) http.RoundTripper {
		rt := c.CoreV1().RESTClient().(*rest.RESTClient).Client.Transport
		for {
			w, ok := rt.(utilnet.RoundTripperWrapper)
			if !ok {
				return rt
			}
			rt = w.WrappedRoundTripper()
		}
	}
	a, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	b, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	require.Same(t, transport(a), transport(b), "client-go shares the transport of a config")

	own1, err := ownConnection(cfg)
	require.NoError(t, err)
	own2, err := ownConnection(cfg)
	require.NoError(t, err)
	require.NotSame(t, transport(a), transport(own1))
	require.NotSame(t, transport(own1), transport(own2))
}
