//go:build bench || integration

package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Issue 44's usage query: a year of hourly ledger rows for 100 tenants
// (two creator and label sets a tenant-hour: 1,752,000 rows of
// usage_hourly, and their sums per day in usage_daily, as the rollup
// writes them), then QueryUsage through gRPC — a tenant's year by day,
// grouped by label:team, as its viewer; and the platform's year by day
// (tenants/-) — beside the baseline: the plain SQL aggregate of the same
// rows (one tenant's year by day and team) on a pgx connection. The
// platform's year reads every row (1.75 million): seconds, not
// milliseconds; measured a few times for the record.

// usageSize is how much the section seeds and asks.
type usageSize struct{ tenants, days, queries int }

// usageFull is the section's size in make bench; the smoke test's is tiny.
var usageFull = usageSize{tenants: 100, days: 365, queries: 200}

type usageResult struct {
	size                     usageSize
	rows                     int64
	seed                     time.Duration
	api, sql, platform, psql latencies
	load                     string
}

func benchUsage(b *testing.B, rep *report) {
	res := measureUsage(b, usageFull)
	res.api.report(b, "api-")
	res.sql.report(b, "sql-")
	rep.sections = append(rep.sections, res.print)
}

func measureUsage(tb testing.TB, size usageSize) usageResult {
	usageTenants, usageDays, usageQueries := size.tenants, size.days, size.queries
	env := harness.Start(tb, harness.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		tb.Fatalf("postgres: %v", err)
	}
	defer conn.Close(context.Background())
	for i := range usageTenants {
		env.CreateTenant(tb, fmt.Sprintf("u%03d", i), harness.Subject("viewer", pb.Role_ROLE_VIEWER))
	}
	end := time.Now().UTC().Truncate(24 * time.Hour)
	start := end.AddDate(0, 0, -usageDays)
	began := time.Now()
	tag, err := conn.Exec(ctx, `
		INSERT INTO usage_hourly (tenant_id, hour, creator, labels, gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds)
		SELECT 'u' || lpad(t::text, 3, '0'), h, g.creator, g.labels, 3600 * (1 + (t + g.n) % 8), 3600 * 4, 3600 * 16 * 2^30, 3600 * 2
		FROM generate_series(0, $3 - 1) t,
		     generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', interval '1 hour') h,
		     (VALUES (0, 'alice', '{"team": "vision"}'::jsonb), (1, 'bob', '{"team": "nlp"}'::jsonb)) g(n, creator, labels)`,
		start, end, usageTenants)
	if err != nil {
		tb.Fatalf("seed: %v", err)
	}
	// The rollup writes each hour's figures to usage_daily too (migration
	// 000018): the days are the sums of the hours.
	if _, err := conn.Exec(ctx, `
		INSERT INTO usage_daily (tenant_id, day, creator, labels, gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds)
		SELECT tenant_id, date_trunc('day', hour, 'UTC'), creator, labels,
		       sum(gpu_seconds), sum(cpu_seconds), sum(memory_byte_seconds), sum(pod_seconds)
		FROM usage_hourly GROUP BY 1, 2, 3, 4`); err != nil {
		tb.Fatalf("seed days: %v", err)
	}
	// What autovacuum does for an insert-mostly table: the visibility map
	// lets the query scan the index only.
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE usage_hourly, usage_daily`); err != nil {
		tb.Fatalf("analyze: %v", err)
	}
	res := usageResult{size: size, rows: tag.RowsAffected(), seed: time.Since(began)}

	usage := pb.NewUsageServiceClient(env.Conn(tb, env.Token("viewer")))
	admin := pb.NewUsageServiceClient(env.Conn(tb, env.AdminToken()))
	rng := rand.New(rand.NewPCG(44, 44))
	var api, sql, platform, psql []time.Duration
	for i := range usageQueries {
		tenant := fmt.Sprintf("u%03d", rng.IntN(usageTenants))
		t0 := time.Now()
		resp, err := usage.QueryUsage(ctx, &pb.QueryUsageRequest{Parent: harness.TenantName(tenant),
			Start: timestamppb.New(start), End: timestamppb.New(end), Step: "1d", GroupBy: "label:team"})
		if err != nil {
			tb.Fatalf("QueryUsage: %v", err)
		}
		api = append(api, time.Since(t0))
		if len(resp.GetRows()) != 2*usageDays {
			tb.Fatalf("QueryUsage: %d rows, want %d", len(resp.GetRows()), 2*usageDays)
		}
		t0 = time.Now()
		rows, err := conn.Query(ctx, `
			SELECT date_trunc('day', hour, 'UTC'), labels->>'team', sum(gpu_seconds), sum(cpu_seconds), sum(memory_byte_seconds)
			FROM usage_hourly WHERE tenant_id = $1 AND hour >= $2 AND hour < $3
			GROUP BY 1, 2 ORDER BY 1, 2`, tenant, start, end)
		if err != nil {
			tb.Fatalf("sql: %v", err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		sql = append(sql, time.Since(t0))
		if n != 2*usageDays {
			tb.Fatalf("sql: %d rows", n)
		}
		if i%50 == 0 { // the platform's year: every tenant's rows (seconds: a scan of them all)
			t0 = time.Now()
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Minute)
			_, err := admin.QueryUsage(pctx, &pb.QueryUsageRequest{Parent: "tenants/-",
				Start: timestamppb.New(start), End: timestamppb.New(end), Step: "1d"}, grpc.MaxCallRecvMsgSize(64<<20))
			pcancel()
			if err != nil {
				tb.Fatalf("QueryUsage tenants/-: %v", err)
			}
			platform = append(platform, time.Since(t0))
			t0 = time.Now()
			if _, err := conn.Exec(ctx, `SELECT date_trunc('day', hour, 'UTC'), tenant_id, sum(gpu_seconds), sum(cpu_seconds), sum(memory_byte_seconds)
				FROM usage_hourly WHERE hour >= $1 AND hour < $2 GROUP BY 1, 2`, start, end); err != nil {
				tb.Fatalf("sql platform: %v", err)
			}
			psql = append(psql, time.Since(t0))
		}
	}
	res.api, res.sql, res.platform, res.psql = summarize(api), summarize(sql), summarize(platform), summarize(psql)
	res.load = loadavg()
	return res
}

func (r usageResult) print(out io.Writer) {
	fmt.Fprintf(out, "\nUsage: %d days of hourly ledger rows for %d tenants (%d rows, seeded in %s); loadavg %s (QueryUsage's bound: p99 under 100 ms)\n",
		r.size.days, r.size.tenants, r.rows, r.seed.Round(time.Second), r.load)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "query\tn\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	row := func(name string, l latencies) {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", name, l.n, ms(l.p50), ms(l.p90), ms(l.p99), ms(l.max))
	}
	row("QueryUsage: a tenant's year by day and label:team (gRPC)", r.api)
	row("baseline: the same aggregate in plain SQL", r.sql)
	row("QueryUsage tenants/-: every tenant's year by day (gRPC)", r.platform)
	row("baseline: the same aggregate in plain SQL", r.psql)
	_ = tw.Flush()
}

// TestUsageSmoke runs the usage section small (make test): the queries
// answer every bucket; the bound is make bench's to check.
func TestUsageSmoke(t *testing.T) {
	res := measureUsage(t, usageSize{tenants: 3, days: 10, queries: 10})
	res.print(testWriter{t})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
