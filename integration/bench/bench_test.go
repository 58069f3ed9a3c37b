//go:build bench || integration

package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// TestMain stops the cluster the bench started and removes the trainyard
// binary the harness built; started as the store section's floor server
// (floor_test.go), it is that server instead.
func TestMain(m *testing.M) {
	if floorMain() {
		return
	}
	harness.Main(m)
}

// config is what the environment can change (see doc.go).
type config struct {
	storeFor    time.Duration // TRAINYARD_BENCH_STORE_FOR
	clients     int           // TRAINYARD_BENCH_CLIENTS
	dispatchFor time.Duration // TRAINYARD_BENCH_DISPATCH_FOR, per path
	blocks      int           // TRAINYARD_BENCH_BLOCKS: dispatchFor is split into this many blocks per path
	rate        float64       // TRAINYARD_BENCH_RATE, sets per second
	drain       time.Duration // TRAINYARD_BENCH_DRAIN: most wait for the last sets after the submits
	quiet       time.Duration // most wait for a quiet cluster after a block (quietTimeout when 0)
	workerArgs  []string      // TRAINYARD_BENCH_WORKER_ARGS: extra `trainyard worker` flags, space-separated
	serveArgs   []string      // TRAINYARD_BENCH_SERVE_ARGS: extra `trainyard serve` flags of the store and batch sections (e.g. --pprof-addr)
	seeded      []int         // TRAINYARD_BENCH_SEEDED: finished pods in the tenant's namespace per level, ascending, comma-separated
}

func loadConfig(b *testing.B) config {
	c := config{storeFor: 5 * time.Second, clients: 32, dispatchFor: 15 * time.Second, blocks: 3, rate: 10, drain: 60 * time.Second,
		seeded: []int{0, 2000, 10000}}
	dur := func(env string, d *time.Duration) {
		if s := os.Getenv(env); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil || v <= 0 {
				b.Fatalf("%s=%q: want a positive duration", env, s)
			}
			*d = v
		}
	}
	dur("TRAINYARD_BENCH_STORE_FOR", &c.storeFor)
	dur("TRAINYARD_BENCH_DISPATCH_FOR", &c.dispatchFor)
	dur("TRAINYARD_BENCH_DRAIN", &c.drain)
	count := func(env string, n *int) {
		if s := os.Getenv(env); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 1 {
				b.Fatalf("%s=%q: want a positive integer", env, s)
			}
			*n = v
		}
	}
	c.workerArgs = strings.Fields(os.Getenv("TRAINYARD_BENCH_WORKER_ARGS"))
	c.serveArgs = strings.Fields(os.Getenv("TRAINYARD_BENCH_SERVE_ARGS"))
	count("TRAINYARD_BENCH_CLIENTS", &c.clients)
	count("TRAINYARD_BENCH_BLOCKS", &c.blocks)
	if s := os.Getenv("TRAINYARD_BENCH_SEEDED"); s != "" {
		c.seeded = nil
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || v < 0 || (len(c.seeded) > 0 && v < c.seeded[len(c.seeded)-1]) {
				b.Fatalf("TRAINYARD_BENCH_SEEDED=%q: want ascending pod counts such as 0,2000,10000", s)
			}
			c.seeded = append(c.seeded, v)
		}
	}
	if s := os.Getenv("TRAINYARD_BENCH_RATE"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 {
			b.Fatalf("TRAINYARD_BENCH_RATE=%q: want a positive number", s)
		}
		c.rate = v
	}
	return c
}

// benchTenant is the tenant every job of the bench belongs to.
const benchTenant = "bench"

