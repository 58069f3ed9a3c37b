//go:build integration

package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Queue samples by bucket: a tenant absent from a sample had nothing
// waiting (its mean counts that sample as 0), capacity comes by bucket,
// one tenant's query reads no other's rows, a repeated write changes
// nothing and old samples go.
func TestQueueHistory(t *testing.T) {
	b := setup(t)
	h := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	write := func(at time.Time, gpus int64, q ...QueueSample) {
		t.Helper()
		require.NoError(t, b.store.QueueSampleWrite(b.ctx, at, gpus, q))
	}
	write(h.Add(-40*24*time.Hour), 8, QueueSample{Tenant: "a", PendingJobs: 9}) // past the retention: dropped by the next write
	write(h, 16, QueueSample{Tenant: "a", PendingJobs: 2, PendingGPUs: 4, OldestWait: 30 * time.Second}, QueueSample{Tenant: "b", PendingJobs: 1, PendingGPUs: 8, OldestWait: time.Minute})
	write(h.Add(time.Minute), 16, QueueSample{Tenant: "a", PendingJobs: 4, PendingGPUs: 8, OldestWait: 90 * time.Second})
	write(h.Add(time.Minute), 99, QueueSample{Tenant: "a", PendingJobs: 40}) // the same time again: nothing changes
	write(h.Add(2*time.Minute), 24)
	write(h.Add(time.Hour), 24, QueueSample{Tenant: "b", PendingJobs: 3, OldestWait: 10 * time.Second})

	rows, capacity, err := b.store.QueueHistoryQuery(b.ctx, QueueHistoryParams{Tenant: "a", Start: h.Add(-48 * time.Hour), End: h.Add(2 * time.Hour), Step: time.Hour})
	require.NoError(t, err)
	require.Equal(t, []QueueHistoryRow{{Start: h, Tenant: "a", PendingJobsMean: 2, PendingJobsMax: 4, PendingGPUsMax: 8, OldestWaitMean: 40, OldestWaitMax: 90}}, rows,
		"3 samples in the hour: (2+4+0)/3 jobs, (30+90+0)/3 s")
	require.Equal(t, []CapacityRow{{Start: h, GPUs: 24, Samples: 3}, {Start: h.Add(time.Hour), GPUs: 24, Samples: 1}}, capacity)

	rows, _, err = b.store.QueueHistoryQuery(b.ctx, QueueHistoryParams{Start: h, End: h.Add(2 * time.Hour), Step: time.Hour})
	require.NoError(t, err)
	require.Len(t, rows, 3, "every tenant: a's hour, b's two")
	require.Equal(t, "b", rows[1].Tenant)
	require.InDelta(t, 1.0/3, rows[1].PendingJobsMean, 1e-9)
	require.Equal(t, 3.0, rows[2].PendingJobsMean)

	var old int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM queue_samples WHERE sampled_at < $1`, h.Add(-35*24*time.Hour)).Scan(&old))
	require.Zero(t, old)
}
