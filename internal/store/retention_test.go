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
// raises the horizon of each tenant whose events it deleted to the highest
// id it deleted of that tenant (a watch resumed below it is refused), and
// nothing else moves it: not another tenant's deletions, not a run that
// deletes nothing. The watches' reads check it in the same statement.
func TestRetentionRaisesTheEventHorizon(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "quiet")
	horizon := func(tenant string) int64 {
		h, err := b.store.EventHorizon(b.ctx, tenant)
		require.NoError(t, err)
		return h
	}
	require.Zero(t, horizon("a"), "a new database has lost no events")
	// The quiet tenant's two events come first: their ids are below a's.
	for i := range 2 {
		_, _, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "quiet", Name: fmt.Sprintf("q%d", i), Spec: testSpec()}})
		require.NoError(t, err)
	}
	for i := range 6 {
		_, _, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: fmt.Sprintf("j%d", i), Spec: testSpec()}})
		require.NoError(t, err)
	}
	events, err := b.store.EventListTenant(b.ctx, "a", 0, 0)
	require.NoError(t, err)
	require.Len(t, events, 6)
	quiet, err := b.store.EventListTenant(b.ctx, "quiet", 0, 0)
	require.NoError(t, err)
	require.Len(t, quiet, 2)

	week := time.Now().Add(-7 * 24 * time.Hour)
	n, err := b.store.EventDeleteBefore(b.ctx, week, 2)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Zero(t, horizon("a"), "nothing deleted, nothing moved")

	// The quiet tenant's events are old, and every event of a but the
	// fifth: the sixth, past a newer id, is deleted too (its batch holds an
	// old one), and a's horizon goes past the fifth, which stays.
	_, err = b.pool.Exec(b.ctx, `UPDATE job_events SET create_time = $1 WHERE id = ANY($2)`, week.Add(-time.Hour),
		[]int64{quiet[0].ID, quiet[1].ID, events[0].ID, events[1].ID, events[2].ID, events[3].ID, events[5].ID})
	require.NoError(t, err)
	n, err = b.store.EventDeleteBefore(b.ctx, week, 2)
	require.NoError(t, err)
	require.EqualValues(t, 7, n)
	require.Equal(t, events[5].ID, horizon("a"), "the highest id deleted")
	require.Equal(t, quiet[1].ID, horizon("quiet"), "the highest id deleted of its own")
	require.Equal(t, 1, b.count(t, fmt.Sprintf(`SELECT count(*) FROM job_events WHERE id = %d`, events[4].ID)),
		"an event below the horizon can be left; the horizon says only what may be gone")

	// A read from below the horizon fails rather than return what is left
	// (the fifth event) as if it were all; from the horizon on it reads.
	_, err = b.store.EventListTenant(b.ctx, "a", events[3].ID, 0)
	var expired *EventsExpiredError
	require.ErrorAs(t, err, &expired)
	require.Equal(t, EventsExpiredError{After: events[3].ID, Horizon: events[5].ID}, *expired)
	_, err = b.store.EventListByJob(b.ctx, "a", events[4].JobUID, 0, 0)
	require.ErrorAs(t, err, &expired)
	j, _, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: "after", Spec: testSpec()}})
	require.NoError(t, err)
	next, err := b.store.EventListTenant(b.ctx, "a", events[5].ID, 0)
	require.NoError(t, err)
	require.Len(t, next, 1)
	require.Equal(t, j.UID, next[0].JobUID)

	// A watch of the quiet tenant stands at its last event, now deleted
	// and below every id deleted of a: nothing of its own after that
	// position went, so it goes on (with one horizon for the installation
	// it was refused).
	// A watch of it that starts now starts at the horizon, not at 0 (below
	// it), where its first read would be refused.
	last, err := b.store.EventLastID(b.ctx, "quiet")
	require.NoError(t, err)
	require.Equal(t, quiet[1].ID, last)
	_, _, err = b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "quiet", Name: "q2", Spec: testSpec()}})
	require.NoError(t, err)
	rest, err := b.store.EventListTenant(b.ctx, "quiet", quiet[1].ID, 0)
	require.NoError(t, err)
	require.Len(t, rest, 1)
	require.Equal(t, "q2", rest[0].Job)
	_, err = b.store.EventListTenant(b.ctx, "quiet", quiet[0].ID, 0)
	require.ErrorAs(t, err, &expired, "its second event went after the first")
}
