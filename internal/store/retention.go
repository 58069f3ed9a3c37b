package store

import (
	"context"
	"fmt"
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
// Each statement raises the event horizon (EventHorizon) of every tenant
// whose events it deleted to the highest id it deleted of that tenant, in
// the same transaction; other tenants' horizons stay where they are.
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
				RETURNING tenant_id, id
			), h AS (
				INSERT INTO tenant_event_horizons (tenant_id, deleted_through)
				SELECT tenant_id, max(id) FROM d GROUP BY tenant_id
				ON CONFLICT (tenant_id) DO UPDATE
				SET deleted_through = greatest(tenant_event_horizons.deleted_through, EXCLUDED.deleted_through)
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

// EventHorizon returns the position up to which retention has deleted the
// tenant's events: a watch of the tenant resumed from a smaller position
// might miss events, and is refused (the API's OUT_OF_RANGE). Deleting and
// raising the horizon commit together, so a horizon at or below the
// position, read after (or with) the events a watch delivers, means
// nothing after the position had been deleted when they were read. The
// watches' reads (EventListTenant, EventListByJob) read it with their
// events and fail with *EventsExpiredError; a resumed watch also reads it
// on its own once, for the case where no event follows the position.
func (s *Store) EventHorizon(ctx context.Context, tenantID string) (int64, error) {
	var h int64
	err := s.pool.QueryRow(ctx, `SELECT `+sqlHorizon, tenantID).Scan(&h)
	return h, translate(err, "events")
}

// sqlHorizon is the tenant's event horizon ($1 the tenant): its own, or
// the installation's floor from before horizons were kept per tenant
// (migration 000009), whichever is higher.
const sqlHorizon = `greatest((SELECT deleted_through FROM event_horizon),
	(SELECT deleted_through FROM tenant_event_horizons WHERE tenant_id = $1))`

// EventsExpiredError is a read of a tenant's events after position After
// that met the tenant's event horizon above it: retention may have deleted
// events after After, so what the read has would not be all of them.
type EventsExpiredError struct{ After, Horizon int64 }

func (e *EventsExpiredError) Error() string {
	return fmt.Sprintf("events up to position %d were deleted by event retention, so a read after %d could miss some", e.Horizon, e.After)
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
