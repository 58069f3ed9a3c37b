//go:build bench || integration

package bench

import (
	"slices"
	"testing"
	"time"
)

// latencies summarizes a set of durations.
type latencies struct {
	n                   int
	mean, p50, p90, p99 time.Duration
	max                 time.Duration
}

// summarize sorts ds (in place) and takes nearest-rank percentiles.
func summarize(ds []time.Duration) latencies {
	if len(ds) == 0 {
		return latencies{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(ds))+0.999999) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return latencies{
		n: len(ds), mean: sum / time.Duration(len(ds)),
		p50: rank(0.50), p90: rank(0.90), p99: rank(0.99), max: ds[len(ds)-1],
	}
}

// report puts p50, p90, p99 and max (milliseconds) on b.
func (l latencies) report(b *testing.B, prefix string) {
	b.ReportMetric(ms(l.p50), prefix+"p50-ms")
	b.ReportMetric(ms(l.p90), prefix+"p90-ms")
	b.ReportMetric(ms(l.p99), prefix+"p99-ms")
	b.ReportMetric(ms(l.max), prefix+"max-ms")
}
