//go:build integration

package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/job"
)

// jobsBulkInsert adds n jobs to tenantID in one statement: states spread
// over QUEUED, RUNNING and mostly final ones, labels team=team-0..9.
func jobsBulkInsert(ctx context.Context, pool *pgxpool.Pool, tenantID string, n int) error {
	_, err := pool.Exec(ctx, `
		INSERT INTO jobs (tenant_id, uid, name, labels, spec, status, state, priority, active,
		                  create_time, update_time)
		SELECT $1, gen_random_uuid(), 'bulk-' || g, jsonb_build_object('team', 'team-' || (g % 10)),
		       '{"replicas":[],"runPolicy":{"backoffLimit":3,"cleanPodPolicy":"Running"}}',
		       jsonb_build_object('state', s.st), s.st, 0,
		       s.st NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'), now(), now()
		FROM generate_series(1, $2::int) AS g,
		     LATERAL (SELECT (ARRAY['SUCCEEDED','SUCCEEDED','SUCCEEDED','FAILED','CANCELLED',
		                            'SUCCEEDED','RUNNING','SUCCEEDED','FAILED','QUEUED'])[1 + g % 10] AS st) AS s`,
		tenantID, n)
	return err
}

// connWith is a connection of b's pool with setting at value until the
// test ends; it goes back to the pool reset.
func connWith(t *testing.T, b *testBundle, setting, value string) *pgxpool.Conn {
	t.Helper()
	conn, err := b.pool.Acquire(b.ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "RESET "+setting)
		conn.Release()
	})
	_, err = conn.Exec(b.ctx, "SET "+setting+" = "+value)
	require.NoError(t, err)
	return conn
}

