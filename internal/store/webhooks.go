package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/resname"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/webhook"
)

// Webhooks and their outbox (migration 000013). The API's methods are
// tenant-scoped and audited; the deliverer's (DeliveryClaim, DeliveryFinish,
// DeliveryRelease) are cross-tenant by nature, like the worker's queue.

// MaxWebhooksPerTenant bounds a tenant's webhooks (each costs every event
// of the tenant a row per match).
const MaxWebhooksPerTenant = 50

const webhookCols = `w.tenant_id, w.id, w.url, w.event_types, w.label_selector, w.description, w.state,
	w.state_reason, w.secret_version, w.create_time, w.update_time`

func scanWebhook(row pgx.Row) (webhook.Webhook, error) {
	var (
		w     webhook.Webhook
		state string
	)
	err := row.Scan(&w.Tenant, &w.ID, &w.URL, &w.EventTypes, &w.LabelSelector, &w.Description, &state,
		&w.StateReason, &w.SecretVersion, &w.CreateTime, &w.UpdateTime)
	w.State = webhook.State(state)
	if len(w.LabelSelector) == 0 {
		w.LabelSelector = nil
	}
	return w, err
}

func webhookWhat(tenantID, id string) string {
	return fmt.Sprintf("webhook %q in tenant %q", id, tenantID)
}

// webhookAuditDetails says what a record of a webhook change shows: never
// the secret, only whether it was replaced.
func webhookAuditDetails(w webhook.Webhook, secretReplaced bool) map[string]any {
	return map[string]any{
		"url": w.URL, "eventTypes": nonNilSlice(w.EventTypes), "labelSelector": nonNilMap(w.LabelSelector),
		"state": string(w.State), "secretReplaced": secretReplaced,
	}
}

// WebhookCreate inserts a webhook (ACTIVE). ErrAlreadyExists when the id is
// taken; ErrFailedPrecondition when the tenant has MaxWebhooksPerTenant.
func (s *Store) WebhookCreate(ctx context.Context, w webhook.Webhook) (webhook.Webhook, error) {
	what := webhookWhat(w.Tenant, w.ID)
	var out webhook.Webhook
	err := s.inTx(ctx, func(tx *txn) error {
		var n int
		// The tenant's row, shared: creates of one tenant count in turn with TenantUpdate's lock.
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhooks WHERE tenant_id = $1)
			FROM tenants WHERE id = $1 FOR SHARE`, w.Tenant).Scan(&n); err != nil {
			return err
		}
		if n >= MaxWebhooksPerTenant {
			return fmt.Errorf("%w: tenant %q has %d webhooks, the most allowed", ErrFailedPrecondition, w.Tenant, n)
		}
		now := s.timestamp()
		var err error
		out, err = scanWebhook(tx.QueryRow(ctx, `
			INSERT INTO webhooks AS w (tenant_id, id, url, event_types, label_selector, description, create_time, update_time)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
			RETURNING `+webhookCols,
			w.Tenant, w.ID, w.URL, nonNilSlice(w.EventTypes), nonNilMap(w.LabelSelector), w.Description, now))
		if err != nil {
			return err
		}
		return auditInsert(ctx, tx, w.Tenant, audit.WebhookCreate, resname.Webhook.Format(w.Tenant, w.ID),
			webhookAuditDetails(out, true))
	})
	return out, translate(err, what)
}

// WebhookGet returns a webhook.
func (s *Store) WebhookGet(ctx context.Context, tenantID, id string) (webhook.Webhook, error) {
	w, err := scanWebhook(s.pool.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks w
		WHERE w.tenant_id = $1 AND w.id = $2`, tenantID, id))
	return w, translate(err, webhookWhat(tenantID, id))
}

// WebhookList returns the tenant's webhooks by id (at most MaxWebhooksPerTenant).
func (s *Store) WebhookList(ctx context.Context, tenantID string) ([]webhook.Webhook, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+webhookCols+` FROM webhooks w WHERE w.tenant_id = $1 ORDER BY w.id`, tenantID)
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Webhook, error) { return scanWebhook(r) })
	return list, translate(err, "webhooks")
}

