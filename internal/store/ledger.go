package store

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/job"
)

// The usage ledger (issue 44; migration 000014): what every job held, from
// admission to end, the one record the usage API, chargeback, budgets and
// fair share's decayed usage read.
//
//	SchedulerCommit admits ──► the job's row: span opened (ledger_since = the
//	        commit's time, ledger_* = the demand), in the UPDATE that admits it
//	JobSave requeues / ends ──► usage_intervals: the span closed (start =
//	        ledger_since, end = the save's time); the job's ledger_* cleared
//	        in the same statement (migration 000025: a span row per
//	        admission was 12 % of the commit's WAL, the columns are 2 %)
//	UsageRollup (the scheduler's leader, every minute)
//	        └─► the spans' time up to the last whole hour, split at UTC
//	            hours, moved into usage_hourly and summed per day into
//	            usage_daily (rolled_to advances)
//	UsageQuery, UsageSharing = usage_hourly (by day: usage_daily) + what
//	            is not rolled up yet
//
// Exact: a span is opened and closed by the job's own fenced transitions,
// in the transaction that makes them (the scheduler's lease and epoch; the
// worker's lease and the job's version), so a restart, a preemption or a
// fail-over can neither lose a span nor count one twice: a job has at most
// one open span (its row's), and a replayed admission opens none. The rollup moves
// time from a span to the hours in one transaction, and readers add what
// is not rolled up yet, so every read is exact at any moment, to the
// microsecond of the store's clock.

// ledgerRetention is how long the ledger keeps hours and closed spans.
const ledgerRetention = "13 months"

// rollupMargin keeps the rollup of open spans this far behind the clock:
// a save that closes a span and started before the rollup ran must not
// find the span rolled past its end (it would then end at rolled_to).
const rollupMargin = 5 * time.Minute

// rollupBatch is the most spans one rollup statement moves.
const rollupBatch = 2000

// demandOf is a job's demand as the ledger counts it; a spec that does
// not parse (it was validated at submission) counts nothing.
func demandOf(spec job.Spec) job.Vector {
	d, err := spec.Demand()
	if err != nil {
		return job.Vector{}
	}
	return d
}

// UsageRollup moves the time of closed spans, and of open ones up to the
// last whole UTC hour before now (less rollupMargin), into usage_hourly,
// and deletes what is older than 13 months (the store's clock). Any process may run it, any
// number at once: each span is locked (SKIP LOCKED; an open span's job
// row, where ledger_rolled records how far it moved) while it moves, in
// one transaction with the hours it adds to. It returns the spans moved.
func (s *Store) UsageRollup(ctx context.Context) (int, error) {
	now := s.timestamp()
	cut := now.Add(-rollupMargin).UTC().Truncate(time.Hour)
	total := 0
	for _, sql := range []string{sqlUsageRollupClosed, sqlUsageRollupOpen} {
		for {
			var n int
			err := s.pool.QueryRow(ctx, sql, cut, rollupBatch).Scan(&n)
			if err != nil {
				return total, translate(err, "usage rollup")
			}
			total += n
			if n < rollupBatch {
				break
			}
		}
	}
	_, err := s.pool.Exec(ctx, `
		WITH h AS (DELETE FROM usage_hourly WHERE hour < $1::timestamptz - interval '`+ledgerRetention+`'),
		     d AS (DELETE FROM usage_daily WHERE day + interval '1 day' <= $1::timestamptz - interval '`+ledgerRetention+`')
		DELETE FROM usage_intervals WHERE end_time < $1::timestamptz - interval '`+ledgerRetention+`' AND rolled_to = end_time`, now)
	return total, translate(err, "usage retention")
}

