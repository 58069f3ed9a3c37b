package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Cohorts' own pools (issue 42). A cohort's members are the tenants whose
// sharing names it (tenants_cohort_idx); the cohorts table only holds the
// pools that belong to no tenant. Changes are audited under no tenant
// (tenant_id ''), as platform-wide changes: a platform admin's audit list
// shows them.

const sqlCohortCols = `c.name, c.nominal, c.gpu_types, c.create_time, c.update_time,
	coalesce((SELECT array_agg(t.id ORDER BY t.id) FROM tenants t WHERE t.cohort = c.name), '{}')`

func scanCohort(row pgx.Row) (tenant.Cohort, error) {
	var c tenant.Cohort
	err := row.Scan(&c.Name, &c.Nominal, &c.GPUTypes, &c.CreateTime, &c.UpdateTime, &c.Tenants)
	return c, err
}

func cohortWhat(name string) string { return fmt.Sprintf("cohort %q", name) }

// cohortResource is a cohort's resource name in audit records.
func cohortResource(name string) string { return "cohorts/" + name }

// CohortPut creates or replaces a cohort's pool.
func (s *Store) CohortPut(ctx context.Context, c tenant.Cohort) (tenant.Cohort, error) {
	if c.GPUTypes == nil {
		c.GPUTypes = map[string]int64{}
	}
	err := s.inTx(ctx, func(tx *txn) error {
		now := s.timestamp()
		_, err := tx.Exec(ctx, `
			INSERT INTO cohorts (name, nominal, gpu_types, create_time, update_time) VALUES ($1, $2, $3, $4, $4)
			ON CONFLICT (name) DO UPDATE SET nominal = $2, gpu_types = $3, update_time = $4`,
			c.Name, c.Nominal, c.GPUTypes, now)
		if err != nil {
			return err
		}
		details := map[string]any{"nominalQuota": c.Nominal, "gpuTypes": c.GPUTypes}
		if err := auditInsert(ctx, tx, "", audit.CohortPut, cohortResource(c.Name), details); err != nil {
			return err
		}
		// A larger pool can let waiting jobs in.
		tx.notify(ChannelFreed, "")
		return nil
	})
	if err != nil {
		return tenant.Cohort{}, translate(err, cohortWhat(c.Name))
	}
	return s.CohortGet(ctx, c.Name)
}

// CohortGet returns a cohort's pool and members. A cohort that tenants
// name but that has no pool is returned with an empty one (and zero
// times); one that neither exists nor is named is ErrNotFound.
func (s *Store) CohortGet(ctx context.Context, name string) (tenant.Cohort, error) {
	c, err := scanCohort(s.pool.QueryRow(ctx, `SELECT `+sqlCohortCols+` FROM cohorts c WHERE c.name = $1`, name))
	if err == nil {
		return c, nil
	}
	if err != pgx.ErrNoRows {
		return tenant.Cohort{}, translate(err, cohortWhat(name))
	}
	c = tenant.Cohort{Name: name, GPUTypes: map[string]int64{}}
	err = s.pool.QueryRow(ctx, `SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM tenants WHERE cohort = $1`, name).Scan(&c.Tenants)
	if err != nil {
		return tenant.Cohort{}, translate(err, cohortWhat(name))
	}
	if len(c.Tenants) == 0 {
		return tenant.Cohort{}, fmt.Errorf("%w: %s", ErrNotFound, cohortWhat(name))
	}
	return c, nil
}

// CohortList returns every cohort, those with a pool and those tenants
// only name, by name.
func (s *Store) CohortList(ctx context.Context) ([]tenant.Cohort, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+sqlCohortCols+` FROM cohorts c
		UNION ALL
		SELECT n.cohort, '{}'::jsonb, '{}'::jsonb, 'epoch'::timestamptz, 'epoch'::timestamptz, array_agg(n.id ORDER BY n.id)
		FROM tenants n WHERE n.cohort IS NOT NULL AND n.cohort NOT IN (SELECT name FROM cohorts)
		GROUP BY n.cohort
		ORDER BY 1`)
	if err != nil {
		return nil, translate(err, "cohorts")
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tenant.Cohort, error) {
		c, err := scanCohort(r)
		if c.CreateTime.Unix() == 0 {
			// Named by tenants, without a pool.
			c.CreateTime, c.UpdateTime = time.Time{}, time.Time{}
		}
		return c, err
	})
	return list, translate(err, "cohorts")
}

// CohortDelete removes a cohort's pool (its members keep sharing what they
// lend one another). ErrNotFound when it has none.
func (s *Store) CohortDelete(ctx context.Context, name string) error {
	err := s.inTx(ctx, func(tx *txn) error {
		tag, err := tx.Exec(ctx, `DELETE FROM cohorts WHERE name = $1`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: %s has no pool of its own", ErrNotFound, cohortWhat(name))
		}
		return auditInsert(ctx, tx, "", audit.CohortDelete, cohortResource(name), nil)
	})
	return translate(err, cohortWhat(name))
}
