//go:build bench || integration

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Issue 11's million jobs: the bench seeds N jobs over 100 tenants (half of
// them in one, "big") with COPY, each with its Queued event, and reads them
// through `trainyard serve` over gRPC as users do. Every read is timed
// `reads` times in a row; the baseline is pgbench-like: the same GetJob
// row read with one SQL statement over one connection.

const bigTenant = "big"

// seedState is the state of the i-th seeded job: mostly finished, as a
// long-lived installation is.
func seedState(i int) job.State {
	switch i % 200 {
	case 0:
		return job.Running
	case 1:
		return job.Queued
	}
	switch i % 100 {
	case 2, 3, 4:
		return job.Failed
	case 5, 6:
		return job.Cancelled
	}
	return job.Succeeded
}

var seedTeams = []string{"vision", "nlp", "speech", "rec", "rl", "search", "ads", "infra"}

// seedJobs COPYs n jobs (n/2 in bigTenant, the rest over 99 more tenants)
// and one event per job; events older than half the jobs are dated a month
// back, for retention. It returns how long it took.
func seedJobs(ctx context.Context, tb testing.TB, env *harness.Env, n int) time.Duration {
	start := time.Now()
	tenants := []string{bigTenant}
	for i := 1; i < 100; i++ {
		tenants = append(tenants, fmt.Sprintf("t%02d", i))
	}
	for _, t := range tenants {
		env.CreateTenant(tb, t, harness.Subject("alice", pb.Role_ROLE_EDITOR))
	}
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		tb.Fatalf("postgres: %v", err)
	}
	defer conn.Close(context.Background())

	spec := job.Spec{Replicas: []job.ReplicaSpec{{Type: job.Worker, Count: 2, Image: benchImage,
		Command: []string{benchCommand0, benchCommand1}, Resources: job.Resources{CPU: "1", Memory: "1Gi"}}}}
	spec.Default()
	specJSON, _ := json.Marshal(spec)
	statusJSON := map[job.State][]byte{}
	old, now := time.Now().Add(-30*24*time.Hour), time.Now()
	jobRows := make([][]any, 0, n)
	eventRows := make([][]any, 0, n)
	for i := range n {
		t := bigTenant
		if i%2 == 1 {
			t = tenants[1+(i/2)%99]
		}
		// Attributes follow the job's place in its tenant (k), not i:
		// the big tenant holds only even i, and i%20 would give it only
		// the even creators.
		k := i / 2
		st := seedState(k)
		if statusJSON[st] == nil {
			statusJSON[st], _ = json.Marshal(job.Status{State: st})
		}
		at := now
		if i < n/2 {
			at = old
		}
		uid := uuid.Must(uuid.NewV7()).String()
		name := fmt.Sprintf("j-%07d", i)
		labels, _ := json.Marshal(map[string]string{"team": seedTeams[k%len(seedTeams)], "exp": fmt.Sprintf("e%d", k%1000)})
		jobRows = append(jobRows, []any{t, uid, name, labels, fmt.Sprintf("user-%02d", k%20), specJSON, statusJSON[st], string(st),
			at, at, at, !st.Final(), st != job.Queued, claimAfter(st)})
		eventRows = append(eventRows, []any{int64(i + 1), t, uid, name, "Normal", "Queued", "job submitted", "QUEUED", at})
	}
	// As a bulk load is done: the tables' indexes (all but those behind a
	// constraint) go before the COPYs and are built after them, each in
	// one sort instead of a million inserts (the GIN index of labels most
	// of all). The COPYs with the indexes in place took 47 s.
	rebuild := dropIndexes(ctx, tb, conn, "jobs", "job_events")
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"jobs"},
		[]string{"tenant_id", "uid", "name", "labels", "creator", "spec", "status", "state",
			"create_time", "update_time", "queued_at", "active", "admitted", "claim_after"},
		pgx.CopyFromRows(jobRows)); err != nil {
		tb.Fatalf("COPY jobs: %v", err)
	}
	// Explicit ids, far below any transaction's (trainyard_event_id): as
	// old events written before the watermark are.
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"job_events"},
		[]string{"id", "tenant_id", "job_uid", "job_name", "type", "reason", "message", "state", "create_time"},
		pgx.CopyFromRows(eventRows)); err != nil {
		tb.Fatalf("COPY events: %v", err)
	}
	rebuild()
	// One statement each: VACUUM cannot run in the implicit transaction
	// of a multi-statement string.
	for _, table := range []string{"jobs", "job_events"} {
		if _, err := conn.Exec(ctx, `VACUUM ANALYZE `+table); err != nil {
			tb.Fatalf("vacuum %s: %v", table, err)
		}
	}
	return time.Since(start)
}

// claimAfter is the queue column as the store leaves it: waiting jobs are
// the scheduler's ('infinity'), the rest claimable.
func claimAfter(s job.State) pgtype.Timestamptz {
	if s == job.Queued {
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	}
	return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
}

// readRow is one read of the million table.
type readRow struct {
	what string
	lat  latencies
}