// Every job and pod set of the bench is 1 chief + 4 workers. Its pods
// request little: Trainyard's scheduler admits a job only when all its pods
// fit on the nodes now, and the bench measures dispatch, not the cluster's
// capacity. On a loaded machine kwok ends pods tens of seconds late, and
// at 10 jobs/s pods of 1 CPU, even of 100m, then filled the 192
// schedulable CPUs and made jobs wait for earlier ones to end.
const (
	benchImage    = "tensorflow/tensorflow:2.16.1"
	benchCPU      = "10m"
	benchMemory   = "64Mi"
	benchWorkers  = 4
	podsPerJob    = 1 + benchWorkers
	backoffLimit  = job.DefaultBackoffLimit
	benchCommand0 = "python"
	benchCommand1 = "/app/train.py"
)

// benchSpec is the job as the API stores it (defaults applied).
func benchSpec() job.Spec {
	rep := func(t job.ReplicaType, n int32) job.ReplicaSpec {
		return job.ReplicaSpec{Type: t, Count: n, Image: benchImage, Command: []string{benchCommand0, benchCommand1},
			Resources: job.Resources{CPU: benchCPU, Memory: benchMemory}}
	}
	s := job.Spec{
		Replicas:  []job.ReplicaSpec{rep(job.Chief, 1), rep(job.Worker, benchWorkers)},
		RunPolicy: job.RunPolicy{BackoffLimit: backoffLimit},
	}
	s.Default()
	return s
}

// benchSpecPB is benchSpec as a client submits it.
func benchSpecPB() *pb.JobSpec {
	rep := func(t pb.ReplicaType, n int32) *pb.ReplicaSpec {
		return &pb.ReplicaSpec{Type: t, Count: n, Image: benchImage, Command: []string{benchCommand0, benchCommand1},
			Resources: &pb.Resources{Cpu: benchCPU, Memory: benchMemory}}
	}
	return &pb.JobSpec{Replicas: []*pb.ReplicaSpec{
		rep(pb.ReplicaType_REPLICA_TYPE_CHIEF, 1), rep(pb.ReplicaType_REPLICA_TYPE_WORKER, benchWorkers),
	}}
}

// BenchmarkTrainyard runs every measurement next to its baseline and
// prints the comparison table at the end. Run it with -benchtime 1x: each
// sub-benchmark is a fixed-length measurement that ignores b.N.
func BenchmarkTrainyard(b *testing.B) {
	cfg := loadConfig(b)
	rep := newReport(cfg)
	section := func(name string, f func(b *testing.B)) {
		start := time.Now()
		b.Run(name, f)
		rep.took = append(rep.took, sectionTime{name, time.Since(start)})
	}
	section("store", func(b *testing.B) { benchStore(b, cfg, rep) })
	section("noisy", func(b *testing.B) { benchNoisy(b, cfg, rep) })
	section("batch", func(b *testing.B) { benchBatch(b, cfg, rep) })
	section("usage", func(b *testing.B) { benchUsage(b, rep) })
	section("million", func(b *testing.B) { benchMillion(b, rep) })
	section("watchers", func(b *testing.B) { benchFanout(b, rep) })
	section("dispatch", func(b *testing.B) { benchDispatch(b, cfg, rep) })
	section("rates", func(b *testing.B) { benchDispatchRates(b, cfg, rep) })
	section("clusters", func(b *testing.B) { benchClusters(b, cfg, rep) })
	section("webhooks", func(b *testing.B) { benchWebhooks(b, cfg, rep) })
	section("experiments", func(b *testing.B) { benchExperiments(b, rep) })
	// Every section on the cluster leaves it empty when it ends
	// (leaveClusterEmpty: a new cluster, or its pods deleted): the next one
	// starts on the nodes alone.
	section("memory", func(b *testing.B) { benchWorkerMemory(b, rep) })
	section("replicas", func(b *testing.B) { benchReplicas(b, rep) })
	section("admission", func(b *testing.B) { benchAdmission(b, rep) })
	rep.print(os.Stdout)
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// loadavg is /proc/loadavg's first three fields.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	var a, b, c string
	fmt.Sscan(string(data), &a, &b, &c)
	return a + " " + b + " " + c
}