// sqlUsageRollupClosed moves closed spans (usage_intervals).
var sqlUsageRollupClosed = sqlUsageRollupOf(`
		SELECT tenant_id, job_uid, start_time, creator, labels, gpus, cpu_millis, memory_bytes, pods, rolled_to AS a,
		       end_time AS b
		FROM usage_intervals
		WHERE rolled_to < end_time AND $1::timestamptz IS NOT NULL
		ORDER BY tenant_id, job_uid, start_time
		LIMIT $2
		FOR UPDATE SKIP LOCKED`, `
		UPDATE usage_intervals v SET rolled_to = iv.b FROM iv
		WHERE v.tenant_id = iv.tenant_id AND v.job_uid = iv.job_uid AND v.start_time = iv.start_time`)

// sqlUsageRollupOpen moves open spans (the jobs' rows) up to $1. The
// job's row is locked while it moves, so the worker's save that closes
// the span (JobSave) sees where it was rolled to.
var sqlUsageRollupOpen = sqlUsageRollupOf(`
		SELECT tenant_id, uid AS job_uid, creator, labels, ledger_gpus AS gpus, ledger_cpu_millis AS cpu_millis,
		       ledger_memory_bytes AS memory_bytes, ledger_pods AS pods, coalesce(ledger_rolled, ledger_since) AS a,
		       $1::timestamptz AS b
		FROM jobs
		WHERE ledger_since IS NOT NULL AND coalesce(ledger_rolled, ledger_since) < $1
		ORDER BY tenant_id, uid
		LIMIT $2
		FOR UPDATE SKIP LOCKED`, `
		UPDATE jobs j SET ledger_rolled = iv.b FROM iv
		WHERE j.tenant_id = iv.tenant_id AND j.uid = iv.job_uid`)

// sqlUsageRollupOf is the rollup of the spans iv selects (columns
// tenant_id, creator, labels, the demand, a and b: the part to move),
// marked moved by moved.
func sqlUsageRollupOf(iv, moved string) string {
	return `
	WITH iv AS (` + iv + `
	), moved AS (` + moved + `
	), hours AS (
		SELECT iv.tenant_id, s.hour, iv.creator, iv.labels,
		       sum(iv.gpus * s.seconds) AS g, sum(iv.cpu_millis * s.seconds / 1000) AS c,
		       sum(iv.memory_bytes * s.seconds) AS m, sum(iv.pods * s.seconds) AS p
		FROM iv, trainyard_usage_hours(iv.a, iv.b) s
		GROUP BY 1, 2, 3, 4
	), added AS (
		INSERT INTO usage_hourly AS u (tenant_id, hour, creator, labels, gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds)
		SELECT tenant_id, hour, creator, labels, g, c, m, p FROM hours
		ORDER BY 1, 2, 3, 4
		ON CONFLICT (tenant_id, hour, creator, labels) DO UPDATE SET
		    gpu_seconds = u.gpu_seconds + excluded.gpu_seconds,
		    cpu_seconds = u.cpu_seconds + excluded.cpu_seconds,
		    memory_byte_seconds = u.memory_byte_seconds + excluded.memory_byte_seconds,
		    pod_seconds = u.pod_seconds + excluded.pod_seconds
	), days AS (
		INSERT INTO usage_daily AS u (tenant_id, day, creator, labels, gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds)
		SELECT tenant_id, date_trunc('day', hour, 'UTC'), creator, labels, sum(g), sum(c), sum(m), sum(p) FROM hours
		GROUP BY 1, 2, 3, 4
		ORDER BY 1, 2, 3, 4
		ON CONFLICT (tenant_id, day, creator, labels) DO UPDATE SET
		    gpu_seconds = u.gpu_seconds + excluded.gpu_seconds,
		    cpu_seconds = u.cpu_seconds + excluded.cpu_seconds,
		    memory_byte_seconds = u.memory_byte_seconds + excluded.memory_byte_seconds,
		    pod_seconds = u.pod_seconds + excluded.pod_seconds
	)
	SELECT count(*) FROM iv`
}

