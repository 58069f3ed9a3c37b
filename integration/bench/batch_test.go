//go:build bench || integration

package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Issue 11's batch submit: BatchCreateJobs of `size` jobs per call, with
// `clients` callers at once, for d; beside store.JobCreateMany of the same
// batches (no gRPC, no validation) and, as the baseline, pgbench inserting
// as many rows like a job's per transaction into a scratch table.

// pgbenchBatchScript inserts :size rows like bench_raw_insert's per
// transaction (one multi-row INSERT).
const pgbenchBatchScript = `INSERT INTO bench_raw_insert (tenant_id, uid, name, spec, status, create_time)
SELECT 'bench', gen_random_uuid(), 'raw-' || gen_random_uuid()::text, :spec, :status, now()
FROM generate_series(1, :size);
`

// batchRow is one path of the batch table.
type batchRow struct {
	path    string
	jobsSec float64
	calls   latencies
}

type batchResult struct {
	size, clients int
	d             time.Duration
	rows          []batchRow
	load          string
}

func measureBatch(tb testing.TB, size, clients int, d time.Duration, serveArgs []string) batchResult {
	env := harness.Start(tb, harness.Options{ServeArgs: serveArgs})
	env.CreateTenant(tb, benchTenant, harness.Subject("alice", pb.Role_ROLE_EDITOR))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, withQuery(env.DatabaseURL, "pool_max_conns", strconv.Itoa(clients+2)))
	if err != nil {
		tb.Fatalf("store: %v", err)
	}
	defer st.Close()
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		tb.Fatalf("postgres: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, scratchTable); err != nil {
		tb.Fatalf("scratch table: %v", err)
	}
	res := batchResult{size: size, clients: clients, d: d, load: loadavg()}

	var seq atomic.Int64
	spec, specPB := benchSpec(), benchSpecPB()
	jobs := env.Jobs(tb, env.Token("alice"))
	grpcBatch := func(ctx context.Context, _ int) error {
		req := &pb.BatchCreateJobsRequest{Parent: harness.TenantName(benchTenant)}
		for range size {
			id := fmt.Sprintf("api-%08d", seq.Add(1))
			req.Requests = append(req.Requests, &pb.CreateJobRequest{JobId: id, RequestId: id, Job: &pb.Job{Spec: specPB}})
		}
		_, err := jobs.BatchCreateJobs(ctx, req)
		return err
	}
	storeBatch := func(ctx context.Context, _ int) error {
		items := make([]store.JobCreateParams, size)
		for i := range items {
			id := fmt.Sprintf("st-%08d", seq.Add(1))
			items[i] = store.JobCreateParams{Job: job.Job{Tenant: benchTenant, Name: id, Spec: spec, Creator: "alice"}, RequestID: id}
		}
		_, err := st.JobCreateMany(ctx, benchTenant, items)
		return err
	}
	// Warm up, then give pgbench the JSON the store wrote.
	if err := grpcBatch(ctx, 0); err != nil {
		tb.Fatalf("BatchCreateJobs: %v", err)
	}
	var specJSON, statusJSON string
	if err := conn.QueryRow(ctx, `SELECT spec::text, status::text FROM jobs LIMIT 1`).Scan(&specJSON, &statusJSON); err != nil {
		tb.Fatal(err)
	}
	script := filepath.Join(tb.TempDir(), "batch.sql")
	if err := os.WriteFile(script, []byte(pgbenchBatchScript), 0o600); err != nil {
		tb.Fatal(err)
	}
	lat, tps := runPgbench(tb, env.DatabaseURL, script, clients, d, specJSON, statusJSON, "--define=size="+strconv.Itoa(size))
	res.rows = append(res.rows, batchRow{"pgbench multi-row INSERT (baseline)", tps * float64(size), lat})
	lat, perSec := runFor(tb, clients, d, storeBatch)
	res.rows = append(res.rows, batchRow{"store.JobCreateMany", perSec * float64(size), lat})
	lat, perSec = runFor(tb, clients, d, grpcBatch)
	res.rows = append(res.rows, batchRow{"gRPC BatchCreateJobs (serve)", perSec * float64(size), lat})
	return res
}

func benchBatch(b *testing.B, cfg config, rep *report) {
	r := measureBatch(b, store.MaxBatchCreate, 2, cfg.storeFor, cfg.serveArgs)
	b.ReportMetric(r.rows[len(r.rows)-1].jobsSec, "jobs/s")
	rep.sections = append(rep.sections, r.print)
}

func (r batchResult) print(out io.Writer) {
	fmt.Fprintf(out, "\nBatch submit (issue 11): %d jobs (1 chief + 4 workers each, every one with a request id) per call, %d callers at once, %s per path; load average %s at start\n",
		r.size, r.clients, r.d, r.load)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "path\tjobs/s\tvs baseline\tcall p50 ms\tcall p99 ms\t\n")
	for _, row := range r.rows {
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.1f\t%.1f\t\n", row.path, row.jobsSec, ratio(row.jobsSec, r.rows[0].jobsSec), ms(row.calls.p50), ms(row.calls.p99))
	}
	tw.Flush()
}
