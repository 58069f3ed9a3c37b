//go:build integration

package store

import (
	"fmt"
	"testing"

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