// sqlUsageSeries is the ledger's hours from $from (hour-aligned) to $to:
// the rolled-up hours, and what is not rolled up yet (open spans up to
// $now) split at hours. %s is an extra condition on tenant_id for both
// (on u. and v.), "true" for none. Columns: tenant_id, hour, creator,
// labels, g, c, m, p (resource-seconds: GPUs, cores, bytes, pods), gu
// and gi (GPU-seconds used, as measured, and held idle: written to the
// hours directly by the GPU poller, GPUFiguresRecord, so spans not rolled
// up add none).
func sqlUsageSeries(tenantCond, from, to, now string) string {
	return sqlUsageSeriesFrom("usage_hourly", "hour", tenantCond, from, to, now)
}

// sqlUsageSeriesFrom is sqlUsageSeries reading the rolled-up part from
// table (usage_hourly or usage_daily) by its time column; with
// usage_daily, $from and $to must be day-aligned and the rolled-up rows'
// "hour" is their day. usage_daily has no GPU-seconds used or idle (the
// GPU poller writes them to usage_hourly alone): with it, they come from
// usage_hourly's hours that have any (a partial index, migration 000026:
// none and no cost without --prometheus-url).
func sqlUsageSeriesFrom(table, at, tenantCond, from, to, now string) string {
	measuredCols, measuredHours := "u.gpu_used_seconds AS gu, u.gpu_idle_seconds AS gi", ""
	if table != "usage_hourly" {
		measuredCols = "0::double precision AS gu, 0::double precision AS gi"
		measuredHours = `
		UNION ALL
		SELECT w.tenant_id, w.hour, w.creator, w.labels, 0, 0, 0, 0, w.gpu_used_seconds, w.gpu_idle_seconds
		FROM usage_hourly w
		WHERE ` + strings.ReplaceAll(tenantCond, "%t", "w.tenant_id") + ` AND (w.gpu_used_seconds > 0 OR w.gpu_idle_seconds > 0)
		  AND w.hour >= ` + from + ` AND w.hour < ` + to
	}
	return `
		SELECT u.tenant_id, u.` + at + ` AS hour, u.creator, u.labels,
		       u.gpu_seconds AS g, u.cpu_seconds AS c, u.memory_byte_seconds AS m, u.pod_seconds AS p,
		       ` + measuredCols + `
		FROM ` + table + ` u
		WHERE ` + strings.ReplaceAll(tenantCond, "%t", "u.tenant_id") + ` AND u.` + at + ` >= ` + from + ` AND u.` + at + ` < ` + to + measuredHours + `
		UNION ALL
		SELECT v.tenant_id, s.hour, v.creator, v.labels,
		       v.gpus * s.seconds, v.cpu_millis * s.seconds / 1000, v.memory_bytes * s.seconds, v.pods * s.seconds,
		       0::double precision, 0::double precision
		FROM usage_intervals v,
		     trainyard_usage_hours(greatest(v.rolled_to, ` + from + `), least(v.end_time, ` + now + `, ` + to + `)) s
		WHERE ` + strings.ReplaceAll(tenantCond, "%t", "v.tenant_id") + ` AND v.rolled_to < v.end_time
		UNION ALL
		SELECT o.tenant_id, s.hour, o.creator, o.labels,
		       o.ledger_gpus * s.seconds, o.ledger_cpu_millis * s.seconds / 1000, o.ledger_memory_bytes * s.seconds, o.ledger_pods * s.seconds,
		       0::double precision, 0::double precision
		FROM jobs o,
		     trainyard_usage_hours(greatest(coalesce(o.ledger_rolled, o.ledger_since), ` + from + `), least(` + now + `, ` + to + `)) s
		WHERE ` + strings.ReplaceAll(tenantCond, "%t", "o.tenant_id") + ` AND o.ledger_since IS NOT NULL`
}

// UsageStep is the width of a usage query's buckets.
type UsageStep string

const (
	StepHour UsageStep = "hour"
	StepDay  UsageStep = "day"
)

