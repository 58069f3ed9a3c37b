//go:build bench || integration

package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 11's dispatch at 50 and 100 jobs a second: the dispatch bench
// (dispatch_test.go, raw client-go creates beside Trainyard in alternating
// blocks) at those rates, with no finished pods seeded, each in its own
// table. Both paths run with the worker's default client (QPS 200, burst
// 400): at 100 sets of 5 pods a second the raw creates alone ask 500 a
// second of it.
//
// TRAINYARD_BENCH_RATES lists the rates, default 50,100 (issue 11 asks for
// both). On this project's 2-core machine neither path keeps up at either
// rate: both are held by that client's rate limiter and by the machine,
// 99 % busy in both paths' blocks. Until 2026-12-05 Trainyard asked the
// limiter for a Service create per job besides the five pods and the
// EndpointSlice writes, and its p99 at 50 jobs/s was 0.93-2.94× of raw's
// across runs; with one Service per tenant namespace (aee6caa) the
// section alone gave 0.99× at 50 and 1.08× at 100. With --kube-qps 1000
// for both (2026-12-03) raw's p50 fell from 946 to 576 ms while
// Trainyard's did not (2,028 and 2,247 ms): the machine held them.

func benchDispatchRates(b *testing.B, cfg config, rep *report) {
	var rates []float64
	for _, f := range strings.Split(envString("TRAINYARD_BENCH_RATES", "50,100"), ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r <= 0 {
			b.Fatalf("TRAINYARD_BENCH_RATES=%q: want positive jobs/s, comma-separated", f)
		}
		rates = append(rates, r)
	}
	for _, rate := range rates {
		b.Run(fmt.Sprintf("rate=%g", rate), func(b *testing.B) {
			c := cfg
			c.rate, c.seeded, c.blocks = rate, []int{0}, 2
			// At these rates kwok has not ended a block's pods 10 s after
			// it (every wait ran its full 10 s, 80 s of the section, on
			// 2026-12-05); the blocks take turns going first, so each path
			// meets the other's leftovers as often.
			c.quiet = 5 * time.Second
			c.dispatchFor = envDuration(b, "TRAINYARD_BENCH_RATES_FOR", 10*time.Second)
			sub := newReport(c)
			benchDispatch(b, c, sub)
			rep.sections = append(rep.sections, func(out io.Writer) {
				fmt.Fprintf(out, "\nDispatch at %g jobs/s (issue 11):", rate)
				sub.printDispatch(out)
			})
		})
	}
}

// envDuration is a positive duration from the environment, or def.
func envDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	v, err := time.ParseDuration(envString(name, def.String()))
	if err != nil || v <= 0 {
		tb.Fatalf("%s: want a positive duration", name)
	}
	return v
}