// planNodes flattens an EXPLAIN (FORMAT JSON) plan into "Node Type[:Index Name]".
func planNodes(t *testing.T, ctx context.Context, conn *pgxpool.Conn, query string, args []any) []string {
	t.Helper()
	var raw []byte
	require.NoError(t, conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&raw))
	var plans []struct {
		Plan map[string]any `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(raw, &plans))
	var out []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		s, _ := n["Node Type"].(string)
		if idx, ok := n["Index Name"].(string); ok {
			s += ":" + idx
		}
		out = append(out, s)
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			walk(k.(map[string]any))
		}
	}
	walk(plans[0].Plan)
	return out
}

func TestJobListExplainUsesIndexes(t *testing.T) {
	b := setup(t)
	for _, id := range []string{"big", "other"} {
		b.tenantCreate(t, id)
	}
	require.NoError(t, jobsBulkInsert(b.ctx, b.pool, "big", 50000))
	require.NoError(t, jobsBulkInsert(b.ctx, b.pool, "other", 20000))
	_, err := b.pool.Exec(b.ctx, "ANALYZE jobs")
	require.NoError(t, err)

	// Make a full scan unattractive, as it is at a million rows.
	conn := connWith(t, b, "enable_seqscan", "off")

	cases := []struct {
		name  string
		p     JobListParams
		index string
		merge bool
	}{
		{name: "all", p: JobListParams{}, index: "jobs_tenant_seq_idx"},
		{name: "all, later page", p: JobListParams{Before: 30000}, index: "jobs_tenant_seq_idx"},
		{name: "one state", p: JobListParams{States: []job.State{job.Running}}, index: "jobs_tenant_state_seq_idx"},
		{name: "one state, later page", p: JobListParams{States: []job.State{job.Queued}, Before: 30000},
			index: "jobs_tenant_state_seq_idx"},
		{name: "three states", p: JobListParams{States: []job.State{job.Queued, job.Running, job.Restarting}},
			index: "jobs_tenant_state_seq_idx", merge: true},
		{name: "label filter", p: JobListParams{LabelEquals: map[string]string{"team": "team-3"}}},
		{name: "creator", p: JobListParams{Creator: "nobody"}, index: "jobs_tenant_creator_seq_idx"},
		{name: "creator, later page", p: JobListParams{Creator: "alice", Before: 30000}, index: "jobs_tenant_creator_seq_idx"},
	}
	t.Run("claim", func(t *testing.T) {
		nodes := planNodes(t, b.ctx, conn, sqlJobClaim, []any{"w", 10, DefaultCluster})
		plan := strings.Join(nodes, " > ")
		t.Log(plan)
		require.Contains(t, plan, "Index Scan:jobs_claim_idx")
		require.Contains(t, plan, "worker_leases_expiry_idx")
		require.Contains(t, plan, "jobs_worker_idx")
		require.NotContains(t, plan, "Sort")
	})
	t.Run("scheduler snapshot", func(t *testing.T) {
		nodes := planNodes(t, b.ctx, conn, sqlSchedulerJobs, []any{int64(0)})
		plan := strings.Join(nodes, " > ")
		t.Log(plan)
		require.Contains(t, plan, "jobs_unfinished_idx", "the snapshot reads unfinished jobs only, whatever the history")
	})
	t.Run("tenant usage", func(t *testing.T) {
		nodes := planNodes(t, b.ctx, conn, sqlTenantUsage, []any{"big"})
		plan := strings.Join(nodes, " > ")
		t.Log(plan)
		require.Contains(t, plan, "jobs_unfinished_idx", "the tenant's unfinished jobs only, whatever the history")
	})
	t.Run("scheduler waiting", func(t *testing.T) {
		nodes := planNodes(t, b.ctx, conn, sqlSchedulerWaiting, nil)
		plan := strings.Join(nodes, " > ")
		t.Log(plan)
		require.Contains(t, plan, "jobs_claim_idx", "an index probe, whatever the history")
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			query, args := jobListQuery("big", tc.p, 51)
			nodes := planNodes(t, b.ctx, conn, query, args)
			plan := strings.Join(nodes, " > ")
			t.Log(plan)
			for _, n := range nodes {
				require.NotEqual(t, "Seq Scan", n, plan)
				if tc.index != "" {
					require.NotContains(t, n, "Sort", "ordered by the index, not sorted: %s", plan)
				}
			}
			if tc.index != "" {
				require.Contains(t, plan, "Index Scan:"+tc.index)
			}
			if tc.merge {
				require.Contains(t, nodes, "Merge Append", plan)
			}
		})
	}
}

// The create statement's generic plan — the one Postgres settles on after
// five runs of a prepared statement, planned for ten items — joins no two
// sets of items by a nested loop: at 1,000 items that was a million
// comparisons per join (a batch took 270 ms from its sixth run on, 60 ms
// before).
func TestJobCreateManyPlanIsLinear(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "acme")
	items := make([]createItem, 3)
	for i := range items {
		it, err := prepareCreate(audit.WithActor(b.ctx, audit.Actor{Subject: "alice"}),
			JobCreateParams{Job: job.Job{Tenant: "acme", Name: fmt.Sprintf("j%d", i), Spec: testSpec()}, RequestID: fmt.Sprint(i)})
		require.NoError(t, err)
		items[i] = it
	}
	query, args := createStatement(items, queuedStatus(time.Now()), time.Now())

	conn := connWith(t, b, "plan_cache_mode", "force_generic_plan")
	_, err := conn.Conn().Prepare(b.ctx, "create_generic", query)
	require.NoError(t, err)
	defer func() { _ = conn.Conn().Deallocate(context.Background(), "create_generic") }()

	// A generic plan does not depend on the values: EXPLAIN shows it for
	// NULLs as it would for any.
	nulls := strings.TrimSuffix(strings.Repeat("NULL, ", len(args)), ", ")
	nodes := planNodes(t, b.ctx, conn, "EXECUTE create_generic("+nulls+")", nil)
	require.Contains(t, nodes, "ModifyTable", "the plan is the statement's")
	require.NotContains(t, nodes, "Nested Loop", "generic plan: %v", nodes)
}

// A save finds its rows by key even when the statistics say no job is
// owned (taken before a burst of claims): a fence on the owner that the
// planner could prove non-null made it read all of jobs_worker_idx, which
// it thought empty, for each row.
func TestJobSavePlanFindsRowsByKey(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "acme")
	require.NoError(t, jobsBulkInsert(b.ctx, b.pool, "acme", 2000))
	b.exec(t, "VACUUM ANALYZE jobs")
	b.exec(t, `
		WITH l AS (INSERT INTO worker_leases VALUES ('w', now() + interval '1 hour'))
		UPDATE jobs SET worker_id = 'w' WHERE active`)
	var (
		uid     string
		version int64
	)
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT uid::text, version FROM jobs WHERE active LIMIT 1`).Scan(&uid, &version))

	items := []saveItem{{p: JobSaveParams{WorkerID: "w", Tenant: "acme", UID: uid, Version: version,
		Status: job.Status{State: job.Starting}, Events: []job.Event{{Reason: "Starting"}}},
		uid: uuid.MustParse(uid), now: b.store.timestamp()}}
	query, args := saveStatement(items)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		conn := connWith(t, b, "plan_cache_mode", mode)
		nodes := planNodes(t, b.ctx, conn, query, args)
		require.Contains(t, nodes, "ModifyTable", "the plan is the statement's")
		require.Contains(t, nodes, "Index Scan:jobs_pkey", "%s: %v", mode, nodes)
		for _, n := range nodes {
			require.NotContains(t, n, "jobs_worker_idx", "%s: %v", mode, nodes)
		}
	}
}

