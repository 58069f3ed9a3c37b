//go:build bench || integration

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// scratchTable is the pgbench baseline's table: the columns of a job that
// carry its bytes (tenant, uuid key, name, spec and status JSON, time).
const scratchTable = `CREATE TABLE bench_raw_insert (
	tenant_id   text        NOT NULL,
	uid         uuid        PRIMARY KEY,
	name        text        NOT NULL,
	spec        jsonb       NOT NULL,
	status      jsonb       NOT NULL,
	create_time timestamptz NOT NULL
)`

// pgbenchScript inserts one such row per transaction; :spec and :status
// are the JSON of a job the store created (pgbench -D), sent as parameters
// of a prepared statement as pgx sends them.
const pgbenchScript = `\set n random(1, 2000000000)
INSERT INTO bench_raw_insert (tenant_id, uid, name, spec, status, create_time)
VALUES ('bench', gen_random_uuid(), 'raw-' || (:n)::text, :spec, :status, now());
`

// pgbenchNotifyScript is the same INSERT with a NOTIFY in its transaction,
// as JobCreate sends one: it isolates what NOTIFY costs at commit.
const pgbenchNotifyScript = `\set n random(1, 2000000000)
BEGIN;
INSERT INTO bench_raw_insert (tenant_id, uid, name, spec, status, create_time)
VALUES ('bench', gen_random_uuid(), 'raw-' || (:n)::text, :spec, :status, now());
SELECT pg_notify('bench_raw_insert', (:n)::text);
COMMIT;
`

// baselinePath names the store table's baseline rows.
const baselinePath = "pgbench INSERT (baseline)"

// opResult is one path's run in the store table.
type opResult struct {
	path    string
	clients int
	lat     latencies
	perSec  float64
	load    string
	waits   pgWaits
	// serveCPU is the CPU the server process used per op (serve, or the
	// floor's server: gRPC and REST rows); clientCPU the bench's own.
	serveCPU, clientCPU time.Duration
}

