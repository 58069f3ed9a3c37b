package gpuutil

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

func TestSelector(t *testing.T) {
	got := Selector("ty-a", []string{"b.x", "a"}, 90*time.Second)
	require.Equal(t, `{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED",namespace="ty-a",pod=~"(?:a|b\\.x)-(?:chief|worker|ps|evaluator)-[0-9]+"}[90000ms]`, got)
	// A namespace with a quote cannot break out of its matcher.
	require.Contains(t, Selector(`x"}`, []string{"a"}, time.Millisecond), `namespace="x\"}"`)
	// A window under a millisecond still selects something well-formed.
	require.Contains(t, Selector("n", []string{"a"}, time.Microsecond), "[1ms]")
}

func TestPodReplicas(t *testing.T) {
	spec := job.Spec{Replicas: []job.ReplicaSpec{{Type: job.Chief, Count: 1}, {Type: job.Worker, Count: 2}}}
	require.Equal(t, map[string]string{"j-chief-0": "chief-0", "j-worker-0": "worker-0", "j-worker-1": "worker-1"}, PodReplicas("j", spec))
}

func series(name, pod, uuid string, t0 time.Time, values ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: model.Metric{model.MetricNameLabel: model.LabelValue(name), LabelPod: model.LabelValue(pod), LabelUUID: model.LabelValue(uuid)}}
	for i, v := range values {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t0.Add(time.Duration(i) * time.Second).UnixNano()), Value: model.SampleValue(v)})
	}
	return s
}

func TestTally(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	m := model.Matrix{
		series(MetricUtil, "j-worker-0", "GPU-a", t0, 80, 90, 70),
		series(MetricUtil, "j-worker-0", "GPU-b", t0, 0, 0, 0),
		series(MetricFB, "j-worker-0", "GPU-a", t0, 1000, 3000, 2000),
		series(MetricUtil, "j-worker-1", "GPU-c", t0, 2, 3),
		series(MetricUtil, "other-worker-0", "GPU-d", t0, 100), // another job's pod
	}
	rule := IdleRule{Percent: 5}
	got, latest := Tally(m, map[string]string{"j-worker-0": "worker-0", "j-worker-1": "worker-1"}, rule.Busy)
	require.Len(t, got, 2)
	w0 := got["worker-0"]
	require.Equal(t, []string{"GPU-a", "GPU-b"}, w0.GPUs)
	require.EqualValues(t, 6, w0.Samples)
	require.InDelta(t, 40, w0.MeanUtil(), 1e-9)
	require.InDelta(t, 90, w0.P95Util(), 1e-9)
	require.InDelta(t, 2000, w0.MeanFB(), 1e-9)
	require.InDelta(t, 3000, w0.FBMax, 1e-9)
	require.Equal(t, t0, w0.FirstSample)
	require.Equal(t, t0.Add(2*time.Second), w0.LastSample)
	require.Equal(t, t0.Add(2*time.Second), w0.LastBusy)
	w1 := got["worker-1"]
	require.True(t, w1.LastBusy.IsZero(), "2 and 3 %% are below the 5 %% threshold")
	require.Equal(t, map[string]float64{"GPU-a": 70, "GPU-b": 0, "GPU-c": 3}, latest)
}

func TestGPUFiguresMergeAndP95(t *testing.T) {
	var a, b job.GPUFigures
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for i := range 100 {
		a.AddUtil(float64(i), t0.Add(time.Duration(i)*time.Second), i >= 5) // 0..99
	}
	b.AddUtil(100, t0.Add(-time.Hour), true)
	b.AddGPU("GPU-z")
	a.AddGPU("GPU-a")
	a.Merge(b)
	require.EqualValues(t, 101, a.Samples)
	require.Equal(t, []string{"GPU-a", "GPU-z"}, a.GPUs)
	require.InDelta(t, 50, a.MeanUtil(), 1e-9)
	// Nearest rank: the ceil(0.95*101) = 96th smallest of 0..100 is 95.
	require.InDelta(t, 95, a.P95Util(), 1e-9)
	require.Equal(t, t0.Add(-time.Hour), a.FirstSample)
	require.Equal(t, t0.Add(99*time.Second), a.LastBusy)
	require.Zero(t, job.GPUFigures{}.P95Util())
}

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	rule := IdleRule{Percent: 5, For: 30 * time.Minute}
	stale := 5 * time.Minute
	fig := func(first, last, busy time.Time) job.GPUFigures {
		return job.GPUFigures{Replica: "worker-0", GPUs: []string{"GPU-a"}, Samples: 10, FirstSample: first, LastSample: last, LastBusy: busy}
	}
	for name, tc := range map[string]struct {
		figs      []job.GPUFigures
		at        time.Time
		idle      bool
		known     bool
		idleSince time.Time
	}{
		"no samples: unknown": {
			figs: nil, at: t0.Add(time.Hour),
		},
		"never busy, sampled for 31 minutes: idle since the first sample": {
			figs: []job.GPUFigures{fig(t0, t0.Add(31*time.Minute), time.Time{})}, at: t0.Add(31 * time.Minute),
			idle: true, known: true, idleSince: t0,
		},
		"never busy, sampled for 29 minutes: not yet": {
			figs: []job.GPUFigures{fig(t0, t0.Add(29*time.Minute), time.Time{})}, at: t0.Add(29 * time.Minute),
			known: true,
		},
		"busy 20 minutes ago: not idle": {
			figs: []job.GPUFigures{fig(t0, t0.Add(60*time.Minute), t0.Add(40*time.Minute))}, at: t0.Add(60 * time.Minute),
			known: true,
		},
		"busy 30 minutes ago: idle since then": {
			figs: []job.GPUFigures{fig(t0, t0.Add(70*time.Minute), t0.Add(40*time.Minute))}, at: t0.Add(70 * time.Minute),
			idle: true, known: true, idleSince: t0.Add(40 * time.Minute),
		},
		"one replica busy keeps the job busy": {
			figs: []job.GPUFigures{
				fig(t0, t0.Add(60*time.Minute), time.Time{}),
				fig(t0, t0.Add(60*time.Minute), t0.Add(59*time.Minute)),
			}, at: t0.Add(60 * time.Minute),
			known: true,
		},
		"samples stopped 10 minutes ago: unknown": {
			figs: []job.GPUFigures{fig(t0, t0.Add(50*time.Minute), time.Time{})}, at: t0.Add(60 * time.Minute),
		},
	} {
		t.Run(name, func(t *testing.T) {
			v, known := Decide(tc.figs, rule, tc.at, stale)
			require.Equal(t, tc.known, known)
			require.Equal(t, tc.idle, v.Idle)
			require.Equal(t, tc.idleSince, v.Since)
			if v.Idle {
				require.Contains(t, v.Message, "below 5% utilisation since "+tc.idleSince.Format(time.RFC3339))
			}
		})
	}
}

