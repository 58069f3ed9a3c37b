//go:build integration

package prometheus

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// TestScrapesTheExporter: the real Prometheus scrapes the DCGM-shaped
// exporter every second and answers PromQL over the exporter's labels.
func TestScrapesTheExporter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := NewExporter()
	defer e.Close()
	e.Set(GPU{Index: 0, Namespace: "ty-a", Pod: "j-worker-0", Container: "tensorflow", Util: 80, FBUsed: 1000})
	e.Set(GPU{Index: 1, Namespace: "ty-a", Pod: "j-worker-1", Container: "tensorflow", Util: 0, FBUsed: 10})
	s, err := Start(ctx, Options{Targets: []string{e.Target()}})
	require.NoError(t, err) // never a skip: no Prometheus is a failure
	defer s.Stop()
	c, err := api.NewClient(api.Config{Address: s.URL})
	require.NoError(t, err)
	prom := v1.NewAPI(c)
	var m model.Matrix
	require.Eventually(t, func() bool {
		v, _, _, err := prom.Query(ctx, `DCGM_FI_DEV_GPU_UTIL{namespace="ty-a"}[1m]`, time.Now())
		if err != nil {
			return false
		}
		m = v.(model.Matrix)
		return len(m) == 2 && len(m[0].Values) >= 3 && len(m[1].Values) >= 3
	}, time.Minute, 200*time.Millisecond, "log:\n%s", s.Log())
	byPod := map[string]model.SampleValue{}
	for _, series := range m {
		require.Equal(t, "tensorflow", string(series.Metric["container"]))
		require.Equal(t, "NVIDIA H100 80GB HBM3", string(series.Metric["modelName"]))
		require.NotEmpty(t, series.Metric["UUID"])
		byPod[string(series.Metric["pod"])] = series.Values[len(series.Values)-1].Value
	}
	require.Equal(t, map[string]model.SampleValue{"j-worker-0": 80, "j-worker-1": 0}, byPod)
}
