//go:build bench || integration

package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Issue 11's watchers: N WatchJobs streams of one tenant open on one
// `trainyard serve`; what each costs the server in memory, and how long an
// event takes from its commit (CreateJob answered) to the last of them —
// beside the same with a single stream.

type fanoutResult struct {
	streams, events    int
	heapPerStream      float64 // KiB of Go heap in use per open stream
	rssPerStream       float64 // KiB of resident memory per open stream
	one, all           latencies
	missed             int // events some stream never received
	serveCPUPerEventMs float64
}

func measureFanout(tb testing.TB, streams, events int) fanoutResult {
	env := harness.Start(tb, harness.Options{ServeArgs: []string{"--max-streams-per-caller", strconv.Itoa(streams + 10), "--tenant-streams", strconv.Itoa(streams + 10)}})
	env.CreateTenant(tb, "fan", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	serve := trainyardProcesses(tb, env.DatabaseURL, 1)[0]
	token := env.Token("alice")
	jobs := env.Jobs(tb, token)
	res := fanoutResult{streams: streams, events: events}
	metricsURL := env.HTTPURL + "/metrics"
	heap := func() float64 { return scrapeAll(tb, metricsURL)["go_memstats_heap_inuse_bytes"] / 1024 }
	rss := func() float64 { return float64(peakRSS(tb, []*proc{serve})[0].rss) }

	seq := 0
	run := func(n int) latencies {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var (
			mu   sync.Mutex
			got  = map[string]int{}          // job → streams that received its event
			last = map[string]time.Time{}    // job → the last stream's receive
			full = make(chan string, events) // job names every stream received
			wg   sync.WaitGroup
		)
		// 100 streams per connection, as a client library would multiplex.
		var conns []pb.JobServiceClient
		for i := 0; i < n; i += 100 {
			conns = append(conns, pb.NewJobServiceClient(env.Conn(tb, token)))
		}
		for i := range n {
			stream, err := conns[i/100].WatchJobs(ctx, &pb.WatchJobsRequest{Parent: harness.TenantName("fan")})
			if err != nil {
				tb.Fatalf("watch %d: %v", i, err)
			}
			if _, err := stream.Header(); err != nil { // established: every event from now on reaches it
				tb.Fatalf("watch %d: %v", i, err)
			}
			wg.Go(func() {
				for {
					msg, err := stream.Recv()
					if err != nil {
						return
					}
					at := time.Now()
					name := msg.GetJob().GetName()
					mu.Lock()
					got[name]++
					last[name] = at
					if got[name] == n {
						full <- name
					}
					mu.Unlock()
				}
			})
		}
		if n == streams {
			res.heapPerStream, res.rssPerStream = (heap()-heap0)/float64(n), (rss()-rss0)/float64(n)
		}
		cpu0, _ := cpuSeconds(serve.pid)
		committed := map[string]time.Time{}
		for range events {
			seq++
			id := fmt.Sprintf("f-%05d", seq)
			if _, err := jobs.CreateJob(ctx, &pb.CreateJobRequest{Parent: harness.TenantName("fan"), JobId: id, Job: &pb.Job{Spec: benchSpecPB()}}); err != nil {
				tb.Fatalf("CreateJob: %v", err)
			}
			committed[harness.JobName("fan", id)] = time.Now()
			time.Sleep(100 * time.Millisecond)
		}
		deadline := time.After(30 * time.Second)
		for done := 0; done < events; done++ {
			select {
			case <-full:
			case <-deadline:
				res.missed += events - done
				tb.Errorf("%d of %d events reached all %d streams within 30 s", done, events, n)
				done = events
			}
		}
		if cpu1, ok := cpuSeconds(serve.pid); ok && n == streams {
			res.serveCPUPerEventMs = 1000 * (cpu1 - cpu0) / float64(events)
		}
		mu.Lock()
		defer mu.Unlock()
		var ds []time.Duration
		for name, at := range committed {
			if l, ok := last[name]; ok && got[name] == n {
				ds = append(ds, max(l.Sub(at), 0))
			}
		}
		cancel()
		return summarize(ds)
	}
	res.one = run(1)
	heap0, rss0 = heap(), rss()
	res.all = run(streams)
	return res
}

// heap0 and rss0 are the server's memory before the N streams open (set
// between the two runs of measureFanout).
var heap0, rss0 float64

// scrapeAll reads every series of a Prometheus text endpoint.
func scrapeAll(tb testing.TB, url string) map[string]float64 {
	return scrapePrefix(tb, url, "")
}

func benchFanout(b *testing.B, rep *report) {
	r := measureFanout(b, envInt(b, "TRAINYARD_BENCH_WATCHERS", 1000), 50)
	b.ReportMetric(ms(r.all.p99), "fanout-p99-ms")
	b.ReportMetric(r.heapPerStream, "heap-KiB/stream")
	rep.sections = append(rep.sections, r.print)
}

func (r fanoutResult) print(out io.Writer) {
	fmt.Fprintf(out, "\nWatchers (issue 11): %d WatchJobs streams of one tenant on one `trainyard serve` (100 per gRPC connection); %d jobs created 100 ms apart.\n", r.streams, r.events)
	fmt.Fprintf(out, "  commit (CreateJob answered) → the last stream received its event: p50 %.1f ms, p99 %.1f ms, max %.1f ms; with 1 stream (baseline): p50 %.1f ms, p99 %.1f ms. Missed: %d.\n",
		ms(r.all.p50), ms(r.all.p99), ms(r.all.max), ms(r.one.p50), ms(r.one.p99), r.missed)
	fmt.Fprintf(out, "  memory per open stream: %.1f KiB of Go heap in use, %.1f KiB resident; serve CPU per event with all streams open: %.1f ms.\n",
		r.heapPerStream, r.rssPerStream, r.serveCPUPerEventMs)
}