// A claim reads only what it takes: none of the jobs a live worker owns,
// and the due jobs in order up to its limit, not all of them, also with
// its plan made while the table was small (a connection keeps a
// statement's generic plan), as at the start of a burst of submissions.
func TestJobClaimReadsWhatItTakes(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "acme")
	conn := connWith(t, b, "plan_cache_mode", "force_generic_plan")
	explain := func(t *testing.T) (owned, read, claimed float64) {
		var walk func(n map[string]any)
		walk = func(n map[string]any) {
			num := func(k string) float64 { f, _ := n[k].(float64); return f }
			rows := num("Actual Rows") * num("Actual Loops")
			if n["Index Name"] == "jobs_worker_idx" {
				owned += rows
			}
			if n["Relation Name"] == "jobs" && n["Node Type"] != "ModifyTable" {
				read += rows + num("Rows Removed by Filter") + num("Rows Removed by Index Recheck")
			}
			if n["Node Type"] == "ModifyTable" {
				claimed += rows
			}
			kids, _ := n["Plans"].([]any)
			for _, k := range kids {
				walk(k.(map[string]any))
			}
		}
		err := pgx.BeginFunc(b.ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(b.ctx, sqlClaimSettings); err != nil {
				return err
			}
			var raw []byte
			if err := tx.QueryRow(b.ctx, "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claim_generic('idle', 10, 'default')").Scan(&raw); err != nil {
				return err
			}
			var plans []struct {
				Plan map[string]any `json:"Plan"`
			}
			if err := json.Unmarshal(raw, &plans); err != nil {
				return err
			}
			walk(plans[0].Plan)
			return errors.New("roll back")
		})
		require.EqualError(t, err, "roll back")
		return owned, read, claimed
	}
	_, err := conn.Conn().Prepare(b.ctx, "claim_generic", sqlJobClaim)
	require.NoError(t, err)
	defer func() { _ = conn.Conn().Deallocate(context.Background(), "claim_generic") }()
	b.jobCreate(t, "acme", "first", 0) // a small table: the plan is made now
	_, _, claimed := explain(t)
	require.Zero(t, claimed)

	require.NoError(t, jobsBulkInsert(b.ctx, b.pool, "acme", 40000))
	b.exec(t, `
		WITH l AS (INSERT INTO worker_leases VALUES ('busy', now() + interval '1 hour'))
		UPDATE jobs SET admitted = true,
		                worker_id = CASE WHEN seq % 2 = 0 THEN 'busy' END,
		                claim_after = CASE WHEN seq % 2 = 0 THEN claim_after ELSE '-infinity' END
		WHERE active`)
	due := b.count(t, `SELECT count(*) FROM jobs WHERE active AND worker_id IS NULL`)
	owned, read, claimed := explain(t)
	require.Equal(t, 10.0, claimed)
	require.Zero(t, owned, "rows read from jobs_worker_idx")
	require.LessOrEqual(t, read, 30.0, "rows of jobs read, of %d due", due) // 10 due, then 10 by key to update
}