// WebhookUpdate changes a webhook under its row lock: fn edits it (its
// tenant and id are kept). secretReplaced bumps SecretVersion, so that
// deliverers read the new secret. A change back to ACTIVE clears the
// state reason.
func (s *Store) WebhookUpdate(ctx context.Context, tenantID, id string, secretReplaced bool, fn func(*webhook.Webhook) error) (webhook.Webhook, error) {
	what := webhookWhat(tenantID, id)
	var out webhook.Webhook
	err := s.inTx(ctx, func(tx *txn) error {
		w, err := scanWebhook(tx.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks w
			WHERE w.tenant_id = $1 AND w.id = $2 FOR UPDATE`, tenantID, id))
		if err != nil {
			return err
		}
		before := w
		if err := fn(&w); err != nil {
			return errFromCallback{err}
		}
		if w.State == webhook.Active {
			w.StateReason = ""
		}
		out, err = scanWebhook(tx.QueryRow(ctx, `
			UPDATE webhooks w SET url = $3, event_types = $4, label_selector = $5, description = $6, state = $7,
			       state_reason = $8, secret_version = secret_version + $9::int, update_time = $10
			WHERE w.tenant_id = $1 AND w.id = $2
			RETURNING `+webhookCols,
			tenantID, id, w.URL, nonNilSlice(w.EventTypes), nonNilMap(w.LabelSelector), w.Description, string(w.State),
			w.StateReason, btoi(secretReplaced), s.timestamp()))
		if err != nil {
			return err
		}
		tx.notify(ChannelWebhooks, tenantID)
		details := webhookAuditDetails(out, secretReplaced)
		details["before"] = webhookAuditDetails(before, false)
		return auditInsert(ctx, tx, tenantID, audit.WebhookUpdate, resname.Webhook.Format(tenantID, id), details)
	})
	var cbErr errFromCallback
	if errors.As(err, &cbErr) {
		return webhook.Webhook{}, cbErr.err
	}
	return out, translate(err, what)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WebhookDelete removes a webhook and its deliveries, sent or not.
func (s *Store) WebhookDelete(ctx context.Context, tenantID, id string) error {
	err := s.inTx(ctx, func(tx *txn) error {
		tag, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2`, tenantID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return pgx.ErrNoRows
		}
		return auditInsert(ctx, tx, tenantID, audit.WebhookDelete, resname.Webhook.Format(tenantID, id), nil)
	})
	return translate(err, webhookWhat(tenantID, id))
}

const deliveryCols = `d.id, d.tenant_id, d.webhook_id, d.message_id, d.topic, d.subject, d.event_time, d.state,
	d.attempts, d.next_attempt_time, d.last_attempt_time, d.last_status_code, d.last_error, d.last_latency_ms, d.create_time`

func scanDelivery(row pgx.Row, more ...any) (webhook.Delivery, error) {
	var (
		d       webhook.Delivery
		state   string
		latency int32
	)
	err := row.Scan(append([]any{&d.ID, &d.Tenant, &d.Webhook, &d.MessageID, &d.Topic, &d.Subject, &d.EventTime, &state,
		&d.Attempts, &d.NextAttemptTime, &d.LastAttemptTime, &d.LastStatusCode, &d.LastError, &latency, &d.CreateTime}, more...)...)
	d.State = webhook.DeliveryState(state)
	d.LastLatency = time.Duration(latency) * time.Millisecond
	return d, err
}

func deliveryWhat(tenantID, webhookID string, id int64) string {
	return fmt.Sprintf("delivery %d of webhook %q in tenant %q", id, webhookID, tenantID)
}

// DeliveryList returns a webhook's deliveries newest first, at most limit
// (default 50, max 1000), with ids below beforeID when it is positive.
// ErrNotFound when the webhook does not exist.
func (s *Store) DeliveryList(ctx context.Context, tenantID, webhookID string, beforeID int64, limit int) ([]webhook.Delivery, error) {
	if _, err := s.WebhookGet(ctx, tenantID, webhookID); err != nil {
		return nil, err
	}
	if beforeID <= 0 {
		beforeID = 1<<63 - 1
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries d
		WHERE d.tenant_id = $1 AND d.webhook_id = $2 AND d.id < $3 ORDER BY d.id DESC LIMIT $4`,
		tenantID, webhookID, beforeID, clampPageSize(limit))
	if err != nil {
		return nil, translate(err, "deliveries")
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Delivery, error) { return scanDelivery(r) })
	return list, translate(err, "deliveries")
}

// DeliveryGet returns one delivery.
func (s *Store) DeliveryGet(ctx context.Context, tenantID, webhookID string, id int64) (webhook.Delivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries d
		WHERE d.tenant_id = $1 AND d.webhook_id = $2 AND d.id = $3`, tenantID, webhookID, id))
	return d, translate(err, deliveryWhat(tenantID, webhookID, id))
}

