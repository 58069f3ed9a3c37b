package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/resname"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Secrets: metadata only (names and key names). Values live in Kubernetes
// Secrets and never pass through this package. Changes notify
// ChannelTenants so the tenant reconciler re-ensures the namespace.

func secretWhat(tenantID, name string) string {
	return fmt.Sprintf("secret %q in tenant %q", name, tenantID)
}

func scanSecret(row pgx.CollectableRow) (tenant.Secret, error) {
	var sec tenant.Secret
	err := row.Scan(&sec.Tenant, &sec.Name, &sec.Keys, &sec.CreateTime, &sec.UpdateTime)
	return sec, err
}

// SecretPut creates or replaces a secret's metadata.
func (s *Store) SecretPut(ctx context.Context, sec tenant.Secret) (tenant.Secret, error) {
	what := secretWhat(sec.Tenant, sec.Name)
	var out tenant.Secret
	err := s.inTx(ctx, func(tx *txn) error {
		rows, err := tx.Query(ctx, `
			INSERT INTO secrets (tenant_id, name, keys, create_time, update_time)
			VALUES ($1, $2, $3, $4, $4)
			ON CONFLICT (tenant_id, name) DO UPDATE SET keys = excluded.keys, update_time = excluded.update_time
			RETURNING tenant_id, name, keys, create_time, update_time`,
			sec.Tenant, sec.Name, nonNilSlice(sec.Keys), s.timestamp())
		if err != nil {
			return err
		}
		if out, err = pgx.CollectExactlyOneRow(rows, scanSecret); err != nil {
			return err
		}
		// Key names only: values never reach Postgres.
		if err := auditInsert(ctx, tx, sec.Tenant, audit.SecretPut, resname.Secret.Format(sec.Tenant, sec.Name),
			map[string]any{"keys": nonNilSlice(sec.Keys)}); err != nil {
			return err
		}
		tx.notify(ChannelTenants, sec.Tenant)
		return nil
	})
	return out, translate(err, what)
}

// SecretGet returns a secret's metadata.
func (s *Store) SecretGet(ctx context.Context, tenantID, name string) (tenant.Secret, error) {
	rows, _ := s.pool.Query(ctx, `SELECT tenant_id, name, keys, create_time, update_time FROM secrets
		WHERE tenant_id = $1 AND name = $2`, tenantID, name)
	sec, err := pgx.CollectExactlyOneRow(rows, scanSecret)
	return sec, translate(err, secretWhat(tenantID, name))
}

// SecretList returns the tenant's secrets by name.
func (s *Store) SecretList(ctx context.Context, tenantID string) ([]tenant.Secret, error) {
	rows, _ := s.pool.Query(ctx, `SELECT tenant_id, name, keys, create_time, update_time FROM secrets
		WHERE tenant_id = $1 ORDER BY name`, tenantID)
	list, err := pgx.CollectRows(rows, scanSecret)
	return list, translate(err, "secrets")
}

// SecretDelete removes a secret's metadata.
func (s *Store) SecretDelete(ctx context.Context, tenantID, name string) error {
	err := s.inTx(ctx, func(tx *txn) error {
		tag, err := tx.Exec(ctx, `DELETE FROM secrets WHERE tenant_id = $1 AND name = $2`, tenantID, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return pgx.ErrNoRows
		}
		if err := auditInsert(ctx, tx, tenantID, audit.SecretDelete, resname.Secret.Format(tenantID, name), nil); err != nil {
			return err
		}
		tx.notify(ChannelTenants, tenantID)
		return nil
	})
	return translate(err, secretWhat(tenantID, name))
}