type millionResult struct {
	jobs     int
	seedFor  time.Duration
	reads    int
	rows     []readRow
	baseline latencies
	tableMB  int
	load     string
	ret      retentionResult
}

// measureMillion seeds n jobs and times each read reads times.
func measureMillion(tb testing.TB, n, reads int) millionResult {
	env := harness.Start(tb, harness.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	res := millionResult{jobs: n, reads: reads}
	res.seedFor = seedJobs(ctx, tb, env, n)
	res.load = loadavg()
	jobs := env.Jobs(tb, env.Token("alice"))
	parent := harness.TenantName(bigTenant)

	timeIt := func(what string, call func(i int) error) {
		ds := make([]time.Duration, 0, reads)
		for i := range reads {
			t := time.Now()
			if err := call(i); err != nil {
				tb.Fatalf("%s: %v", what, err)
			}
			ds = append(ds, time.Since(t))
		}
		res.rows = append(res.rows, readRow{what, summarize(ds)})
	}
	// deepToken pages 10,000 rows into the filter's listing (or as deep as
	// it goes) and returns the token there.
	deepToken := func(filter string) (string, int) {
		tok, depth := "", 0
		for depth < 10000 {
			resp, err := jobs.ListJobs(ctx, &pb.ListJobsRequest{Parent: parent, Filter: filter, PageSize: 1000, PageToken: tok})
			if err != nil {
				tb.Fatalf("paging %q: %v", filter, err)
			}
			if resp.GetNextPageToken() == "" {
				break
			}
			tok, depth = resp.GetNextPageToken(), depth+len(resp.GetJobs())
		}
		return tok, depth
	}
	for _, f := range []struct{ what, filter string }{
		{"no filter", ""},
		{"state = FAILED (3%)", "state = FAILED"},
		{"state = RUNNING (0.5%)", "state = RUNNING"},
		{"label team = vision (12.5%)", `labels.team = "vision"`},
		{"creator = user-07 (5%)", `creator = "user-07"`},
		{"creator = nobody (none)", `creator = "nobody"`},
	} {
		timeIt("ListJobs "+f.what+", first page of 50", func(int) error {
			_, err := jobs.ListJobs(ctx, &pb.ListJobsRequest{Parent: parent, Filter: f.filter, PageSize: 50})
			return err
		})
		tok, depth := deepToken(f.filter)
		timeIt(fmt.Sprintf("ListJobs %s, page of 50 at %d deep", f.what, depth), func(int) error {
			_, err := jobs.ListJobs(ctx, &pb.ListJobsRequest{Parent: parent, Filter: f.filter, PageSize: 50, PageToken: tok})
			return err
		})
	}
	// Jobs of the big tenant have even numbers (seedJobs).
	name := func(i int) string { return harness.JobName(bigTenant, fmt.Sprintf("j-%07d", 2*((i*7919)%(n/2)))) }
	timeIt("GetJob", func(i int) error {
		_, err := jobs.GetJob(ctx, &pb.GetJobRequest{Name: name(i)})
		return err
	})
	timeIt("ListJobEvents", func(i int) error {
		_, err := jobs.ListJobEvents(ctx, &pb.ListJobEventsRequest{Parent: name(i)})
		return err
	})
	// A watch of the big tenant resumed 20 events before its newest: the
	// time to the first event.
	var after int64
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		tb.Fatalf("postgres: %v", err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, `SELECT id FROM job_events WHERE tenant_id = $1 ORDER BY id DESC OFFSET 20 LIMIT 1`, bigTenant).Scan(&after); err != nil {
		tb.Fatal(err)
	}
	timeIt("WatchJobs resumed 20 events back: first event", func(int) error {
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		stream, err := jobs.WatchJobs(wctx, &pb.WatchJobsRequest{Parent: parent, AfterEventId: after})
		if err != nil {
			return err
		}
		_, err = stream.Recv()
		return err
	})
	// The baseline: GetJob's row by one SQL statement, no server.
	ds := make([]time.Duration, 0, reads)
	for i := range reads {
		t := time.Now()
		var spec, status []byte
		if err := conn.QueryRow(ctx, `SELECT spec, status FROM jobs WHERE tenant_id = $1 AND name = $2 AND NOT deleted`,
			bigTenant, strings.TrimPrefix(name(i), parent+"/jobs/")).Scan(&spec, &status); err != nil {
			tb.Fatal(err)
		}
		ds = append(ds, time.Since(t))
	}
	res.baseline = summarize(ds)
	if err := conn.QueryRow(ctx, `SELECT (pg_total_relation_size('jobs') + pg_total_relation_size('job_events')) >> 20`).Scan(&res.tableMB); err != nil {
		tb.Fatal(err)
	}
	res.ret = measureRetention(ctx, tb, env)
	return res
}

func benchMillion(b *testing.B, rep *report) {
	r := measureMillion(b, envInt(b, "TRAINYARD_BENCH_MILLION_JOBS", 1_000_000), 200)
	worst := time.Duration(0)
	for _, row := range r.rows {
		worst = max(worst, row.lat.p99)
	}
	b.ReportMetric(ms(worst), "worst-p99-ms")
	rep.sections = append(rep.sections, r.print)
}

func (r millionResult) print(out io.Writer) {
	fmt.Fprintf(out, "\nA million jobs (issue 11): %d jobs over 100 tenants, %d in tenant %q, with one event each (COPY, %s; jobs + events %d MB); load average %s\n",
		r.jobs, r.jobs/2, bigTenant, r.seedFor.Round(time.Second), r.tableMB, r.load)
	fmt.Fprintf(out, "Reads of tenant %q through `trainyard serve` over gRPC, each %d times in a row:\n", bigTenant, r.reads)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "read\tp50 ms\tp99 ms\tmax ms\tp99 vs baseline\t\n")
	fmt.Fprintf(tw, "baseline: GetJob's row by one SQL SELECT (pgx, no server)\t%.2f\t%.2f\t%.2f\t1.00×\t\n", ms(r.baseline.p50), ms(r.baseline.p99), ms(r.baseline.max))
	for _, row := range r.rows {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%s\t\n", row.what, ms(row.lat.p50), ms(row.lat.p99), ms(row.lat.max), ratio(ms(row.lat.p99), ms(r.baseline.p99)))
	}
	tw.Flush()
	r.ret.print(out)
}

