//go:build integration

package cluster_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// The cluster says which Kubernetes it is: build.sh stamps every binary
// with the release it builds (issue 14). Unstamped, the API server and
// kubectl said v0.0.0-master+$Format:%H$, which client-go's semantic
// version parser, and so Kueue, Helm's kubeVersion and kubectl itself,
// refuse.
func TestServerAndKubectlReportTheBuiltRelease(t *testing.T) {
	want := builtRelease(t)

	// /version as any HTTP client reads it.
	raw, err := tc.Client().Discovery().RESTClient().Get().AbsPath("/version").DoRaw(context.Background())
	require.NoError(t, err)
	var info apimachineryversion.Info
	require.NoError(t, json.Unmarshal(raw, &info), string(raw))
	require.Equal(t, "v"+want.String(), info.GitVersion, "gitVersion: %s", raw)
	require.Equal(t, strconv.FormatUint(uint64(want.Major()), 10), info.Major, "major: %s", raw)
	require.Equal(t, strconv.FormatUint(uint64(want.Minor()), 10), info.Minor, "minor: %s", raw)

	// client-go's discovery, then the parser operators and Kueue use on it.
	sv, err := tc.Client().Discovery().ServerVersion()
	require.NoError(t, err)
	parsed, err := version.ParseSemantic(sv.GitVersion)
	require.NoError(t, err, "discovery's gitVersion %q is not a semantic version", sv.GitVersion)
	require.True(t, parsed.EqualTo(want), "discovery says %s, build.sh built %s", parsed, want)

	// kubectl (the one build.sh built) for both sides.
	out, err := tc.Kubectl("version", "-o", "json")
	require.NoError(t, err)
	var kv struct {
		Client apimachineryversion.Info `json:"clientVersion"`
		Server apimachineryversion.Info `json:"serverVersion"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &kv), out)
	require.Equal(t, "v"+want.String(), kv.Client.GitVersion, "kubectl's client version: %s", out)
	require.Equal(t, "v"+want.String(), kv.Server.GitVersion, "kubectl's server version: %s", out)
	text, err := tc.Kubectl("version")
	require.NoError(t, err, "kubectl version fails on a version it cannot parse")
	require.Contains(t, text, "Client Version: v"+want.String())
	require.Contains(t, text, "Server Version: v"+want.String())
}

// builtRelease is the Kubernetes release build.sh builds: its K8S_VERSION,
// which the environment can override as it can for build.sh.
func builtRelease(t *testing.T) *version.Version {
	t.Helper()
	v := os.Getenv("K8S_VERSION")
	if v == "" {
		script, err := os.ReadFile("build.sh")
		require.NoError(t, err)
		m := regexp.MustCompile(`K8S_VERSION="\$\{K8S_VERSION:-(v[^}"]+)\}"`).FindSubmatch(script)
		require.NotNil(t, m, "build.sh sets no default K8S_VERSION")
		v = string(m[1])
	}
	parsed, err := version.ParseSemantic(v)
	require.NoError(t, err)
	return parsed
}
