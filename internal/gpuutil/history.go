package gpuutil

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// History reads a job's DCGM series over a window from Prometheus
// (query_range), for the console's utilisation chart: what the poller
// keeps is a job's mean and p95, not its curve. The API server holds one
// with --prometheus-url; the job's tenant is checked before it is asked.
type History struct {
	api v1.API
}

// NewHistory reaches Prometheus at url (an http or https URL).
func NewHistory(url string, client *http.Client) (*History, error) {
	ac := api.Config{Address: url}
	if client != nil {
		ac.Client = client
	}
	c, err := api.NewClient(ac)
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	return &History{api: v1.NewAPI(c)}, nil
}

// GPUSeries is one GPU of one replica over time.
type GPUSeries struct {
	Replica string
	GPU     string // its UUID, or its index when the exporter gives none
	Points  []GPUPoint
}

// GPUPoint is a GPU's utilisation (percent) and memory (MiB; NaN without
// a sample) at a time.
type GPUPoint struct {
	Time        time.Time
	Utilization float64
	MemoryMiB   float64
}

// maxHistoryPoints bounds the points of one series (Prometheus refuses
// more than 11,000).
const maxHistoryPoints = 2000

// Range returns the GPU series of the pods of job name in namespace ns
// (pods maps pod names to replicas, PodReplicas) from start to end at
// step, sorted by replica and GPU. No samples: no series.
func (h *History) Range(ctx context.Context, ns, name string, pods map[string]string, start, end time.Time, step time.Duration) ([]GPUSeries, error) {
	if step <= 0 || !end.After(start) || end.Sub(start)/step > maxHistoryPoints {
		return nil, errors.New("gpuutil: the window over the step is more than 2000 points, or empty")
	}
	m, _, _, err := h.api.QueryRange(ctx, Series(ns, []string{name}), v1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	matrix, ok := m.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("prometheus: a range query answered %s, not a matrix", m.Type())
	}
	return SeriesOf(matrix, pods), nil
}

// SeriesOf joins a range query's DCGM series by replica and GPU: the
// utilisation's points, each with the memory sampled at the same step
// (NaN when there is none). Pods not in pods are skipped.
func SeriesOf(m model.Matrix, pods map[string]string) []GPUSeries {
	type key struct{ replica, gpu string }
	util := map[key][]model.SamplePair{}
	fb := map[key]map[model.Time]float64{}
	for _, s := range m {
		replica, ok := pods[string(s.Metric[LabelPod])]
		if !ok {
			continue
		}
		k := key{replica, string(s.Metric[LabelUUID])}
		if k.gpu == "" {
			k.gpu = string(s.Metric[LabelGPU])
		}
		switch string(s.Metric[model.MetricNameLabel]) {
		case MetricUtil:
			util[k] = append(util[k], s.Values...)
		case MetricFB:
			if fb[k] == nil {
				fb[k] = map[model.Time]float64{}
			}
			for _, p := range s.Values {
				fb[k][p.Timestamp] = float64(p.Value)
			}
		}
	}
	out := make([]GPUSeries, 0, len(util))
	for k, pts := range util {
		slices.SortFunc(pts, func(a, b model.SamplePair) int { return int(a.Timestamp - b.Timestamp) })
		g := GPUSeries{Replica: k.replica, GPU: k.gpu, Points: make([]GPUPoint, 0, len(pts))}
		for _, p := range pts {
			mem, ok := fb[k][p.Timestamp]
			if !ok {
				mem = nan
			}
			g.Points = append(g.Points, GPUPoint{Time: p.Timestamp.Time().UTC(), Utilization: float64(p.Value), MemoryMiB: mem})
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b GPUSeries) int {
		return strings.Compare(a.Replica+"\x00"+a.GPU, b.Replica+"\x00"+b.GPU)
	})
	return out
}

var nan = math.NaN()