// benchStore runs, in one fresh database behind a real `trainyard serve`:
// pgbench's raw INSERT, store.JobCreate, gRPC and REST CreateJob, and the
// gRPC floor (floor_test.go) with and without authentication, each with 1
// and cfg.clients clients.
func benchStore(b *testing.B, cfg config, rep *report) {
	if _, err := exec.LookPath("pgbench"); err != nil {
		b.Fatalf("the store baseline needs pgbench on PATH: %v", err)
	}
	// The API server alone: no worker takes the jobs. It gives the bench's
	// one tenant as many calls at once as the bench has clients: this
	// section measures what a submit costs, the noisy one what the
	// fairness limit (8 by default) does (issue 47).
	serveArgs := append([]string{"--tenant-concurrency", strconv.Itoa(max(cfg.clients, 8))}, cfg.serveArgs...)
	env := harness.Start(b, harness.Options{ServeArgs: serveArgs})
	env.CreateTenant(b, benchTenant, harness.Subject("alice", pb.Role_ROLE_EDITOR))
	rep.storeDatabase = databaseName(env.DatabaseURL)
	serve := trainyardProcesses(b, env.DatabaseURL, 1)[0]

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, withQuery(env.DatabaseURL, "pool_max_conns", strconv.Itoa(cfg.clients+2)))
	if err != nil {
		b.Fatalf("store: %v", err)
	}
	defer st.Close()
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		b.Fatalf("postgres: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, scratchTable); err != nil {
		b.Fatalf("scratch table: %v", err)
	}

	spec := benchSpec()
	var seq atomic.Int64
	jobCreateIn := func(ctx context.Context, tenantID, prefix string) error {
		_, _, err := st.JobCreate(ctx, store.JobCreateParams{Job: job.Job{
			Tenant: tenantID, Name: fmt.Sprintf("%s-%07d", prefix, seq.Add(1)), Spec: spec, Creator: "alice"}})
		return err
	}
	jobCreate := func(ctx context.Context, prefix string) error { return jobCreateIn(ctx, benchTenant, prefix) }
	// One tenant per client, for the parallel run: JobCreate serializes a
	// tenant's event writes (store doc: "Events"), not different tenants'.
	var tenants []string
	for i := range cfg.clients {
		id := fmt.Sprintf("%s-%d", benchTenant, i)
		if _, err := st.TenantCreate(ctx, tenant.Tenant{ID: id, Namespace: "ty-" + id}); err != nil {
			b.Fatalf("tenant %s: %v", id, err)
		}
		tenants = append(tenants, id)
	}
	jobs := env.Jobs(b, env.Token("alice"))
	specPB := benchSpecPB()
	createJob := func(ctx context.Context, prefix string) error {
		_, err := jobs.CreateJob(ctx, &pb.CreateJobRequest{Parent: harness.TenantName(benchTenant),
			JobId: fmt.Sprintf("%s-%07d", prefix, seq.Add(1)), Job: &pb.Job{Spec: specPB}})
		return err
	}

	// Warm up both paths (connections, prepared statements, the OIDC key
	// set), then give pgbench exactly the JSON the store wrote.
	for range cfg.clients {
		if err := jobCreate(ctx, "warm"); err != nil {
			b.Fatalf("store.JobCreate: %v", err)
		}
		if err := createJob(ctx, "warm"); err != nil {
			b.Fatalf("CreateJob: %v", err)
		}
	}
	// The floor servers answer what serve answers.
	created, err := jobs.CreateJob(ctx, &pb.CreateJobRequest{Parent: harness.TenantName(benchTenant),
		JobId: fmt.Sprintf("floor-%07d", seq.Add(1)), Job: &pb.Job{Spec: specPB}})
	if err != nil {
		b.Fatalf("CreateJob: %v", err)
	}
	floorAddr, floorPid := startFloor(b, created, "")
	floorAuthAddr, floorAuthPid := startFloor(b, created, env.Issuer.URL())
	floorJobs := pb.NewJobServiceClient(harness.Dial(b, floorAddr, env.Token("alice")))
	floorAuthJobs := pb.NewJobServiceClient(harness.Dial(b, floorAuthAddr, env.Token("alice")))
	floorCall := func(c pb.JobServiceClient) func(context.Context, int) error {
		return func(ctx context.Context, _ int) error {
			_, err := c.CreateJob(ctx, &pb.CreateJobRequest{Parent: harness.TenantName(benchTenant),
				JobId: fmt.Sprintf("floor-%07d", seq.Add(1)), Job: &pb.Job{Spec: specPB}})
			return err
		}
	}
	restCreate := restCreateJob(b, env.HTTPURL, env.Token("alice"), specPB, cfg.clients, &seq)
	for _, call := range []func(context.Context, int) error{floorCall(floorJobs), floorCall(floorAuthJobs), restCreate} {
		for range cfg.clients {
			if err := call(ctx, 0); err != nil {
				b.Fatalf("warm-up: %v", err)
			}
		}
	}

	var specJSON, statusJSON string
	if err := conn.QueryRow(ctx, `SELECT spec::text, status::text FROM jobs LIMIT 1`).Scan(&specJSON, &statusJSON); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	script, notifyScript := filepath.Join(dir, "insert.sql"), filepath.Join(dir, "insert-notify.sql")
	for path, text := range map[string]string{script: pgbenchScript, notifyScript: pgbenchNotifyScript} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			b.Fatal(err)
		}
	}

	// row runs one path as a sub-benchmark, sampling what the database's
	// backends do meanwhile.
	// server is the pid whose CPU per op the row reports (0: none).
	row := func(name, path string, clients, server int, run func(*testing.B) (latencies, float64)) {
		b.Run(fmt.Sprintf("%s/clients=%d", name, clients), func(b *testing.B) {
			load := loadavg()
			stop := samplePG(b, env.DatabaseURL)
			cpu0, _ := cpuSeconds(server)
			self0, _ := cpuSeconds(os.Getpid())
			lat, perSec := run(b)
			r := opResult{path: path, clients: clients, lat: lat, perSec: perSec, load: load, waits: stop()}
			cpu1, ok := cpuSeconds(server)
			self1, _ := cpuSeconds(os.Getpid())
			if server != 0 && ok && lat.n > 0 {
				r.serveCPU = time.Duration((cpu1 - cpu0) / float64(lat.n) * float64(time.Second))
				r.clientCPU = time.Duration((self1 - self0) / float64(lat.n) * float64(time.Second))
			}
			rep.store = append(rep.store, reportOps(b, r))
		})
	}
	// 1 client, then 8 and the most (issue 11's 8 and 32).
	for _, clients := range slices.Compact(slices.Sorted(slices.Values([]int{1, min(8, cfg.clients), cfg.clients}))) {
		row("pgbench-insert", baselinePath, clients, 0, func(b *testing.B) (latencies, float64) {
			return runPgbench(b, env.DatabaseURL, script, clients, cfg.storeFor, specJSON, statusJSON)
		})
		row("pgbench-insert-notify", "pgbench INSERT + pg_notify, 1 tx", clients, 0, func(b *testing.B) (latencies, float64) {
			return runPgbench(b, env.DatabaseURL, notifyScript, clients, cfg.storeFor, specJSON, statusJSON)
		})
		row("store-JobCreate", "store.JobCreate", clients, 0, func(b *testing.B) (latencies, float64) {
			return runFor(b, clients, cfg.storeFor, func(ctx context.Context, _ int) error { return jobCreate(ctx, "st") })
		})
		if clients > 1 {
			row("store-JobCreate-tenant-per-client", "store.JobCreate, a tenant per client", clients, 0, func(b *testing.B) (latencies, float64) {
				return runFor(b, clients, cfg.storeFor, func(ctx context.Context, i int) error { return jobCreateIn(ctx, tenants[i], "stt") })
			})
		}
		row("grpc-CreateJob", "gRPC CreateJob (serve)", clients, serve.pid, func(b *testing.B) (latencies, float64) {
			defer profileServe(b, serve, fmt.Sprintf("store-grpc-clients=%d", clients), cfg.storeFor)()
			return runFor(b, clients, cfg.storeFor, func(ctx context.Context, _ int) error { return createJob(ctx, "api") })
		})
		row("rest-CreateJob", "REST CreateJob (serve's gateway)", clients, serve.pid, func(b *testing.B) (latencies, float64) {
			defer profileServe(b, serve, fmt.Sprintf("store-rest-clients=%d", clients), cfg.storeFor)()
			return runFor(b, clients, cfg.storeFor, restCreate)
		})
		row("grpc-floor", "gRPC no-op CreateJob (floor)", clients, floorPid, func(b *testing.B) (latencies, float64) {
			return runFor(b, clients, cfg.storeFor, floorCall(floorJobs))
		})
		row("grpc-floor-auth", "gRPC no-op CreateJob + OIDC (floor)", clients, floorAuthPid, func(b *testing.B) (latencies, float64) {
			return runFor(b, clients, cfg.storeFor, floorCall(floorAuthJobs))
		})
	}

	if err := conn.QueryRow(ctx, `SELECT (SELECT avg(pg_column_size(j.*))::int FROM jobs j),
		(SELECT avg(pg_column_size(e.*))::int FROM job_events e),
		(SELECT avg(pg_column_size(r.*))::int FROM bench_raw_insert r)`).
		Scan(&rep.jobRowBytes, &rep.eventRowBytes, &rep.rawRowBytes); err != nil {
		b.Fatal(err)
	}
}

