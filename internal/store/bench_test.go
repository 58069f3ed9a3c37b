//go:build integration

package store

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// Benchmarks run only under -bench (make bench). JobList's table is filled
// with TRAINYARD_BENCH_ROWS jobs (default 1,000,000) by one generate_series
// INSERT, so the numbers can be compared with pgbench running the same SQL.

func benchRows(b *testing.B) int {
	if s := os.Getenv("TRAINYARD_BENCH_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(b, err, "TRAINYARD_BENCH_ROWS")
		return n
	}
	return 1_000_000
}

func BenchmarkJobCreate(b *testing.B) {
	tb := setup(b)
	tb.tenantCreate(b, "bench")
	b.Run("serial", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			_, _, err := tb.store.JobCreate(tb.ctx, JobCreateParams{
				Job: job.Job{Tenant: "bench", Name: fmt.Sprintf("serial-%d", i), Spec: testSpec()}})
			require.NoError(b, err)
		}
	})
	b.Run("parallel-with-request-id", func(b *testing.B) {
		var n atomic.Int64
		sent := tb.store.creates.sent.Load()
		b.SetParallelism(4) // 8 callers on 2 cores, as make bench's 8 clients
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				_, _, err := tb.store.JobCreate(tb.ctx, JobCreateParams{
					Job:       job.Job{Tenant: "bench", Name: fmt.Sprintf("par-%d", i), Spec: testSpec()},
					RequestID: fmt.Sprintf("req-%d", i)})
				require.NoError(b, err)
			}
		})
		b.ReportMetric(float64(n.Load())/float64(tb.store.creates.sent.Load()-sent), "jobs/statement")
	})
}

func BenchmarkJobList(b *testing.B) {
	tb := setup(b)
	tb.tenantCreate(b, "big")
	tb.tenantCreate(b, "other")
	rows := benchRows(b)
	start := time.Now()
	require.NoError(b, jobsBulkInsert(tb.ctx, tb.pool, "big", rows))
	require.NoError(b, jobsBulkInsert(tb.ctx, tb.pool, "other", rows/10))
	tb.exec(b, "VACUUM ANALYZE jobs")
	b.Logf("inserted %d jobs in %s", rows+rows/10, time.Since(start).Round(time.Millisecond))

	var maxSeq int64
	require.NoError(b, tb.pool.QueryRow(tb.ctx, `SELECT max(seq) FROM jobs WHERE tenant_id = 'big'`).Scan(&maxSeq))
	cases := []struct {
		name string
		p    JobListParams
	}{
		{"first-page", JobListParams{}},
		{"deep-page", JobListParams{Before: maxSeq / 20}},
		{"state", JobListParams{States: []job.State{job.Running}}},
		{"state-deep-page", JobListParams{States: []job.State{job.Running}, Before: maxSeq / 20}},
		{"three-states", JobListParams{States: []job.State{job.Queued, job.Running, job.Restarting}}},
		{"label", JobListParams{LabelEquals: map[string]string{"team": "team-3"}}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				page, err := tb.store.JobList(tb.ctx, "big", tc.p)
				require.NoError(b, err)
				require.NotEmpty(b, page.Jobs)
			}
		})
	}
}

func BenchmarkJobClaim(b *testing.B) {
	tb := setup(b)
	tb.tenantCreate(b, "q")
	require.NoError(b, jobsBulkInsert(tb.ctx, tb.pool, "q", 100_000))
	tb.exec(b, "VACUUM ANALYZE jobs")
	// Each claim takes the next 10 jobs of the queue; between claims
	// (untimed) the claimed jobs finish and leave the queue, as they would
	// once run. Owned jobs are in neither of the claim's indexes (see
	// sqlJobClaim), so keeping them would not change the cost either.
	for b.Loop() {
		keys, err := tb.store.JobClaim(tb.ctx, "bench-worker", 10, time.Minute)
		require.NoError(b, err)
		require.NotEmpty(b, keys)
		b.StopTimer()
		tb.exec(b, `UPDATE jobs SET active = false, worker_id = NULL
			WHERE worker_id = 'bench-worker'`)
		b.StartTimer()
	}
}

// BenchmarkJobSave saves claimed jobs as their first pass does (STARTING,
// one event), from 32 callers as a worker's reconcile goroutines, each job
// once.
func BenchmarkJobSave(b *testing.B) {
	tb := setup(b)
	tb.tenantCreate(b, "save")
	require.NoError(b, jobsBulkInsert(tb.ctx, tb.pool, "save", b.N))
	tb.exec(b, `UPDATE jobs SET state = 'QUEUED', status = '{"state":"QUEUED"}',
		active = true, admitted = true, claim_after = '-infinity' WHERE tenant_id = 'save'`)
	tb.exec(b, "VACUUM ANALYZE jobs")
	jobs, err := tb.store.JobClaim(tb.ctx, "bench-worker", b.N, time.Hour)
	require.NoError(b, err)
	require.Len(b, jobs, b.N)
	var next atomic.Int64
	sent := tb.store.saves.sent.Load()
	b.SetParallelism(16) // 32 callers on 2 cores, as a worker's reconcile goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w := jobs[next.Add(1)-1]
			status := w.Job.Status
			status.State = job.Starting
			_, err := tb.store.JobSave(tb.ctx, JobSaveParams{WorkerID: "bench-worker", Tenant: "save",
				UID: w.Job.UID, Version: w.Version, Status: status,
				Events: []job.Event{{Reason: "Starting", Message: "creating 1 pod"}}})
			require.NoError(b, err)
		}
	})
	b.ReportMetric(float64(b.N)/float64(tb.store.saves.sent.Load()-sent), "saves/statement")
}
