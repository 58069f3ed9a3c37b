package store

import (
	"context"
	"time"
)

// The usage ledger (issue 42): per tenant, the decayed average usage per
// resource and the GPU-seconds per UTC day. The scheduler's leader keeps
// it in memory, adds what every cycle saw in use, and writes it back here
// every few seconds, fenced by its lease; a new leader reads it and goes
// on from its update time, so history and budgets survive a fail-over.

// TenantUsage is one tenant's ledger.
type TenantUsage struct {
	// Decayed is the decayed average usage by resource name (job.Resource
	// Name: "cpu" in millicores, "memory" in bytes, "nvidia.com/gpu",
	// "pods"), as of UpdateTime.
	Decayed    map[string]float64
	UpdateTime time.Time
	// GPUSeconds are the GPU-seconds used per UTC day (midnight), the
	// last 62 days.
	GPUSeconds map[time.Time]float64
}

// UsageWrite is what a leader writes of one tenant's ledger.
type UsageWrite struct {
	Decayed map[string]float64
	// AddGPUSeconds is added to the day of Day.
	AddGPUSeconds float64
	Day           time.Time
}

// ledgerDays is how many days of GPU-seconds the ledger keeps: two
// months cover a calendar month and a rolling 30 days.
const ledgerDays = 62

// UsageLedgerRead reads the ledger of every tenant, or of one when
// tenantID is not "".
func (s *Store) UsageLedgerRead(ctx context.Context, tenantID string) (map[string]TenantUsage, error) {
	out := map[string]TenantUsage{}
	get := func(id string) TenantUsage {
		u, ok := out[id]
		if !ok {
			u = TenantUsage{Decayed: map[string]float64{}, GPUSeconds: map[time.Time]float64{}}
		}
		return u
	}
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, resource, decayed, update_time FROM tenant_usage
		WHERE $1 = '' OR tenant_id = $1`, tenantID)
	if err != nil {
		return nil, translate(err, "usage ledger")
	}
	for rows.Next() {
		var (
			id, res string
			dec     float64
			at      time.Time
		)
		if err := rows.Scan(&id, &res, &dec, &at); err != nil {
			rows.Close()
			return nil, translate(err, "usage ledger")
		}
		u := get(id)
		u.Decayed[res] = dec
		if at.After(u.UpdateTime) {
			u.UpdateTime = at
		}
		out[id] = u
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err, "usage ledger")
	}
	rows, err = s.pool.Query(ctx, `SELECT tenant_id, day, gpu_seconds FROM tenant_budget_days
		WHERE ($1 = '' OR tenant_id = $1) AND day >= current_date - $2::int`, tenantID, ledgerDays)
	if err != nil {
		return nil, translate(err, "usage ledger")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id  string
			day time.Time
			sec float64
		)
		if err := rows.Scan(&id, &day, &sec); err != nil {
			return nil, translate(err, "usage ledger")
		}
		u := get(id)
		u.GPUSeconds[time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.UTC)] += sec
		out[id] = u
	}
	return out, translate(rows.Err(), "usage ledger")
}

// UsageLedgerWrite writes the ledger of the tenants in entries as of now,
// fenced by the scheduler lease (ErrLeaseLost: nothing written). Tenants
// deleted meanwhile are skipped; days past the ledger's are dropped.
func (s *Store) UsageLedgerWrite(ctx context.Context, l SchedulerLease, now time.Time, entries map[string]UsageWrite) error {
	if len(entries) == 0 {
		return nil
	}
	var (
		uTenants, uResources []string
		uDecayed             []float64
		dTenants             []string
		dDays                []time.Time
		dSeconds             []float64
	)
	for id, w := range entries {
		for res, v := range w.Decayed {
			uTenants, uResources, uDecayed = append(uTenants, id), append(uResources, res), append(uDecayed, v)
		}
		if w.AddGPUSeconds > 0 {
			d := w.Day.UTC()
			dTenants = append(dTenants, id)
			dDays = append(dDays, time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC))
			dSeconds = append(dSeconds, w.AddGPUSeconds)
		}
	}
	err := s.inTx(ctx, func(tx *txn) error {
		if err := leaseCheck(ctx, tx, l); err != nil {
			return err
		}
		if len(uTenants) > 0 {
			if _, err := tx.Exec(ctx, `
				INSERT INTO tenant_usage (tenant_id, resource, decayed, update_time)
				SELECT k.tenant_id, k.resource, k.decayed, $4
				FROM unnest($1::text[], $2::text[], $3::float8[]) AS k(tenant_id, resource, decayed)
				JOIN tenants t ON t.id = k.tenant_id
				ON CONFLICT (tenant_id, resource) DO UPDATE SET decayed = excluded.decayed, update_time = excluded.update_time`,
				uTenants, uResources, uDecayed, now); err != nil {
				return err
			}
		}
		if len(dTenants) > 0 {
			if _, err := tx.Exec(ctx, `
				INSERT INTO tenant_budget_days (tenant_id, day, gpu_seconds)
				SELECT k.tenant_id, k.day, k.seconds
				FROM unnest($1::text[], $2::date[], $3::float8[]) AS k(tenant_id, day, seconds)
				JOIN tenants t ON t.id = k.tenant_id
				ON CONFLICT (tenant_id, day) DO UPDATE SET gpu_seconds = tenant_budget_days.gpu_seconds + excluded.gpu_seconds`,
				dTenants, dDays, dSeconds); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM tenant_budget_days WHERE day < $1::date - $2::int`, now.UTC(), ledgerDays); err != nil {
				return err
			}
		}
		return nil
	})
	return translate(err, "usage ledger")
}
