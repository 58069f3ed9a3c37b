package store

import (
	"context"
	"time"
)

// Retention: events and idempotency keys older than an age are deleted
// (the API server's --event-retention and --request-id-retention), like
// audit records (AuditDeleteBefore). Each statement deletes at most batch
// rows and commits on its own, so no transaction holds many rows or runs
// long: writers never wait for it (nothing else locks old events or keys),
// and event delivery, which waits for every open transaction below its
// watermark (doc.go, "Events"), waits at most one short batch.

// DefaultRetentionBatch is how many rows one retention statement deletes.
const DefaultRetentionBatch = 1000

// EventDeleteBefore deletes the events created before t, oldest first, and
// returns how many. It walks the oldest events by id (ids follow time:
// trainyard_event_id) and stops at the first batch holding none older than
// t, so it reads only what it deletes and one batch more, whatever the
// table's size; an old event behind a newer id waits for the next run.
// Each statement raises the event horizon (EventHorizon) to the highest id
// it deleted, in the same transaction.
func (s *Store) EventDeleteBefore(ctx context.Context, t time.Time, batch int) (int64, error) {
	if batch <= 0 {
		batch = DefaultRetentionBatch
	}
	var total int64
	for {
		var n int64
		err := s.pool.QueryRow(ctx, `
			WITH d AS (
				DELETE FROM job_events WHERE id IN (
					SELECT id FROM (SELECT id, create_time FROM job_events ORDER BY id LIMIT $2) oldest
					WHERE create_time < $1)
				RETURNING id
			), h AS (
				UPDATE event_horizon SET deleted_through = d.m
				FROM (SELECT max(id) AS m FROM d) d WHERE d.m > deleted_through
			)
			SELECT count(*) FROM d`, t, batch).Scan(&n)
		if err != nil {
			return total, translate(err, "events")
		}
		total += n
		if n == 0 {
			return total, nil
		}
	}
}

// EventHorizon returns the position up to which retention has deleted
// events: a watch resumed from a smaller position might miss events, and
// is refused (the API's OUT_OF_RANGE). Read it after the events a resumed
// watch delivers first: deleting and raising the horizon commit together,
// so a horizon at or below the position, read after the events, means
// nothing after the position had been deleted when they were read.
func (s *Store) EventHorizon(ctx context.Context) (int64, error) {
	var h int64
	err := s.pool.QueryRow(ctx, `SELECT deleted_through FROM event_horizon`).Scan(&h)
	return h, translate(err, "events")
}

// RequestIDDeleteBefore forgets the request ids (AIP-155 idempotency keys)
// seen before t, oldest first (idempotency_keys_time_idx), and returns how
// many: a retry with such an id creates a new job. Keep them longer than
// any client retries.
func (s *Store) RequestIDDeleteBefore(ctx context.Context, t time.Time, batch int) (int64, error) {
	if batch <= 0 {
		batch = DefaultRetentionBatch
	}
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE (tenant_id, request_id) IN (
			SELECT tenant_id, request_id FROM idempotency_keys WHERE create_time < $1 ORDER BY create_time LIMIT $2)`, t, batch)
		if err != nil {
			return total, translate(err, "request ids")
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}
