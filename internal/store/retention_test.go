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

// TestRetentionRaisesTheEventHorizon: every statement that deletes events
// raises the horizon to the highest id it deleted (a watch resumed below it
// is refused), and nothing else moves it: not a purge, not a run that
// deletes nothing.
func TestRetentionRaisesTheEventHorizon(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	start, err := b.store.EventHorizon(b.ctx)
	require.NoError(t, err)
	for i := range 6 {
		_, _, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: fmt.Sprintf("j%d", i), Spec: testSpec()}})
		require.NoError(t, err)
	}
	events, err := b.store.EventListTenant(b.ctx, "a", 0, 0)
	require.NoError(t, err)
	require.Len(t, events, 6)
	require.Zero(t, start, "a new database has lost no events")

	week := time.Now().Add(-7 * 24 * time.Hour)
	n, err := b.store.EventDeleteBefore(b.ctx, week, 2)
	require.NoError(t, err)
	require.Zero(t, n)
	h, err := b.store.EventHorizon(b.ctx)
	require.NoError(t, err)
	require.Equal(t, start, h, "nothing deleted, nothing moved")

	// Every event but the fifth is old: the sixth, past a newer id, is
	// deleted too (its batch holds an old one), and the horizon goes past
	// the fifth, which stays.
	_, err = b.pool.Exec(b.ctx, `UPDATE job_events SET create_time = $1 WHERE id = ANY($2)`, week.Add(-time.Hour),
		[]int64{events[0].ID, events[1].ID, events[2].ID, events[3].ID, events[5].ID})
	require.NoError(t, err)
	n, err = b.store.EventDeleteBefore(b.ctx, week, 2)
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	h, err = b.store.EventHorizon(b.ctx)
	require.NoError(t, err)
	require.Equal(t, events[5].ID, h, "the highest id deleted")
	left, err := b.store.EventListTenant(b.ctx, "a", 0, 0)
	require.NoError(t, err)
	require.Equal(t, []job.Event{events[4]}, left, "an event below the horizon can be left; the horizon says only what may be gone")
}