// UsageQueryParams asks the ledger for usage by bucket.
type UsageQueryParams struct {
	// Tenant: one tenant's usage; "" every tenant's (platform admins).
	Tenant string
	// Start and End bound the buckets: [Start, End), both at a step's
	// boundary (UTC).
	Start, End time.Time
	Step       UsageStep
	// ByCreator and ByLabels split a tenant's usage by creator and by the
	// values of these job labels ("" for jobs without the label).
	ByCreator bool
	ByLabels  []string
	// Now bounds what open spans count (the store's clock when zero).
	Now time.Time
}

// UsageRow is the usage of one bucket, tenant and group.
type UsageRow struct {
	Start   time.Time
	Tenant  string
	Creator string
	// Labels are the values of ByLabels, in order.
	Labels []string
	// Resource-seconds: GPU-, core-, byte- and pod-seconds.
	GPUSeconds, CPUSeconds, MemoryByteSeconds, PodSeconds float64
	// GPUUsedSeconds: GPU-seconds used, as DCGM measured them (allocated
	// GPUs times mean utilisation; internal/gpuutil). Zero without
	// --prometheus-url.
	GPUUsedSeconds float64
	// GPUIdleSeconds: GPU-seconds held while the job was flagged IdleGPUs
	// (allocated GPUs times the time from the poll that set the flag to
	// the poll that cleared it; store/gpu.go). Zero without
	// --prometheus-url.
	GPUIdleSeconds float64
}

// UsageQuery returns the usage in [Start, End) by bucket, tenant and
// group, in that order; buckets without usage are left out.
func (s *Store) UsageQuery(ctx context.Context, p UsageQueryParams) ([]UsageRow, error) {
	now := p.Now
	if now.IsZero() {
		now = s.timestamp()
	}
	args := []any{p.Start.UTC(), p.End.UTC(), now}
	cond := "true"
	if p.Tenant != "" {
		args = append(args, p.Tenant)
		cond = "%t = $4"
	}
	bucket, table, at := "x.hour", "usage_hourly", "hour"
	if p.Step == StepDay {
		bucket = "date_trunc('day', x.hour, 'UTC')"
		if dayAligned(p.Start) && dayAligned(p.End) {
			table, at = "usage_daily", "day"
		}
	}
	cols := []string{bucket, "x.tenant_id"}
	if p.ByCreator {
		cols = append(cols, "x.creator")
	} else {
		cols = append(cols, "''")
	}
	for _, k := range p.ByLabels {
		args = append(args, k)
		cols = append(cols, "coalesce(x.labels->>$"+strconv.Itoa(len(args))+"::text, '')")
	}
	groups := make([]string, len(cols))
	for i := range cols {
		groups[i] = strconv.Itoa(i + 1)
	}
	sql := `SELECT ` + strings.Join(cols, ", ") + `, sum(x.g), sum(x.c), sum(x.m), sum(x.p), sum(x.gu), sum(x.gi)
		FROM (` + sqlUsageSeriesFrom(table, at, cond, "$1::timestamptz", "$2::timestamptz", "$3::timestamptz") + `) x
		GROUP BY ` + strings.Join(groups, ", ") + `
		HAVING sum(x.g) > 0 OR sum(x.c) > 0 OR sum(x.m) > 0 OR sum(x.p) > 0 OR sum(x.gu) > 0 OR sum(x.gi) > 0
		ORDER BY ` + strings.Join(groups, ", ")
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err, "usage")
	}
	defer rows.Close()
	var out []UsageRow
	for rows.Next() {
		r := UsageRow{Labels: make([]string, len(p.ByLabels))}
		dest := []any{&r.Start, &r.Tenant, &r.Creator}
		for i := range r.Labels {
			dest = append(dest, &r.Labels[i])
		}
		dest = append(dest, &r.GPUSeconds, &r.CPUSeconds, &r.MemoryByteSeconds, &r.PodSeconds, &r.GPUUsedSeconds, &r.GPUIdleSeconds)
		if err := rows.Scan(dest...); err != nil {
			return nil, translate(err, "usage")
		}
		r.Start = r.Start.UTC()
		out = append(out, r)
	}
	return out, translate(rows.Err(), "usage")
}