// DeliveryRedeliver sends a delivery again, by hand: it becomes PENDING,
// due now, with its attempts counted afresh and its message (webhook-id,
// body) the same. It keeps its place in its job's order. One in flight is
// ErrFailedPrecondition.
func (s *Store) DeliveryRedeliver(ctx context.Context, tenantID, webhookID string, id int64) (webhook.Delivery, error) {
	what := deliveryWhat(tenantID, webhookID, id)
	var out webhook.Delivery
	err := s.inTx(ctx, func(tx *txn) error {
		var state string
		var inFlight bool
		err := tx.QueryRow(ctx, `SELECT state, coalesce(lease_expires_at > now(), false) FROM webhook_deliveries
			WHERE tenant_id = $1 AND webhook_id = $2 AND id = $3 FOR UPDATE`, tenantID, webhookID, id).Scan(&state, &inFlight)
		if err != nil {
			return err
		}
		if inFlight {
			return fmt.Errorf("%w: %s is being sent right now", ErrFailedPrecondition, what)
		}
		out, err = scanDelivery(tx.QueryRow(ctx, `UPDATE webhook_deliveries d
			SET state = 'PENDING', attempts = 0, next_attempt_time = now(), create_time = now(), lease_holder = NULL, lease_expires_at = NULL
			WHERE d.id = $1 RETURNING `+deliveryCols, id))
		if err != nil {
			return err
		}
		tx.notify(ChannelWebhooks, tenantID)
		return auditInsert(ctx, tx, tenantID, audit.WebhookRedeliver, resname.WebhookDelivery.Format(tenantID, webhookID, strconv.FormatInt(id, 10)),
			map[string]any{"messageId": out.MessageID, "previousState": state})
	})
	return out, translate(err, what)
}

// DeliveryPing queues a test message (topic webhook.ping, its own id,
// ordered after nothing) to a webhook, active or disabled: a ping is how an
// admin checks a receiver before enabling it again.
func (s *Store) DeliveryPing(ctx context.Context, tenantID, webhookID string) (webhook.Delivery, error) {
	var out webhook.Delivery
	err := s.inTx(ctx, func(tx *txn) error {
		var err error
		out, err = scanDelivery(tx.QueryRow(ctx, `
			WITH m AS (SELECT 'ping-' || trainyard_event_id()::text AS id)
			INSERT INTO webhook_deliveries AS d (tenant_id, webhook_id, message_id, topic, ordering_key, subject,
			                                     event_time, next_attempt_time, create_time)
			SELECT $1, $2, m.id, $3, m.id, $2, now(), now(), now() FROM m
			RETURNING `+deliveryCols, tenantID, webhookID, webhook.TopicPing))
		if err != nil {
			return err
		}
		tx.notify(ChannelWebhooks, tenantID)
		return auditInsert(ctx, tx, tenantID, audit.WebhookPing, resname.Webhook.Format(tenantID, webhookID),
			map[string]any{"messageId": out.MessageID})
	})
	return out, translate(err, webhookWhat(tenantID, webhookID))
}

// outboxTenantQuota queues a tenant.quota_changed message to each of the
// tenant's active webhooks that wants it, in tx (TenantUpdate's).
func outboxTenantQuota(ctx context.Context, tx *txn, t tenant.Tenant) error {
	snapshot, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `
		WITH m AS (SELECT trainyard_event_id()::text AS id)
		INSERT INTO webhook_deliveries (tenant_id, webhook_id, message_id, topic, ordering_key, subject,
		                                tenant, event_time, next_attempt_time, create_time)
		SELECT w.tenant_id, w.id, m.id, $2, 'tenant', w.tenant_id, $3, now(), now(), now()
		FROM webhooks w, m
		WHERE w.tenant_id = $1 AND w.state = 'ACTIVE' AND $2 = ANY (w.event_types)
		ORDER BY w.id`, t.ID, webhook.TopicTenantQuotaChanged, snapshot)
	tx.notify(ChannelWebhooks, t.ID)
	return err
}

// OutboxMessage is a claimed delivery with what sending it needs.
type OutboxMessage struct {
	webhook.Delivery
	URL           string
	SecretVersion int64
	// Namespace is the tenant's: its webhook secrets live there.
	Namespace string
	// Job is the job as the event's transaction left it (job topics).
	Job *job.Job
	// TenantSnapshot is the tenant after the change (tenant topics).
	TenantSnapshot *tenant.Tenant
}