func TestRuleOfDefaults(t *testing.T) {
	require.Equal(t, IdleRule{Percent: 5, For: 30 * time.Minute}, RuleOf(tenant.Scheduling{}))
	require.Equal(t, IdleRule{Percent: 10, For: time.Minute}, RuleOf(tenant.Scheduling{IdleGPUPercent: 10, IdleGPUSeconds: 60}))
}

func TestPlanWindows(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	end := t0.Add(10 * time.Minute)
	jobs := []store.GPUJob{
		{Tenant: "a", Name: "new", Namespace: "ty-a", StartTime: t0.Add(5 * time.Minute)},   // first read: from its start
		{Tenant: "a", Name: "seen", Namespace: "ty-a", SampledTo: t0.Add(9 * time.Minute)},  // from where it was counted
		{Tenant: "a", Name: "seen2", Namespace: "ty-a", SampledTo: t0.Add(9 * time.Minute)}, // shares the query
		{Tenant: "b", Name: "old", Namespace: "ty-b", StartTime: t0.Add(-5 * time.Hour)},    // caught up an hour at a time
		{Tenant: "b", Name: "future", Namespace: "ty-b", SampledTo: end},                    // nothing to read
		{Tenant: "b", Name: "other", Namespace: "ty-b", SampledTo: t0.Add(9 * time.Minute)}, // another namespace: another query
	}
	got := plan(jobs, end, time.Hour)
	require.Equal(t, []window{
		{ns: "ty-a", from: t0.Add(5 * time.Minute), to: end, jobs: []int{0}},
		{ns: "ty-a", from: t0.Add(9 * time.Minute), to: end, jobs: []int{1, 2}},
		{ns: "ty-b", from: t0.Add(-5 * time.Hour), to: t0.Add(-4 * time.Hour), jobs: []int{3}},
		{ns: "ty-b", from: t0.Add(9 * time.Minute), to: end, jobs: []int{5}},
	}, got)
}

func TestChunks(t *testing.T) {
	var got [][]int
	for c := range chunks([]int{1, 2, 3, 4, 5}, 2) {
		got = append(got, c)
	}
	require.Equal(t, [][]int{{1, 2}, {3, 4}, {5}}, got)
}

func TestUsedPercent(t *testing.T) {
	window := []job.GPUFigures{{Samples: 2, UtilSum: 100}}
	all := []job.GPUFigures{{Samples: 10, UtilSum: 200}}
	ok, p := usedPercent(window, all, true)
	require.True(t, ok)
	require.InDelta(t, 50, p, 1e-9, "the window's own mean")
	ok, p = usedPercent(nil, all, true)
	require.True(t, ok)
	require.InDelta(t, 20, p, 1e-9, "no sample in the window but recent ones: the job's mean so far")
	ok, _ = usedPercent(nil, all, false)
	require.False(t, ok, "no recent samples: not measured")
}

func TestIdleRuleStop(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	idle := store.GPUIdle{Idle: true, Since: t0}
	never := RuleOf(tenant.Scheduling{})
	_, stop := never.Stop(idle, t0.Add(100*time.Hour))
	require.False(t, stop, "no stop option: never")
	r := RuleOf(tenant.Scheduling{IdleGPUStopSeconds: 7200})
	_, stop = r.Stop(idle, t0.Add(119*time.Minute))
	require.False(t, stop)
	msg, stop := r.Stop(idle, t0.Add(2*time.Hour))
	require.True(t, stop)
	require.Contains(t, msg, "since 2026-12-07T10:00:00Z")
	_, stop = r.Stop(store.GPUIdle{}, t0.Add(10*time.Hour))
	require.False(t, stop, "a busy job is never stopped")
	v := tenant.Validate(&tenant.Tenant{Scheduling: tenant.Scheduling{IdleGPUSeconds: 600, IdleGPUStopSeconds: 300}})
	require.Len(t, v, 1)
	require.Equal(t, "scheduling.idleGpuStopSeconds", v[0].Field)
}