// dayAligned reports whether t is a UTC midnight: where usage_daily's
// days may stand in for usage_hourly's hours.
func dayAligned(t time.Time) bool { return t.Equal(t.UTC().Truncate(24 * time.Hour)) }

// SharingAsk asks the ledger what sharing needs of one tenant.
type SharingAsk struct {
	Tenant string
	// BudgetFrom: GPU-seconds from here on (the budget period's start, at
	// a UTC hour); zero: no budget.
	BudgetFrom time.Time
	// HalfLife: decayed usage with this half-life; zero: none.
	HalfLife time.Duration
}

// SharingUsage is what the ledger says of a tenant for sharing.
type SharingUsage struct {
	// BudgetGPUSeconds are the GPU-seconds since BudgetFrom, and
	// FirstUse the first hour with any.
	BudgetGPUSeconds float64
	FirstUse         time.Time
	// Decayed is the decayed average of what the tenant held, per
	// resource (job.Vector's units), as of now.
	Decayed [job.NumResources]float64
}

// decayHalfLives is how far back decayed usage reads: what is older
// weighs less than 2^-decayHalfLives.
const decayHalfLives = 20

// UsageSharing computes, from the ledger as of now, each asked tenant's
// GPU-seconds in its budget period and its decayed usage: an
// exponentially weighted average of what its jobs held, with its half
// life (admission.DecayUsage's, over the whole history). Within an hour
// the ledger keeps sums only, so an hour's usage counts as spread evenly
// over it (the current hour up to now).
func (s *Store) UsageSharing(ctx context.Context, now time.Time, asks []SharingAsk) (map[string]SharingUsage, error) {
	out := map[string]SharingUsage{}
	if len(asks) == 0 {
		return out, nil
	}
	now = now.UTC().Truncate(time.Microsecond)
	var (
		tenants     []string
		budgetFroms []*time.Time
		froms       []time.Time
		halfLives   []float64
		earliest    = now
	)
	for _, a := range asks {
		from := now.Truncate(time.Hour)
		var bf *time.Time
		if !a.BudgetFrom.IsZero() {
			t := a.BudgetFrom.UTC().Truncate(time.Hour)
			bf = &t
			from = t
		}
		if a.HalfLife > 0 {
			d := now.Add(-time.Duration(decayHalfLives) * a.HalfLife).Truncate(time.Hour)
			if d.Before(from) {
				from = d
			}
		}
		if from.Before(earliest) {
			earliest = from
		}
		tenants, budgetFroms, froms = append(tenants, a.Tenant), append(budgetFroms, bf), append(froms, from)
		halfLives = append(halfLives, a.HalfLife.Seconds())
	}
	sql := `
		WITH t AS (
			SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::float8[]) AS t(tenant_id, budget_from, since, half_life)
		), b AS (
			SELECT x.tenant_id, x.hour, sum(x.g) AS g, sum(x.c) AS c, sum(x.m) AS m, sum(x.p) AS p
			FROM (` + sqlUsageSeries("%t = ANY($1)", "$5::timestamptz", "$6::timestamptz", "$6::timestamptz") + `) x
			GROUP BY 1, 2
		), w AS (
			SELECT b.*, t.budget_from, t.since,
			       CASE WHEN t.half_life > 0 THEN
			           (power(2, -extract(epoch FROM $6::timestamptz - least(b.hour + interval '1 hour', $6::timestamptz))::float8 / t.half_life)
			            - power(2, -extract(epoch FROM $6::timestamptz - b.hour)::float8 / t.half_life))
			           / greatest(extract(epoch FROM least(b.hour + interval '1 hour', $6::timestamptz) - b.hour)::float8, 1e-6)
			       END AS k
			FROM b JOIN t USING (tenant_id)
			WHERE b.hour >= t.since
		)
		SELECT tenant_id,
		       coalesce(sum(g) FILTER (WHERE hour >= budget_from), 0),
		       min(hour) FILTER (WHERE hour >= budget_from AND g > 0),
		       coalesce(sum(c * k), 0), coalesce(sum(m * k), 0), coalesce(sum(g * k), 0), coalesce(sum(p * k), 0)
		FROM w GROUP BY tenant_id`
	rows, err := s.pool.Query(ctx, sql, tenants, budgetFroms, froms, halfLives, earliest, now)
	if err != nil {
		return nil, translate(err, "usage ledger")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id    string
			u     SharingUsage
			first *time.Time
			cores float64
		)
		if err := rows.Scan(&id, &u.BudgetGPUSeconds, &first, &cores, &u.Decayed[job.Memory], &u.Decayed[job.GPU], &u.Decayed[job.Pods]); err != nil {
			return nil, translate(err, "usage ledger")
		}
		u.Decayed[job.CPU] = cores * 1000 // millicores, as job.Vector counts
		if first != nil {
			u.FirstUse = first.UTC()
		}
		for r, v := range u.Decayed {
			if math.Abs(v) < 1e-9 {
				u.Decayed[r] = 0
			}
		}
		out[id] = u
	}
	return out, translate(rows.Err(), "usage ledger")
}