// jobSnapshot is to_jsonb of a jobs row: the columns a job's reader needs.
type jobSnapshot struct {
	TenantID         string            `json:"tenant_id"`
	UID              string            `json:"uid"`
	Name             string            `json:"name"`
	DisplayName      string            `json:"display_name"`
	Labels           map[string]string `json:"labels"`
	Creator          string            `json:"creator"`
	Spec             job.Spec          `json:"spec"`
	Status           job.Status        `json:"status"`
	State            string            `json:"state"`
	CancelRequested  bool              `json:"cancel_requested"`
	SuspendRequested bool              `json:"suspend_requested"`
	CreateTime       time.Time         `json:"create_time"`
	UpdateTime       time.Time         `json:"update_time"`
}

func (j jobSnapshot) job() *job.Job {
	out := &job.Job{Tenant: j.TenantID, UID: j.UID, Name: j.Name, DisplayName: j.DisplayName, Labels: j.Labels,
		Creator: j.Creator, Spec: j.Spec, Status: j.Status, CreateTime: j.CreateTime, UpdateTime: j.UpdateTime}
	// The columns are the truth, as scanJob has it.
	out.Status.State = job.State(j.State)
	out.Status.CancelRequested = j.CancelRequested
	out.Status.SuspendRequested = j.SuspendRequested
	if len(out.Labels) == 0 {
		out.Labels = nil
	}
	return out
}

// DeliveryClaim leases up to limit due deliveries to holder for lease: the
// first pending one of its ordering key (a job's, per webhook) only, of an
// active webhook (pings go to disabled ones too), and of each webhook at
// most its room ("tenant/webhook" → how many more its receiver takes at
// this deliverer; perWebhook for one not in room). Each webhook's due rows
// are read in order from its own index range (a LATERAL per webhook), so a
// claim costs what it takes, not the backlog of a receiver that is full or
// down. Rows another deliverer is claiming are skipped (SKIP LOCKED); one
// whose lease ran out (its deliverer died) is claimed again, and sent with
// the same message id. Cross-tenant.
func (s *Store) DeliveryClaim(ctx context.Context, holder string, limit, perWebhook int, lease time.Duration, room map[string]int) ([]OutboxMessage, error) {
	keys, rooms := make([]string, 0, len(room)), make([]int32, 0, len(room))
	for k, n := range room {
		keys, rooms = append(keys, k), append(rooms, int32(max(n, 0)))
	}
	rows, err := s.pool.Query(ctx, `
		WITH r AS (
			SELECT * FROM unnest($4::text[], $5::int[]) AS r(key, n)
		), c AS (
			SELECT d.id FROM webhooks w
			LEFT JOIN r ON r.key = w.tenant_id || '/' || w.id
			CROSS JOIN LATERAL (
				SELECT d.id, d.next_attempt_time FROM webhook_deliveries d
				WHERE d.tenant_id = w.tenant_id AND d.webhook_id = w.id
				  AND d.state = 'PENDING' AND d.next_attempt_time <= now()
				  AND (w.state = 'ACTIVE' OR d.topic = $6)
				  AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now())
				  AND NOT EXISTS (SELECT FROM webhook_deliveries p
				                  WHERE p.tenant_id = d.tenant_id AND p.webhook_id = d.webhook_id
				                    AND p.ordering_key = d.ordering_key AND p.state = 'PENDING' AND p.id < d.id)
				ORDER BY d.next_attempt_time, d.id
				LIMIT least(coalesce(r.n, $7), $2)
				FOR UPDATE OF d SKIP LOCKED
			) d
			WHERE coalesce(r.n, $7) > 0
			ORDER BY d.next_attempt_time, d.id
			LIMIT $2
		), u AS (
			UPDATE webhook_deliveries d SET lease_holder = $1, lease_expires_at = now() + $3 * interval '1 millisecond'
			FROM c WHERE d.id = c.id
			RETURNING d.*
		)
		SELECT `+deliveryCols+`, w.url, w.secret_version, t.namespace, d.job, d.tenant
		FROM u d
		JOIN webhooks w ON w.tenant_id = d.tenant_id AND w.id = d.webhook_id
		JOIN tenants t ON t.id = d.tenant_id
		ORDER BY d.id`, holder, limit, lease.Milliseconds(), keys, rooms, webhook.TopicPing, perWebhook)
	if err != nil {
		return nil, translate(err, "webhook deliveries")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OutboxMessage, error) {
		var (
			m            OutboxMessage
			jobJS, tenJS []byte
		)
		d, err := scanDelivery(r, &m.URL, &m.SecretVersion, &m.Namespace, &jobJS, &tenJS)
		if err != nil {
			return m, err
		}
		m.Delivery = d
		if jobJS != nil {
			var js jobSnapshot
			if err := json.Unmarshal(jobJS, &js); err != nil {
				return m, fmt.Errorf("delivery %d: the job's snapshot: %w", d.ID, err)
			}
			m.Job = js.job()
		}
		if tenJS != nil {
			m.TenantSnapshot = &tenant.Tenant{}
			if err := json.Unmarshal(tenJS, m.TenantSnapshot); err != nil {
				return m, fmt.Errorf("delivery %d: the tenant's snapshot: %w", d.ID, err)
			}
		}
		return m, nil
	})
	return out, translate(err, "webhook deliveries")
}