// The ledger's "not rolled up yet" (migrations 000024, 000025): a usage
// read finds open spans in the jobs' rows by jobs_ledger_open_idx and
// closed ones not rolled up by usage_intervals_unrolled_idx, not by a scan
// of every span.
// (The rollup's ORDER BY ... LIMIT walks the primary key, as it did with
// the former index.)
func TestLedgerUnrolledPlan(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "big")
	b.exec(t, `
		INSERT INTO usage_intervals (tenant_id, job_uid, creator, labels, gpus, cpu_millis, memory_bytes, pods, start_time, end_time, rolled_to)
		SELECT 'big', gen_random_uuid(), 'alice', '{}', 1, 1000, 1, 1, now() - interval '2 days', e, CASE WHEN i % 100 = 0 THEN now() - interval '2 days' ELSE e END
		FROM generate_series(1, 20000) i, LATERAL (SELECT now() - interval '1 day' AS e) x`)
	b.exec(t, `ANALYZE usage_intervals`)
	conn := connWith(t, b, "enable_seqscan", "off")
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"usage series": {sqlUsageSeries("%t = $1", "$2::timestamptz", "$3::timestamptz", "$3::timestamptz"), []any{"big", time.Now().Add(-72 * time.Hour), time.Now()}},
	} {
		t.Run(name, func(t *testing.T) {
			plan := strings.Join(planNodes(t, b.ctx, conn, q.sql, q.args), " > ")
			t.Log(plan)
			require.Contains(t, plan, "jobs_ledger_open_idx")
			require.Contains(t, plan, "usage_intervals_unrolled_idx")
			require.NotContains(t, plan, "Seq Scan:usage_intervals")
			require.NotContains(t, plan, "Seq Scan:jobs")
		})
	}
}

// A usage read by day takes GPU-seconds used and idle from the hours that
// have any, by the partial index usage_hourly_measured_idx (migration
// 000026), not from every hour of the tenant.
func TestLedgerMeasuredHoursPlan(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "big")
	b.exec(t, `
		INSERT INTO usage_hourly (tenant_id, hour, creator, labels, gpu_seconds, gpu_used_seconds, gpu_idle_seconds)
		SELECT 'big', date_trunc('hour', now()) - i * interval '1 hour', 'alice', '{}', 3600,
		       CASE WHEN i % 50 = 0 THEN 100 ELSE 0 END, CASE WHEN i % 70 = 0 THEN 3600 ELSE 0 END
		FROM generate_series(1, 8000) i`)
	b.exec(t, `ANALYZE usage_hourly`)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	sql := sqlUsageSeriesFrom("usage_daily", "day", "%t = $1", "$2::timestamptz", "$3::timestamptz", "$3::timestamptz")
	conn := connWith(t, b, "enable_seqscan", "off")
	plan := strings.Join(planNodes(t, b.ctx, conn, sql, []any{"big", day.AddDate(0, 0, -300), day}), " > ")
	t.Log(plan)
	require.Contains(t, plan, "usage_hourly_measured_idx")
	require.NotContains(t, plan, "Seq Scan:usage_hourly")
}
