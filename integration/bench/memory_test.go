//go:build bench || integration

package bench

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Issue 11's worker memory: N running jobs of 1 chief + 4 workers (5N pods,
// run-forever) owned by one `trainyard worker`; its resident memory and Go
// heap then, beside the same worker idle (caches synced, no job) in the
// same run. The pods go with the cluster at the end (leaveClusterEmpty),
// before the sections after this one measure.

type memoryResult struct {
	jobs, pods        int
	idleRSS, idleHeap float64 // MiB
	busyRSS, busyHeap float64 // MiB
	peakRSS           float64 // MiB, VmHWM
	runningAfter      time.Duration
	objectsCached     float64
	workerCPU, pgCPU  float64
}

func measureMemory(tb testing.TB, jobs int) memoryResult {
	var namespaces []string
	leaveClusterEmpty(tb, &namespaces)
	env := harness.Start(tb, harness.Options{Cluster: true, Workers: 1,
		WorkerArgs: []string{"--kube-qps", "2000", "--kube-burst", "4000", "--max-owned-jobs", fmt.Sprint(2 * jobs)}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	addScaleNodes(tb, env.Cluster, 5*jobs/2)
	env.CreateTenant(tb, "mem", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	namespaces = append(namespaces, env.Namespace("mem"))
	waitServiceAccount(tb, env.Cluster.Client(), env.Namespace("mem"), "trainyard-job")
	worker := trainyardProcesses(tb, env.DatabaseURL, 2)[1]
	metricsURL := "http://" + env.Workers[0].WaitFor(tb, metricsLine, time.Minute)[1] + "/metrics"
	mib := func(kib int64) float64 { return float64(kib) / 1024 }
	heap := func() float64 {
		return scrapePrefix(tb, metricsURL, "go_memstats_heap_inuse_bytes")["go_memstats_heap_inuse_bytes"] / (1 << 20)
	}
	res := memoryResult{jobs: jobs, pods: 5 * jobs}
	settle()
	u := peakRSS(tb, []*proc{worker})[0]
	res.idleRSS, res.idleHeap = mib(u.rss), heap()

	client := env.Jobs(tb, env.Token("alice"))
	spec := benchSpecPB()
	for _, r := range spec.Replicas {
		r.PodAnnotations = map[string]string{cluster.AnnotationRunForever: "true"}
	}
	cpu0, _ := cpuSeconds(worker.pid)
	pg0 := postgresSeconds()
	start := time.Now()
	for k := 0; k < jobs; k += 1000 {
		req := &pb.BatchCreateJobsRequest{Parent: harness.TenantName("mem")}
		for i := k; i < min(k+1000, jobs); i++ {
			req.Requests = append(req.Requests, &pb.CreateJobRequest{JobId: fmt.Sprintf("m-%05d", i), Job: &pb.Job{Spec: spec}})
		}
		if _, err := client.BatchCreateJobs(ctx, req); err != nil {
			tb.Fatalf("BatchCreateJobs: %v", err)
		}
	}
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		tb.Fatalf("postgres: %v", err)
	}
	defer conn.Close(context.Background())
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE state = 'RUNNING'`).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		if n == jobs {
			break
		}
		if time.Since(start) > 15*time.Minute {
			tb.Fatalf("%d of %d jobs RUNNING after 15 minutes", n, jobs)
		}
		time.Sleep(time.Second)
	}
	res.runningAfter = time.Since(start)
	cpu1, _ := cpuSeconds(worker.pid)
	res.workerCPU, res.pgCPU = cpu1-cpu0, postgresSeconds()-pg0
	settle()
	u = peakRSS(tb, []*proc{worker})[0]
	res.busyRSS, res.busyHeap, res.peakRSS = mib(u.rss), heap(), mib(u.hwm)
	return res
}

// settle lets the garbage collector catch up before memory is read.
func settle() { time.Sleep(3 * time.Second) }

func benchWorkerMemory(b *testing.B, rep *report) {
	r := measureMemory(b, envInt(b, "TRAINYARD_BENCH_MEMORY_JOBS", 2000))
	b.ReportMetric(r.busyRSS, "worker-RSS-MiB")
	rep.sections = append(rep.sections, r.print)
}

func (r memoryResult) print(out io.Writer) {
	fmt.Fprintf(out, "\nWorker memory (issue 11): %d running jobs of 1 chief + 4 workers (%d pods) owned by one `trainyard worker` (all RUNNING %.0f s after submit; worker CPU %.1f s, Postgres %.1f s meanwhile).\n",
		r.jobs, r.pods, r.runningAfter.Seconds(), r.workerCPU, r.pgCPU)
	fmt.Fprintf(out, "  resident: %.0f MiB (peak %.0f MiB), Go heap in use %.0f MiB; the same worker idle before (baseline): %.0f MiB resident, %.0f MiB heap.\n",
		r.busyRSS, r.peakRSS, r.busyHeap, r.idleRSS, r.idleHeap)
}
