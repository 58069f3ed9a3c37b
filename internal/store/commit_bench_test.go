//go:build integration

package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// BenchmarkSchedulerCommitAdmit times a scheduler commit that admits a
// cycle's jobs (1 and 64), the commit that opens their spans in the usage
// ledger (issue 44: the ledger may add at most 5 % to it). Run at this
// commit and at the one before the ledger to compare.
func BenchmarkSchedulerCommitAdmit(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			tb := setup(b)
			tb.tenantCreate(b, "bench")
			lease := tb.lease(b)
			seq := 0
			for b.Loop() {
				b.StopTimer()
				items := make([]JobCreateParams, n)
				for i := range items {
					seq++
					items[i] = JobCreateParams{Job: job.Job{Tenant: "bench", Name: fmt.Sprintf("j-%d", seq), Spec: testSpec(), Creator: "alice",
						Labels: map[string]string{"team": "vision"}}}
				}
				created, err := tb.store.JobCreateMany(tb.ctx, "bench", items)
				require.NoError(b, err)
				keys := make([]JobKey, n)
				for i, c := range created {
					keys[i] = JobKey{Tenant: "bench", UID: c.Job.UID}
				}
				b.StartTimer()
				res, err := tb.store.SchedulerCommit(tb.ctx, SchedulerCommitParams{Lease: lease, Admit: keys})
				require.NoError(b, err)
				require.Len(b, res.Admitted, n)
			}
		})
	}
}

// TestSchedulerCommitWAL logs the WAL an admitting commit writes per job
// and its time, the median of 15 commits of 64 jobs: a measure of its
// write work that the machine's load does not blur (the ledger's share:
// run at this commit and at the one before the ledger).
func TestSchedulerCommitWAL(t *testing.T) {
	tb := setup(t)
	tb.tenantCreate(t, "bench")
	lease := tb.lease(t)
	var wal []float64
	var took []time.Duration
	for r := range 15 {
		items := make([]JobCreateParams, 64)
		for i := range items {
			items[i] = JobCreateParams{Job: job.Job{Tenant: "bench", Name: fmt.Sprintf("j-%d-%d", r, i), Spec: testSpec(), Creator: "alice",
				Labels: map[string]string{"team": "vision"}}}
		}
		created, err := tb.store.JobCreateMany(tb.ctx, "bench", items)
		require.NoError(t, err)
		keys := make([]JobKey, len(created))
		for i, c := range created {
			keys[i] = JobKey{Tenant: "bench", UID: c.Job.UID}
		}
		var before, after string
		require.NoError(t, tb.pool.QueryRow(tb.ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&before))
		t0 := time.Now()
		_, err = tb.store.SchedulerCommit(tb.ctx, SchedulerCommitParams{Lease: lease, Admit: keys})
		took = append(took, time.Since(t0))
		require.NoError(t, err)
		require.NoError(t, tb.pool.QueryRow(tb.ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&after))
		var bytes float64
		require.NoError(t, tb.pool.QueryRow(tb.ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)`, after, before).Scan(&bytes))
		wal = append(wal, bytes/64)
	}
	slices.Sort(wal)
	slices.Sort(took)
	t.Logf("admitting commit of 64 jobs: median WAL %.0f bytes/job, median %s", wal[len(wal)/2], took[len(took)/2])

	// The ledger's share: since migration 000025 the commit opens a span
	// in the job's row it updates (six columns, one entry in
	// jobs_ledger_open_idx), no span row. Against the commit without the
	// ledger (2904 bytes/job: 3255 at the commit before 000025, less the
	// 351 of its span row and indexes, measured there as ledger_twin
	// did), the share is (WAL - 2904) / 2904: 2968 bytes/job at 000025,
	// 2.2 % (12.1 % before it).
	med := wal[len(wal)/2]
	t.Logf("the ledger's share of the commit: %.0f bytes/job over the commit without it (2904): %.1f%%", med-2904, 100*(med-2904)/2904)
}
