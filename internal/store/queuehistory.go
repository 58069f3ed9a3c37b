package store

import (
	"context"
	"time"
)

// The queue over time (migration 000024): the scheduler's leader writes a
// sample a minute (QueueSampleWrite), the usage API reads it by bucket
// (QueueHistoryQuery). Samples are a picture, not an account: they are not
// fenced by the scheduler's lease (a deposed leader's last sample is as
// true as its successor's), and a minute without a leader has no sample.

// queueRetention is how long queue and capacity samples are kept.
const queueRetention = 35 * 24 * time.Hour

// QueueSample is one tenant's waiting jobs at a sample.
type QueueSample struct {
	Tenant      string
	PendingJobs int
	PendingGPUs int64
	// OldestWait is how long the tenant's longest-waiting job has waited.
	OldestWait time.Duration
}

// QueueSampleWrite records a sample taken at: the tenants with jobs
// waiting and the cluster's GPU capacity; and drops samples older than
// the retention. A second write at the same time changes nothing.
func (s *Store) QueueSampleWrite(ctx context.Context, at time.Time, capacityGPUs int64, tenants []QueueSample) error {
	at = at.UTC().Truncate(time.Microsecond)
	ids := make([]string, len(tenants))
	jobs := make([]int32, len(tenants))
	gpus := make([]int64, len(tenants))
	waits := make([]float64, len(tenants))
	for i, t := range tenants {
		ids[i], jobs[i], gpus[i], waits[i] = t.Tenant, int32(t.PendingJobs), t.PendingGPUs, max(t.OldestWait, 0).Seconds()
	}
	_, err := s.pool.Exec(ctx, `
		WITH c AS (
			INSERT INTO capacity_samples (sampled_at, gpus) VALUES ($1, $2) ON CONFLICT DO NOTHING
		), q AS (
			INSERT INTO queue_samples (sampled_at, tenant_id, pending_jobs, pending_gpus, oldest_wait_seconds)
			SELECT $1, * FROM unnest($3::text[], $4::int[], $5::bigint[], $6::float8[]) ON CONFLICT DO NOTHING
		), dq AS (
			DELETE FROM queue_samples WHERE sampled_at < $7
		)
		DELETE FROM capacity_samples WHERE sampled_at < $7`,
		at, capacityGPUs, ids, jobs, gpus, waits, at.Add(-queueRetention))
	return translate(err, "queue samples")
}

// QueueHistoryParams asks for the queue by bucket.
type QueueHistoryParams struct {
	// Tenant is one tenant's id, or "" for every tenant.
	Tenant string
	// Start and End bound the window; Step is the bucket's width (buckets
	// start at multiples of it since the Unix epoch, so UTC hours and
	// days).
	Start, End time.Time
	Step       time.Duration
}

// QueueHistoryRow is one bucket of one tenant's queue.
type QueueHistoryRow struct {
	Start           time.Time
	Tenant          string
	PendingJobsMean float64
	PendingJobsMax  int
	PendingGPUsMax  int64
	OldestWaitMean  float64 // seconds
	OldestWaitMax   float64 // seconds
}

// CapacityRow is the cluster's GPUs in one bucket (the most sampled) and
// how many samples the bucket has.
type CapacityRow struct {
	Start   time.Time
	GPUs    int64
	Samples int
}

// QueueHistoryQuery returns the queue by bucket and tenant (buckets in
// which a tenant had nothing waiting are left out) and the capacity by
// bucket. A bucket's means count every sample in it: a sample in which
// the tenant had nothing waiting counts 0.
func (s *Store) QueueHistoryQuery(ctx context.Context, p QueueHistoryParams) ([]QueueHistoryRow, []CapacityRow, error) {
	step := p.Step.Seconds()
	rows, err := s.pool.Query(ctx, `
		SELECT to_timestamp(floor(extract(epoch FROM sampled_at) / $3) * $3) AS b, max(gpus), count(*)
		FROM capacity_samples WHERE sampled_at >= $1 AND sampled_at < $2
		GROUP BY b ORDER BY b`, p.Start, p.End, step)
	if err != nil {
		return nil, nil, translate(err, "capacity samples")
	}
	var capacity []CapacityRow
	samples := map[time.Time]int{}
	for rows.Next() {
		var c CapacityRow
		if err := rows.Scan(&c.Start, &c.GPUs, &c.Samples); err != nil {
			rows.Close()
			return nil, nil, translate(err, "capacity samples")
		}
		c.Start = c.Start.UTC()
		samples[c.Start] = c.Samples
		capacity = append(capacity, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, translate(err, "capacity samples")
	}
	rows, err = s.pool.Query(ctx, `
		SELECT to_timestamp(floor(extract(epoch FROM sampled_at) / $4) * $4) AS b, tenant_id,
			sum(pending_jobs), count(*), max(pending_jobs), max(pending_gpus), sum(oldest_wait_seconds), max(oldest_wait_seconds)
		FROM queue_samples
		WHERE ($1 = '' OR tenant_id = $1) AND sampled_at >= $2 AND sampled_at < $3
		GROUP BY b, tenant_id ORDER BY b, tenant_id`, p.Tenant, p.Start, p.End, step)
	if err != nil {
		return nil, nil, translate(err, "queue samples")
	}
	defer rows.Close()
	var out []QueueHistoryRow
	for rows.Next() {
		var (
			r        QueueHistoryRow
			sumJobs  int64
			n        int
			sumWaits float64
		)
		if err := rows.Scan(&r.Start, &r.Tenant, &sumJobs, &n, &r.PendingJobsMax, &r.PendingGPUsMax, &sumWaits, &r.OldestWaitMax); err != nil {
			return nil, nil, translate(err, "queue samples")
		}
		r.Start = r.Start.UTC()
		// The bucket's samples are the capacity rows'; a tenant's rows
		// are at most as many (a leader's sample writes both at once).
		total := max(samples[r.Start], n)
		r.PendingJobsMean = float64(sumJobs) / float64(total)
		r.OldestWaitMean = sumWaits / float64(total)
		out = append(out, r)
	}
	return out, capacity, translate(rows.Err(), "queue samples")
}
