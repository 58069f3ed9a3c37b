//go:build bench || integration

package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Issue 41's noisy neighbour: tenant A submits with many clients as fast
// as it can while tenant B submits at a steady few jobs a second, through
// one `trainyard serve`. Three phases of d each: B alone, A alone, both.
// Targets: B's p99 submit latency with A flooding within 2x of B's alone,
// and A's throughput with B beside it at least 0.8x of A's alone.

type noisyResult struct {
	d                  time.Duration
	aClients           int
	bRate              float64
	bAlone, bWithA     latencies
	aAlone, aWithB     float64 // A's acknowledged submits per second
	aRefused, bRefused int64   // RESOURCE_EXHAUSTED answers (A's clients back off and retry)
	bErrors            int64   // B's submits that failed otherwise
	load               string
}

func measureNoisy(tb testing.TB, d time.Duration, aClients int, bRate float64, serveArgs []string) noisyResult {
	env := harness.Start(tb, harness.Options{ServeArgs: serveArgs}) // the API server alone: no worker takes the jobs
	env.CreateTenant(tb, "noisy-a", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	env.CreateTenant(tb, "noisy-b", harness.Subject("bob", pb.Role_ROLE_EDITOR))
	aJobs, bJobs := env.Jobs(tb, env.Token("alice")), env.Jobs(tb, env.Token("bob"))
	spec := benchSpecPB()
	var seq atomic.Int64
	submit := func(ctx context.Context, c pb.JobServiceClient, tenant string) error {
		_, err := c.CreateJob(ctx, &pb.CreateJobRequest{Parent: harness.TenantName(tenant),
			JobId: fmt.Sprintf("n-%07d", seq.Add(1)), Job: &pb.Job{Spec: spec}})
		return err
	}
	r := noisyResult{d: d, aClients: aClients, bRate: bRate, load: loadavg()}
	for range 4 { // warm both paths
		if err := submit(context.Background(), aJobs, "noisy-a"); err != nil {
			tb.Fatalf("CreateJob: %v", err)
		}
		if err := submit(context.Background(), bJobs, "noisy-b"); err != nil {
			tb.Fatalf("CreateJob: %v", err)
		}
	}

	// floodA submits from aClients until stop, and returns its
	// acknowledged submits per second. RESOURCE_EXHAUSTED is counted and
	// retried after a short pause, as a client honouring Retry-After
	// would, shortened so the flood stays a flood.
	floodA := func(stop <-chan struct{}) float64 {
		var ok atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range aClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					err := submit(context.Background(), aJobs, "noisy-a")
					switch status.Code(err) {
					case codes.OK:
						ok.Add(1)
					case codes.ResourceExhausted:
						atomic.AddInt64(&r.aRefused, 1)
						time.Sleep(20 * time.Millisecond)
					default:
						tb.Errorf("tenant A: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return float64(ok.Load()) / time.Since(start).Seconds()
	}
	// steadyB submits at bRate for d (open loop) and returns the latencies.
	steadyB := func() latencies {
		var (
			mu  sync.Mutex
			lat []time.Duration
			wg  sync.WaitGroup
		)
		tick := time.NewTicker(time.Duration(float64(time.Second) / bRate))
		defer tick.Stop()
		end := time.After(d)
		for {
			select {
			case <-end:
				wg.Wait()
				return summarize(lat)
			case <-tick.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				err := submit(context.Background(), bJobs, "noisy-b")
				switch status.Code(err) {
				case codes.OK:
					mu.Lock()
					lat = append(lat, time.Since(t0))
					mu.Unlock()
				case codes.ResourceExhausted:
					atomic.AddInt64(&r.bRefused, 1)
				default:
					atomic.AddInt64(&r.bErrors, 1)
				}
			}()
		}
	}

	r.bAlone = steadyB()
	stop := make(chan struct{})
	time.AfterFunc(d, func() { close(stop) })
	r.aAlone = floodA(stop)

	stop = make(chan struct{})
	aRate := make(chan float64, 1)
	go func() { aRate <- floodA(stop) }()
	r.bWithA = steadyB()
	close(stop)
	r.aWithB = <-aRate
	return r
}

func benchNoisy(b *testing.B, cfg config, rep *report) {
	r := measureNoisy(b, 2*cfg.storeFor, 64, 5, cfg.serveArgs)
	b.ReportMetric(ms(r.bWithA.p99), "b-p99-ms")
	rep.sections = append(rep.sections, r.print)
}

func (r noisyResult) print(out io.Writer) {
	fmt.Fprintf(out, "\nNoisy neighbour (issue 41): tenant A submits with %d clients as fast as it can, tenant B at %.0f jobs/s, %s per phase, one serve; load average %s at start\n",
		r.aClients, r.bRate, r.d, r.load)
	fmt.Fprintf(out, "  B's submits, p50 / p99: alone %.1f / %.1f ms, with A flooding %.1f / %.1f ms: p99 %s of alone (target 2x)\n",
		ms(r.bAlone.p50), ms(r.bAlone.p99), ms(r.bWithA.p50), ms(r.bWithA.p99), ratio(ms(r.bWithA.p99), ms(r.bAlone.p99)))
	fmt.Fprintf(out, "  A's acknowledged submits: alone %.0f/s, with B %.0f/s: %s of alone (target 0.8x); A refused %d times (RESOURCE_EXHAUSTED, retried), B refused %d, B's other errors %d\n",
		r.aAlone, r.aWithB, ratio(r.aWithB, r.aAlone), r.aRefused, r.bRefused, r.bErrors)
}
