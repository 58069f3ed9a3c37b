package sim

import (
	"testing"
	"time"
)

// BenchmarkBurstyWeek is `trainyard simulate --bursty --nodes 64 --jobs
// 10000 --load 0.8` (make simulate) one policy at a time: the issue's
// "a 10,000-job week runs in seconds". Profile it with
//
//	go test -run '^$' -bench BurstyWeek/cohort$ -benchtime 1x -cpuprofile cpu.out ./internal/sim/
func BenchmarkBurstyWeek(b *testing.B) {
	tr := GenerateBursty(1, 64, 10_000, 0.8)
	for _, p := range Policies {
		b.Run(p, func(b *testing.B) {
			var res Result
			for b.Loop() {
				var err error
				if res, err = Run(tr, p, 90*24*time.Hour); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(100*res.GPUUtilization, "%busy")
			b.ReportMetric(float64(res.Preemptions), "preemptions")
			b.ReportMetric(worstWaitRatio(res.Sharing), "max/p50")
		})
	}
}

// worstWaitRatio is the largest longest-wait over median-wait of a size
// class (the target: at most 4).
func worstWaitRatio(s SharingStats) float64 {
	worst := 0.0
	for _, st := range s.WaitBySize {
		if st.P50 > 0 {
			worst = max(worst, float64(st.Max)/float64(st.P50))
		}
	}
	return worst
}