// reportOps puts r on b and returns it.
func reportOps(b *testing.B, r opResult) opResult {
	b.ReportMetric(float64(r.lat.mean.Nanoseconds()), "ns/op")
	b.ReportMetric(r.perSec, "ops/s")
	b.ReportMetric(ms(r.lat.p50), "p50-ms")
	b.ReportMetric(ms(r.lat.p99), "p99-ms")
	return r
}

// runFor calls op from clients goroutines (op's int is the goroutine's
// index) until d has passed and returns the latency of every call and the
// calls per second.
func runFor(b testing.TB, clients int, d time.Duration, op func(context.Context, int) error) (latencies, float64) {
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		all     []time.Duration
		firstEr error
	)
	start := time.Now()
	deadline := start.Add(d)
	for client := range clients {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t := time.Now()
				if err := op(ctx, client); err != nil {
					mu.Lock()
					if firstEr == nil {
						firstEr = err
					}
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstEr != nil {
		b.Fatalf("after %d calls: %v", len(all), firstEr)
	}
	return summarize(all), float64(len(all)) / elapsed.Seconds()
}

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)

// runPgbench runs the insert script with clients connections for d (whole
// seconds, rounded up; extra are more pgbench flags) and returns the
// per-transaction latencies from its log and its tps.
func runPgbench(b testing.TB, dbURL, script string, clients int, d time.Duration, spec, status string, extra ...string) (latencies, float64) {
	logDir := b.TempDir()
	secs := int(math.Ceil(d.Seconds()))
	args := append([]string{"--no-vacuum", "--protocol=prepared",
		"--file=" + script, "--client=" + strconv.Itoa(clients), "--jobs=" + strconv.Itoa(min(clients, 2)),
		"--time=" + strconv.Itoa(secs), "--log", "--log-prefix=" + filepath.Join(logDir, "tx"),
		"--define=spec=" + spec, "--define=status=" + status}, extra...)
	cmd := exec.Command("pgbench", append(args, dbURL)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		b.Fatalf("pgbench printed no tps:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	lat, err := pgbenchLatencies(logDir)
	if err != nil {
		b.Fatal(err)
	}
	if len(lat) == 0 {
		b.Fatalf("pgbench logged no transactions:\n%s", out)
	}
	return summarize(lat), tps
}

// pgbenchLatencies reads every per-transaction log in dir: the third field
// of a line is the transaction's latency in microseconds.
func pgbenchLatencies(dir string) ([]time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "tx.*"))
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 3 {
				continue
			}
			us, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				fh.Close()
				return nil, fmt.Errorf("%s: %q: %v", f, sc.Text(), err)
			}
			out = append(out, time.Duration(us)*time.Microsecond)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// withQuery sets one query parameter of a postgres:// URL.
func withQuery(raw, key, value string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// databaseName is the database of a postgres:// URL.
func databaseName(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return strings.TrimPrefix(u.Path, "/")
	}
	return "?"
}

// restCreateJob returns a REST CreateJob call through serve's gateway, on
// a client that keeps a connection per bench client.
func restCreateJob(b *testing.B, base, token string, spec *pb.JobSpec, clients int, seq *atomic.Int64) func(context.Context, int) error {
	body, err := protojson.Marshal(&pb.Job{Spec: spec})
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients + 1}}
	b.Cleanup(client.CloseIdleConnections)
	return func(ctx context.Context, _ int) error {
		u := fmt.Sprintf("%s/v1/tenants/%s/jobs?jobId=rest-%07d", base, benchTenant, seq.Add(1))
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("REST CreateJob: %s", resp.Status)
		}
		return nil
	}
}
