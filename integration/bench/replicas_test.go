//go:build bench || integration

package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Issue 11's replicas: the same load on one API server and one worker, then
// on three of each, over one Postgres and the same cluster.
//
//	submit    CreateJob from 24 clients (spread over the servers) for d
//	dispatch  N single-pod jobs submitted at once (BatchCreateJobs) until
//	          every pod exists: the workers claim and create them
//
// Every worker's pod creates are added up: one per job, whoever claimed it
// (no job dispatched twice). The machine's CPU is reported beside: on 2
// cores everything shares it, and more processes cannot add CPU.

// replicaDBArgs keep six processes within a shared Postgres's 100
// connections (README, "Connections and PgBouncer").
var replicaDBArgs = []string{"--db-max-conns", "8"}

type replicaRun struct {
	servers, workers int
	submitPerSec     float64
	dispatchPerSec   float64
	dispatchFor      time.Duration
	podCreates       float64
	perWorker        []float64 // jobs claimed by each worker
	busy             float64   // machine busy %, dispatch phase
}

type replicasResult struct {
	jobs int
	runs []replicaRun
}

func measureReplicas(tb testing.TB, jobs int, d time.Duration) replicasResult {
	res := replicasResult{jobs: jobs}
	for _, n := range []int{1, 3} {
		res.runs = append(res.runs, replicaRunOf(tb, n, jobs, d))
	}
	return res
}

func replicaRunOf(tb testing.TB, n, jobs int, d time.Duration) replicaRun {
	run := replicaRun{servers: n, workers: n}
	// Submit, on servers alone: without a worker no scheduler runs, and
	// the jobs stay queued.
	run.submitPerSec = submitRate(tb, n, d)

	var namespaces []string
	leaveClusterEmpty(tb, &namespaces)
	env := harness.Start(tb, harness.Options{Cluster: true, Workers: n, ServeArgs: replicaDBArgs,
		WorkerArgs: append(slices.Clone(admissionWorkerArgs), replicaDBArgs...)})
	addScaleNodes(tb, env.Cluster, jobs)
	clients := replicaClients(tb, env, n)
	tenant := fmt.Sprintf("rep-%d", n)
	env.CreateTenant(tb, tenant, harness.Subject("alice", pb.Role_ROLE_EDITOR))
	namespaces = append(namespaces, env.Namespace(tenant))
	waitServiceAccount(tb, env.Cluster.Client(), env.Namespace(tenant), "trainyard-job")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// Dispatch.
	seen := startFirstSeen(ctx, tb, env.Cluster.RESTConfig(), env.NamespacePrefix)
	var metricsURLs []string
	for _, w := range env.Workers {
		metricsURLs = append(metricsURLs, "http://"+w.WaitFor(tb, metricsLine, time.Minute)[1]+"/metrics")
	}
	before := make([]map[string]float64, len(metricsURLs))
	for i, u := range metricsURLs {
		before[i] = scrape(tb, u)
	}
	spec := admissionSpecPB()
	b0, t0 := machineBusy()
	start := time.Now()
	for k := 0; k < jobs; k += 1000 {
		req := &pb.BatchCreateJobsRequest{Parent: harness.TenantName(tenant)}
		for i := k; i < min(k+1000, jobs); i++ {
			req.Requests = append(req.Requests, &pb.CreateJobRequest{JobId: fmt.Sprintf("d-%06d", i), Job: &pb.Job{Spec: spec}})
		}
		if _, err := clients[(k/1000)%len(clients)].BatchCreateJobs(ctx, req); err != nil {
			tb.Fatalf("BatchCreateJobs: %v", err)
		}
	}
	run.dispatchFor = seen.waitFor(tb, "d-", jobs, start, 10*time.Minute)
	b1, t1 := machineBusy()
	if t1 > t0 {
		run.busy = 100 * float64(b1-b0) / float64(t1-t0)
	}
	run.dispatchPerSec = perSecond(jobs, run.dispatchFor)
	for _, m := range settledMetrics(tb, metricsURLs, before, float64(jobs)) {
		run.podCreates += m[podCreatesSeries]
		run.perWorker = append(run.perWorker, m["trainyard_worker_jobs_claimed_total"])
	}
	return run
}

// replicaClients starts servers up to n on env and returns a client of each.
func replicaClients(tb testing.TB, env *harness.Env, n int) []pb.JobServiceClient {
	addrs := []string{env.GRPCAddr}
	for len(addrs) < n {
		_, addr, _ := env.StartServer(tb)
		addrs = append(addrs, addr)
	}
	token := env.Token("alice")
	clients := make([]pb.JobServiceClient, len(addrs))
	for i, a := range addrs {
		clients[i] = pb.NewJobServiceClient(harness.Dial(tb, a, token))
	}
	return clients
}

// submitRate is CreateJob's rate from 24 clients over n API servers.
func submitRate(tb testing.TB, n int, d time.Duration) float64 {
	env := harness.Start(tb, harness.Options{ServeArgs: replicaDBArgs})
	clients := replicaClients(tb, env, n)
	env.CreateTenant(tb, "submit", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	var seq atomic.Int64
	spec := benchSpecPB()
	_, perSec := runFor(tb, 24, d, func(ctx context.Context, c int) error {
		_, err := clients[c%len(clients)].CreateJob(ctx, &pb.CreateJobRequest{Parent: harness.TenantName("submit"),
			JobId: fmt.Sprintf("s-%06d", seq.Add(1)), Job: &pb.Job{Spec: spec}})
		return err
	})
	return perSec
}

func benchReplicas(b *testing.B, rep *report) {
	r := measureReplicas(b, envInt(b, "TRAINYARD_BENCH_REPLICA_JOBS", 3000), 5*time.Second)
	b.ReportMetric(r.runs[1].submitPerSec/r.runs[0].submitPerSec, "submit-ratio")
	b.ReportMetric(r.runs[1].dispatchPerSec/r.runs[0].dispatchPerSec, "dispatch-ratio")
	rep.sections = append(rep.sections, r.print)
}

func (r replicasResult) print(out io.Writer) {
	fmt.Fprintf(out, "\nReplicas (issue 11): one API server and one worker, then three of each, over one Postgres and the same cluster.\n")
	fmt.Fprintf(out, "Submit: CreateJob from 24 clients spread over the servers. Dispatch: %d single-pod jobs at once until every pod exists.\n", r.jobs)
	for _, run := range r.runs {
		var claimed []string
		for _, c := range run.perWorker {
			claimed = append(claimed, fmt.Sprintf("%.0f", c))
		}
		fmt.Fprintf(out, "  %d+%d: submit %.0f/s (%s of 1+1); dispatch %.0f jobs/s in %.1f s (%s of 1+1), jobs claimed per worker %s, pod creates %.0f for %d jobs; machine busy %.0f%%\n",
			run.servers, run.workers, run.submitPerSec, ratio(run.submitPerSec, r.runs[0].submitPerSec),
			run.dispatchPerSec, run.dispatchFor.Seconds(), ratio(run.dispatchPerSec, r.runs[0].dispatchPerSec),
			strings.Join(claimed, " / "), run.podCreates, r.jobs, run.busy)
	}
}
