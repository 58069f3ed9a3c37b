package gpuutil

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// SeriesOf joins a range query's utilisation and memory by replica and
// GPU, skips other pods, and sorts.
func TestSeriesOf(t *testing.T) {
	t0 := model.TimeFromUnix(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC).Unix())
	t1 := t0.Add(30 * time.Second)
	series := func(name, pod, uuid string, vals ...float64) *model.SampleStream {
		s := &model.SampleStream{Metric: model.Metric{model.MetricNameLabel: model.LabelValue(name), LabelPod: model.LabelValue(pod), LabelUUID: model.LabelValue(uuid), LabelGPU: "0"}}
		for i, v := range vals {
			s.Values = append(s.Values, model.SamplePair{Timestamp: t0.Add(time.Duration(i) * 30 * time.Second), Value: model.SampleValue(v)})
		}
		return s
	}
	m := model.Matrix{
		series(MetricUtil, "train-worker-1", "", 0, 0),
		series(MetricUtil, "train-worker-0", "GPU-a", 80, 85),
		series(MetricFB, "train-worker-0", "GPU-a", 1024),
		series(MetricUtil, "other-worker-0", "GPU-z", 99),
	}
	got := SeriesOf(m, map[string]string{"train-worker-0": "worker-0", "train-worker-1": "worker-1"})
	require.Len(t, got, 2)
	require.Equal(t, "worker-0", got[0].Replica)
	require.Equal(t, "GPU-a", got[0].GPU)
	require.Equal(t, GPUPoint{Time: t0.Time().UTC(), Utilization: 80, MemoryMiB: 1024}, got[0].Points[0])
	require.Equal(t, t1.Time().UTC(), got[0].Points[1].Time)
	require.True(t, math.IsNaN(got[0].Points[1].MemoryMiB), "no memory sample at that step")
	require.Equal(t, "worker-1", got[1].Replica)
	require.Equal(t, "0", got[1].GPU, "no UUID: the GPU's index")
}

func TestSeriesSelector(t *testing.T) {
	require.Equal(t, `{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED",namespace="ty-a",pod=~"(?:train\\.x)-(?:chief|worker|ps|evaluator)-[0-9]+"}`, Series("ty-a", []string{"train.x"}))
}
