package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/audit"
)

// The audit log (internal/audit). Every mutation an API caller makes writes
// its record with auditInsert (or auditQueue, in a batch) inside its own
// transaction, so the change and its record commit or roll back together.
// The caller is the audit.Actor in the context; without one (a worker, the
// scheduler) nothing is recorded.

const sqlAuditInsert = `
	INSERT INTO audit_records (tenant_id, subject, groups, issuer, address, request_id, action, resource, details)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

func auditArgs(ctx context.Context, tenantID string, action audit.Action, resource string, details map[string]any) ([]any, bool) {
	a, ok := audit.ActorFrom(ctx)
	if !ok {
		return nil, false
	}
	if details == nil {
		details = map[string]any{}
	}
	return []any{tenantID, a.Subject, nonNilSlice(a.Groups), a.Issuer, a.Address, a.ID, string(action), resource, details}, true
}

// auditInsert records a change made in tx, if a caller made it.
func auditInsert(ctx context.Context, tx pgx.Tx, tenantID string, action audit.Action, resource string, details map[string]any) error {
	args, ok := auditArgs(ctx, tenantID, action, resource, details)
	if !ok {
		return nil
	}
	_, err := tx.Exec(ctx, sqlAuditInsert, args...)
	return err
}

// AuditWrite records a change the store did not make itself: the API
// deleting a Kubernetes Secret that had no metadata row. Without an actor
// in ctx it records nothing.
func (s *Store) AuditWrite(ctx context.Context, tenantID string, action audit.Action, resource string, details map[string]any) error {
	err := s.inTx(ctx, func(tx *txn) error {
		return auditInsert(ctx, tx, tenantID, action, resource, details)
	})
	return translate(err, "audit record")
}

// AuditListParams filter and page AuditList. Zero values do not filter.
type AuditListParams struct {
	Tenant  string
	Subject string
	Action  audit.Action
	// Since is inclusive, Until exclusive.
	Since, Until time.Time
	PageSize     int
	// BeforeID continues a listing: records older than this id.
	BeforeID int64
}

// AuditList returns records newest first, and the id to pass as BeforeID
// for the next page (0 on the last one).
func (s *Store) AuditList(ctx context.Context, p AuditListParams) ([]audit.Record, int64, error) {
	size := clampPageSize(p.PageSize)
	where, args := "true", []any{}
	add := func(cond string, v any) {
		args = append(args, v)
		where += fmt.Sprintf(" AND "+cond, len(args))
	}
	if p.Tenant != "" {
		add("tenant_id = $%d", p.Tenant)
	}
	if p.Subject != "" {
		add("subject = $%d", p.Subject)
	}
	if p.Action != "" {
		add("action = $%d", string(p.Action))
	}
	if !p.Since.IsZero() {
		add("time >= $%d", p.Since)
	}
	if !p.Until.IsZero() {
		add("time < $%d", p.Until)
	}
	if p.BeforeID > 0 {
		add("id < $%d", p.BeforeID)
	}
	args = append(args, size+1)
	rows, _ := s.pool.Query(ctx, `
		SELECT id, time, tenant_id, subject, groups, issuer, address, request_id, action, resource, details
		FROM audit_records WHERE `+where+fmt.Sprintf(` ORDER BY id DESC LIMIT $%d`, len(args)), args...)
	records, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (audit.Record, error) {
		var r audit.Record
		var action string
		err := row.Scan(&r.ID, &r.Time, &r.Tenant, &r.Actor.Subject, &r.Actor.Groups, &r.Actor.Issuer,
			&r.Actor.Address, &r.Actor.ID, &action, &r.Resource, &r.Details)
		r.Action = audit.Action(action)
		return r, err
	})
	if err != nil {
		return nil, 0, translate(err, "audit records")
	}
	var next int64
	if len(records) > size {
		records = records[:size]
		next = records[size-1].ID
	}
	return records, next, nil
}

// AuditDeleteBefore deletes the records older than t, in batches so that no
// transaction holds many rows, and returns how many it deleted.
func (s *Store) AuditDeleteBefore(ctx context.Context, t time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM audit_records WHERE id IN (
			SELECT id FROM audit_records WHERE time < $1 ORDER BY time LIMIT 5000)`, t)
		if err != nil {
			return total, translate(err, "audit records")
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < 5000 {
			return total, nil
		}
	}
}