// UsageSpan is one admitted span of a job.
type UsageSpan struct {
	Start time.Time
	// End is zero while the span is open.
	End    time.Time
	Demand job.Vector
}

// UsageSpans returns a job's admitted spans, oldest first.
func (s *Store) UsageSpans(ctx context.Context, tenantID, uid string) ([]UsageSpan, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT start_time, end_time, gpus, cpu_millis, memory_bytes, pods FROM usage_intervals
		WHERE tenant_id = $1 AND job_uid = $2::uuid
		UNION ALL
		SELECT ledger_since, NULL, ledger_gpus, ledger_cpu_millis, ledger_memory_bytes, ledger_pods FROM jobs
		WHERE tenant_id = $1 AND uid = $2::uuid AND ledger_since IS NOT NULL
		ORDER BY 1`, tenantID, uid)
	if err != nil {
		return nil, translate(err, fmt.Sprintf("usage of job %s", uid))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (UsageSpan, error) {
		var (
			sp  UsageSpan
			end *time.Time
		)
		err := r.Scan(&sp.Start, &end, &sp.Demand[job.GPU], &sp.Demand[job.CPU], &sp.Demand[job.Memory], &sp.Demand[job.Pods])
		sp.Start = sp.Start.UTC()
		if end != nil {
			sp.End = end.UTC()
		}
		return sp, err
	})
	return out, translate(err, fmt.Sprintf("usage of job %s", uid))
}

// TenantHeld is what the ledger says of a tenant now, for metrics.
type TenantHeld struct {
	// GPUs are held by the tenant's open spans (admitted jobs).
	GPUs int64
	// GPUSeconds since the asked time.
	GPUSeconds float64
}

// UsageHeld returns, per tenant with any, the GPUs its admitted jobs hold
// now and its GPU-seconds since since (at a UTC hour) up to now.
func (s *Store) UsageHeld(ctx context.Context, since time.Time) (map[string]TenantHeld, error) {
	now := s.timestamp()
	rows, err := s.pool.Query(ctx, `
		SELECT tenant_id, sum(gpus), sum(g) FROM (
			SELECT tenant_id, ledger_gpus AS gpus, 0::float8 AS g FROM jobs WHERE ledger_since IS NOT NULL
			UNION ALL
			SELECT tenant_id, 0, g FROM (`+sqlUsageSeries("true", "$1::timestamptz", "$2::timestamptz", "$2::timestamptz")+`) x
		) y GROUP BY tenant_id`, since.UTC().Truncate(time.Hour), now)
	if err != nil {
		return nil, translate(err, "usage ledger")
	}
	defer rows.Close()
	out := map[string]TenantHeld{}
	for rows.Next() {
		var (
			id string
			h  TenantHeld
		)
		if err := rows.Scan(&id, &h.GPUs, &h.GPUSeconds); err != nil {
			return nil, translate(err, "usage ledger")
		}
		out[id] = h
	}
	return out, translate(rows.Err(), "usage ledger")
}
