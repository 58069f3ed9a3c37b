//go:build bench

package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClustersSmoke is the clusters section at a few sets a path. It is
// not in make test (the integration tag), whose time is tight: a second
// control plane and two installations take longer to start than the
// figures take to measure (70 s in all on 2026-12-07). Run it alone:
//
//	go test -tags bench -run TestClustersSmoke -count=1 ./integration/bench/
func TestClustersSmoke(t *testing.T) {
	cfg := config{dispatchFor: 2 * time.Second, blocks: 1, rate: 5, drain: time.Minute}
	r := measureClusters(t, cfg)
	for _, p := range []dispatchResult{r.one, r.two} {
		t.Logf("%s: %d sets, p50 %.1f ms, p99 %.1f ms", p.path, p.sets, ms(p.lat.p50), ms(p.lat.p99))
		require.Positive(t, p.sets, p.path)
		require.Zero(t, p.failed+p.missing, "%s: every set got its pods", p.path)
	}
	t.Logf("two clusters: sets per cluster %v", r.inCluster)
	require.Equal(t, r.two.lat.n, r.inCluster["default"]+r.inCluster[secondClusterName], "every set's pods are in one of the two clusters")
	var out strings.Builder
	r.print(&out)
	require.Contains(t, out.String(), "vs one cluster")
	t.Log(out.String())
}