// retentionResult is event retention over the seeded table, with a writer
// creating jobs meanwhile.
type retentionResult struct {
	deleted       int64
	took          time.Duration
	before, while latencies // the writer's JobCreate calls
}

// measureRetention deletes the events older than a week (half of them,
// seeded a month back) as --event-retention would, while one client
// creates jobs; the creates before it are the baseline.
func measureRetention(ctx context.Context, tb testing.TB, env *harness.Env) retentionResult {
	st, err := store.Open(ctx, env.DatabaseURL)
	if err != nil {
		tb.Fatalf("store: %v", err)
	}
	defer st.Close()
	spec := benchSpec()
	n := 0
	create := func() time.Duration {
		n++
		t := time.Now()
		if _, _, err := st.JobCreate(ctx, store.JobCreateParams{Job: job.Job{Tenant: bigTenant, Name: fmt.Sprintf("ret-%06d", n), Spec: spec}}); err != nil {
			tb.Fatalf("JobCreate: %v", err)
		}
		return time.Since(t)
	}
	var res retentionResult
	var before []time.Duration
	for range 200 {
		before = append(before, create())
	}
	res.before = summarize(before)
	done := make(chan struct{})
	var while []time.Duration
	go func() {
		defer close(done)
		start := time.Now()
		res.deleted, err = st.EventDeleteBefore(ctx, time.Now().Add(-7*24*time.Hour), store.DefaultRetentionBatch)
		res.took = time.Since(start)
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			while = append(while, create())
		}
	}
	if err != nil {
		tb.Fatalf("EventDeleteBefore: %v", err)
	}
	res.while = summarize(while)
	return res
}

func (r retentionResult) print(out io.Writer) {
	fmt.Fprintf(out, "Event retention (--event-retention, %d rows per statement): %d events deleted in %.1f s (%.0f/s). One client's JobCreate meanwhile: p50 %.2f ms, p99 %.2f ms (%d calls); before it: p50 %.2f ms, p99 %.2f ms.\n",
		store.DefaultRetentionBatch, r.deleted, r.took.Seconds(), float64(r.deleted)/max(r.took.Seconds(), 1e-9),
		ms(r.while.p50), ms(r.while.p99), r.while.n, ms(r.before.p50), ms(r.before.p99))
}

// dropIndexes drops the indexes of tables that no constraint owns and
// returns the function that builds them again from their definitions.
func dropIndexes(ctx context.Context, tb testing.TB, conn *pgx.Conn, tables ...string) (rebuild func()) {
	const list = `
SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
FROM pg_index i
WHERE i.indrelid = ANY (SELECT to_regclass(t) FROM unnest($1::text[]) t)
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
ORDER BY 1`
	rows, err := conn.Query(ctx, list, tables)
	if err != nil {
		tb.Fatalf("indexes: %v", err)
	}
	type index struct{ Name, Def string }
	indexes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[index])
	if err != nil {
		tb.Fatalf("indexes: %v", err)
	}
	for _, ix := range indexes {
		if _, err := conn.Exec(ctx, `DROP INDEX `+ix.Name); err != nil {
			tb.Fatalf("drop index %s: %v", ix.Name, err)
		}
	}
	return func() {
		if _, err := conn.Exec(ctx, `SET maintenance_work_mem = '256MB'`); err != nil {
			tb.Fatalf("maintenance_work_mem: %v", err)
		}
		for _, ix := range indexes {
			if _, err := conn.Exec(ctx, ix.Def); err != nil {
				tb.Fatalf("%s: %v", ix.Def, err)
			}
		}
		rows, err := conn.Query(ctx, list, tables)
		if err != nil {
			tb.Fatalf("indexes: %v", err)
		}
		if after, err := pgx.CollectRows(rows, pgx.RowToStructByPos[index]); err != nil || !slices.Equal(after, indexes) {
			tb.Fatalf("indexes after the rebuild: %v (err %v), want %v", after, err, indexes)
		}
	}
}
