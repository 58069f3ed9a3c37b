//go:build integration

package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

func TestRetentionDeletesOldEventsAndRequestIDsInBatches(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	for i := range 25 {
		_, _, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: fmt.Sprintf("j%d", i), Spec: testSpec()},
			RequestID: fmt.Sprintf("r%d", i)})
		require.NoError(t, err)
	}
	month := time.Now().Add(-30 * 24 * time.Hour)
	// The first 15 jobs' events and keys are a month old.
	_, err := b.pool.Exec(b.ctx, `UPDATE job_events SET create_time = $1 WHERE job_name IN (SELECT 'j' || g FROM generate_series(0, 14) g)`, month)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `UPDATE idempotency_keys SET create_time = $1 WHERE request_id IN (SELECT 'r' || g FROM generate_series(0, 14) g)`, month)
	require.NoError(t, err)

	week := time.Now().Add(-7 * 24 * time.Hour)
	n, err := b.store.EventDeleteBefore(b.ctx, week, 4)
	require.NoError(t, err)
	require.EqualValues(t, 15, n, "in batches of 4")
	require.Equal(t, 10, b.count(t, `SELECT count(*) FROM job_events`))
	n, err = b.store.RequestIDDeleteBefore(b.ctx, week, 4)
	require.NoError(t, err)
	require.EqualValues(t, 15, n)
	require.Equal(t, 10, b.count(t, `SELECT count(*) FROM idempotency_keys`))

	n, err = b.store.EventDeleteBefore(b.ctx, week, 4)
	require.NoError(t, err)
	require.Zero(t, n, "nothing more is old enough")
	_, found, err := b.store.JobGetByRequestID(b.ctx, "a", "r3")
	require.NoError(t, err)
	require.False(t, found, "a forgotten request id")
	_, found, err = b.store.JobGetByRequestID(b.ctx, "a", "r20")
	require.NoError(t, err)
	require.True(t, found)
}
