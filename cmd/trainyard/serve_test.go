package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

func TestServeMaxStreamsFlag(t *testing.T) {
	for _, cmd := range []string{"serve", "dev"} {
		var f = newServeCmd().Flags()
		if cmd == "dev" {
			f = newDevCmd().Flags()
		}
		fl := f.Lookup("max-streams-per-caller")
		require.NotNil(t, fl, cmd)
		require.Equal(t, "32", fl.DefValue)
		require.Contains(t, fl.Usage, "TRAINYARD_MAX_STREAMS_PER_CALLER")
	}
}

func TestServeConnectionFlags(t *testing.T) {
	for _, cmd := range []string{"serve", "dev"} {
		f := newServeCmd().Flags()
		if cmd == "dev" {
			f = newDevCmd().Flags()
		}
		for name, def := range map[string]string{"handshake-timeout": "10s", "request-timeout": "30s", "max-connections": "4096", "max-stream-lifetime": "30m0s", "audit-retention": "8760h0m0s", "access-log": "errors"} {
			fl := f.Lookup(name)
			require.NotNil(t, fl, "%s --%s", cmd, name)
			require.Equal(t, def, fl.DefValue)
		}
	}
}

// --watch-bookmark-every must be positive: 0 would otherwise mean the
// default without saying so.
func TestServeWatchBookmarkFlag(t *testing.T) {
	for _, cmd := range []string{"serve", "dev"} {
		f := newServeCmd().Flags()
		if cmd == "dev" {
			f = newDevCmd().Flags()
		}
		require.Equal(t, "30s", f.Lookup("watch-bookmark-every").DefValue, cmd)
	}
	require.NoError(t, defaultServeFlags().validate())
	for _, v := range []time.Duration{0, -time.Second} {
		f := defaultServeFlags()
		f.watchBookmark = v
		require.ErrorContains(t, f.validate(), "--watch-bookmark-every must be positive")
	}
}

func TestServeAccessLogFlag(t *testing.T) {
	f := defaultServeFlags()
	f.accessLog = "some"
	require.ErrorContains(t, f.validate(), `--access-log must be errors or all, not "some"`)
	f.accessLog = "all"
	require.NoError(t, f.validate())
}

// defaultServeFlags are serve's flags as their defaults set them.
func defaultServeFlags() *serveFlags {
	var f serveFlags
	f.register(pflag.NewFlagSet("serve", pflag.ContinueOnError))
	return &f
}

// Plaintext is for loopback unless asked for; TLS needs both files.
func TestServeTLSFlags(t *testing.T) {
	f := defaultServeFlags()
	require.Equal(t, "127.0.0.1:8080", f.httpAddr)
	require.NoError(t, f.validate(), "loopback plaintext by default")

	f.httpAddr = ":8080"
	require.ErrorContains(t, f.validate(), "--http-addr :8080 is not a loopback address: serve TLS there")
	f.plaintext = true
	require.NoError(t, f.validate(), "--plaintext says so")

	f = defaultServeFlags()
	f.grpcAddr, f.tls.CertFile = "0.0.0.0:9090", "tls.crt"
	require.ErrorContains(t, f.validate(), "--tls-cert-file and --tls-key-file go together")
	f.tls.KeyFile = "tls.key"
	require.NoError(t, f.validate())
	f = defaultServeFlags()
	f.tls.ClientCAFile = "ca.crt"
	require.ErrorContains(t, f.validate(), "--tls-client-ca-file needs")

	for _, addr := range []string{"127.0.0.1:0", "[::1]:9090", "localhost:8080"} {
		require.True(t, loopbackAddr(addr), addr)
	}
	for _, addr := range []string{":8080", "0.0.0.0:80", "10.0.0.1:9090", "nonsense"} {
		require.False(t, loopbackAddr(addr), addr)
	}
}

func TestServeFairnessFlags(t *testing.T) {
	f := defaultServeFlags()
	require.Equal(t, 8, f.fair.Unary.Concurrency)
	require.Equal(t, 256, f.fair.Unary.Queue)
	require.Equal(t, 10*time.Second, f.fair.Unary.Wait)
	f.fair.Unary.Concurrency = 0
	require.ErrorContains(t, f.validate(), "--tenant-concurrency must be positive")
	f = defaultServeFlags()
	f.fair.Unary.Queue = -1
	require.ErrorContains(t, f.validate(), "--tenant-queue must not be negative")
}

// --cluster-kubeconfig: NAME=PATH, repeatable (and as TRAINYARD_CLUSTER_KUBECONFIG,
// comma-separated); a name must be a cluster name other than serve's own.
func TestServeClusterKubeconfigFlag(t *testing.T) {
	parse := func(args ...string) error {
		cmd := newServeCmd()
		require.NoError(t, cmd.Flags().Parse(append([]string{"--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, args...)))
		return cmd.PreRunE(cmd, nil)
	}
	require.NoError(t, parse("--cluster-kubeconfig", "b=/b.yaml", "--cluster-kubeconfig", "c=/c.yaml"))
	require.ErrorContains(t, parse("--cluster-kubeconfig", "default=/d.yaml"), "own cluster")
	require.NoError(t, parse("--cluster", "a", "--cluster-kubeconfig", "default=/d.yaml"))
	require.ErrorContains(t, parse("--cluster-kubeconfig", "EU=/e.yaml"), "--cluster-kubeconfig")
	require.ErrorContains(t, parse("--cluster-kubeconfig", "b="), "b=PATH")
	t.Setenv("TRAINYARD_CLUSTER_KUBECONFIG", "b=/b.yaml,c=/c.yaml")
	cmd := newServeCmd()
	require.NoError(t, cmd.PreRunE(cmd, nil))
	got, err := cmd.Flags().GetStringToString("cluster-kubeconfig")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"b": "/b.yaml", "c": "/c.yaml"}, got)
}