// Outcome of one attempt.
type Outcome int

const (
	// Delivered: the receiver answered 2xx.
	Delivered Outcome = iota
	// Retry: anything else; tried again after Attempt.RetryAfter, or given
	// up (FAILED) when that is past webhook.MaxAge since the message was written.
	Retry
	// Gone: the receiver answered 410; the webhook is disabled, the
	// message waits (PENDING) for it to be enabled again.
	Gone
)

// Attempt is what one attempt of a delivery came to.
type Attempt struct {
	Outcome    Outcome
	StatusCode int
	Error      string
	Latency    time.Duration
	RetryAfter time.Duration
}

// DeliveryFinish records an attempt of a delivery holder claimed and ends
// its lease. ErrLeaseLost when holder no longer holds it (its lease ran
// out and another deliverer claimed it): the record is the other's to write.
func (s *Store) DeliveryFinish(ctx context.Context, holder string, id int64, a Attempt) error {
	errText := a.Error
	if len(errText) > 500 {
		errText = errText[:500]
	}
	// One statement, one round trip: the attempt, and for a 410 the
	// webhook disabled with it.
	var tenantID string
	err := s.pool.QueryRow(ctx, `
		WITH d AS (
			UPDATE webhook_deliveries d SET
			    attempts = attempts + 1, last_attempt_time = now(), last_status_code = $3, last_error = $4,
			    last_latency_ms = $5, lease_holder = NULL, lease_expires_at = NULL,
			    state = CASE WHEN $6 = 0 THEN 'SUCCEEDED'
			                 WHEN $6 = 1 AND now() + $7 * interval '1 millisecond' > d.create_time + $8 * interval '1 millisecond' THEN 'FAILED'
			                 ELSE 'PENDING' END,
			    next_attempt_time = CASE WHEN $6 = 0 THEN d.next_attempt_time
			                             ELSE now() + $7 * interval '1 millisecond' END
			WHERE d.id = $1 AND d.lease_holder = $2 AND d.state = 'PENDING'
			RETURNING d.tenant_id, d.webhook_id
		), w AS (
			UPDATE webhooks w SET state = 'DISABLED', state_reason = $9, update_time = now()
			FROM d WHERE $6 = 2 AND w.tenant_id = d.tenant_id AND w.id = d.webhook_id AND w.state = 'ACTIVE'
		)
		SELECT tenant_id FROM d`,
		id, holder, a.StatusCode, errText, a.Latency.Milliseconds(), int(a.Outcome), a.RetryAfter.Milliseconds(),
		webhook.MaxAge.Milliseconds(), fmt.Sprintf("the receiver answered 410 Gone at %s", time.Now().UTC().Format(time.RFC3339))).Scan(&tenantID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: delivery %d is no longer %s's", ErrLeaseLost, id, holder)
	}
	return translate(err, fmt.Sprintf("delivery %d", id))
}

// DeliveryRelease gives back deliveries holder claimed but did not try
// (its receiver was busy), due at once, their attempts unchanged.
func (s *Store) DeliveryRelease(ctx context.Context, holder string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET lease_holder = NULL, lease_expires_at = NULL
		WHERE id = ANY ($1) AND lease_holder = $2`, ids, holder)
	return translate(err, "webhook deliveries")
}

// DeliveryDeleteBefore removes sent and given-up deliveries written before
// t, for retention (the API server's --event-retention), in batches of
// DefaultRetentionBatch; pending ones stay whatever their age.
func (s *Store) DeliveryDeleteBefore(ctx context.Context, t time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE id IN (
			SELECT id FROM webhook_deliveries WHERE state <> 'PENDING' AND create_time < $1 LIMIT $2)`, t, DefaultRetentionBatch)
		if err != nil {
			return total, translate(err, "webhook deliveries")
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < DefaultRetentionBatch {
			return total, nil
		}
	}
}
