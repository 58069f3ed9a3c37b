package tune

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type metricCase struct {
	line string
	want MetricLine
	ok   bool   // a metric line
	err  string // why it is rejected
}

var metricCases = map[string]metricCase{
	"one value with a step": {line: "trainyard-metric loss=0.25 step=100", ok: true,
		want: MetricLine{Samples: []Sample{{"loss", 0.25}}, Step: 100, HasStep: true}},
	"several values, step first": {line: "trainyard-metric step=3 loss=1.5 val/accuracy=0.875 lr=1e-4", ok: true,
		want: MetricLine{Samples: []Sample{{"loss", 1.5}, {"val/accuracy", 0.875}, {"lr", 1e-4}}, Step: 3, HasStep: true}},
	"no step": {line: "trainyard-metric accuracy=0.5", ok: true,
		want: MetricLine{Samples: []Sample{{"accuracy", 0.5}}}},
	"step zero": {line: "trainyard-metric x=-2 step=0", ok: true,
		want: MetricLine{Samples: []Sample{{"x", -2}}, HasStep: true}},
	"tabs, repeated spaces, leading space, CRLF": {line: "  trainyard-metric\tloss=2   step=7\r\n", ok: true,
		want: MetricLine{Samples: []Sample{{"loss", 2}}, Step: 7, HasStep: true}},
	"underflow reads as zero": {line: "trainyard-metric tiny=1e-400", ok: true,
		want: MetricLine{Samples: []Sample{{"tiny", 0}}}},

	"an ordinary log line":     {line: "epoch 3 loss=0.25"},
	"empty":                    {line: ""},
	"the marker later on":      {line: "INFO trainyard-metric loss=1"},
	"a longer first word":      {line: "trainyard-metrics loss=1"},
	"the marker with no space": {line: "trainyard-metric:loss=1"},

	"NaN":             {line: "trainyard-metric loss=NaN step=1", ok: true, err: "loss=NaN: NaN is not accepted"},
	"nan":             {line: "trainyard-metric acc=0.5 loss=nan", ok: true, err: "loss=nan: NaN is not accepted"},
	"Inf":             {line: "trainyard-metric loss=+Inf", ok: true, err: "loss=+Inf: infinite values are not accepted"},
	"overflow":        {line: "trainyard-metric loss=1e400", ok: true, err: "loss=1e400: infinite values are not accepted"},
	"not a number":    {line: "trainyard-metric loss=low", ok: true, err: "loss=low: not a number"},
	"empty value":     {line: "trainyard-metric loss=", ok: true, err: "loss=: not a number"},
	"no equals":       {line: "trainyard-metric loss 0.5", ok: true, err: `field "loss" is not name=value`},
	"nothing":         {line: "trainyard-metric", ok: true, err: "no name=value metric on the line"},
	"only a step":     {line: "trainyard-metric step=4", ok: true, err: "no name=value metric on the line"},
	"negative step":   {line: "trainyard-metric loss=1 step=-1", ok: true, err: "step=-1: not a non-negative integer"},
	"fractional step": {line: "trainyard-metric loss=1 step=1.5", ok: true, err: "step=1.5: not a non-negative integer"},
	"step twice":      {line: "trainyard-metric loss=1 step=1 step=2", ok: true, err: "step is given twice"},
	"a metric twice":  {line: "trainyard-metric loss=1 loss=2", ok: true, err: "metric loss is given twice"},
	"bad name":        {line: "trainyard-metric 1loss=1", ok: true, err: `metric name "1loss" is not a metric name (a letter or _, then letters, digits and _ . : / -)`},
	"empty name":      {line: "trainyard-metric =1", ok: true, err: "metric name is empty"},
	"too long":        {line: "trainyard-metric loss=1 " + strings.Repeat(" ", MaxMetricLineBytes), ok: true, err: "the line is 4120 bytes; at most 4096 are allowed"},
}

func TestParseMetricLine(t *testing.T) {
	for name, tc := range metricCases {
		t.Run(name, func(t *testing.T) {
			got, ok, err := ParseMetricLine(tc.line)
			require.Equal(t, tc.ok, ok, "a metric line")
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				require.Zero(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			if ok {
				again, ok, err := ParseMetricLine(got.String())
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, got, again, "String reads back")
			}
		})
	}
}

func TestMetricLineString(t *testing.T) {
	m := MetricLine{Samples: []Sample{{"loss", 0.1}, {"val/acc", 1e-7}}, Step: 12, HasStep: true}
	require.Equal(t, "trainyard-metric loss=0.1 val/acc=1e-07 step=12", m.String())
}

// FuzzParseMetricLine: any line parses without panicking; an accepted line
// has valid names written once and finite values, and its String reads
// back to it. The seeds are the table's lines.
func FuzzParseMetricLine(f *testing.F) {
	for _, tc := range metricCases {
		f.Add(tc.line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		m, ok, err := ParseMetricLine(line)
		if !ok || err != nil {
			if !ok && err != nil {
				t.Fatalf("an error for a line that is not a metric line: %v", err)
			}
			return
		}
		if m.HasStep && m.Step < 0 {
			t.Fatalf("negative step %d", m.Step)
		}
		if len(m.Samples) == 0 {
			t.Fatal("accepted with no samples")
		}
		seen := map[string]bool{}
		for _, s := range m.Samples {
			if err := ValidMetricName(s.Name); err != nil {
				t.Fatalf("accepted name %v", err)
			}
			if seen[s.Name] {
				t.Fatalf("accepted %s twice", s.Name)
			}
			seen[s.Name] = true
			if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
				t.Fatalf("accepted %s=%v", s.Name, s.Value)
			}
		}
		again, ok, err := ParseMetricLine(m.String())
		if !ok || err != nil {
			t.Fatalf("String %q does not read back: ok %v, %v", m.String(), ok, err)
		}
		if len(again.Samples) != len(m.Samples) || again.Step != m.Step || again.HasStep != m.HasStep {
			t.Fatalf("String %q reads back as %+v, not %+v", m.String(), again, m)
		}
		for i := range m.Samples {
			if again.Samples[i] != m.Samples[i] {
				t.Fatalf("String %q reads back as %+v, not %+v", m.String(), again, m)
			}
		}
	})
}
