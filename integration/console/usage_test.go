//go:build integration

package console

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/integration/harness"
	promtest "github.com/trainyard/trainyard/integration/prometheus"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// TestConsoleUsage opens the Usage page over a ledger with ten days of
// hourly rows (and their days, as the rollup writes them): vision's
// alice and bob, speech's carol, and the scheduler's queue and capacity
// samples of those days. Alice sees vision's GPUs stacked by creator,
// then by label, against its quota and its budget's pace, and vision's
// queue, and no cluster view; a platform admin sees the cluster stacked
// by tenant against its capacity and every tenant's queue too (the
// screenshot usage.png). A job's page draws its GPU utilisation per
// replica from a real Prometheus scraping a DCGM-shaped exporter
// (job-gpu.png).
func TestConsoleUsage(t *testing.T) {
	devTokens := filepath.Join(t.TempDir(), "tokens.yaml")
	require.NoError(t, os.WriteFile(devTokens, []byte("tokens:\n  - {token: carol-local-token, subject: carol}\n"), 0o600))
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Minute) // a first build of Prometheus takes minutes
	defer pcancel()
	ex := promtest.NewExporter()
	defer ex.Close()
	prom, err := promtest.Start(pctx, promtest.Options{Targets: []string{ex.Target()}, ScrapeInterval: time.Second})
	require.NoError(t, err) // never a skip
	defer prom.Stop()
	env := harness.Start(t, harness.Options{ServeArgs: []string{"--dev-auth", devTokens, "--prometheus-url", prom.URL}})
	env.CreateTenantWith(t, "vision", &pb.Tenant{
		DisplayName: "Vision team",
		Quota:       &pb.Quota{Gpu: 8, Cpu: "64", Memory: "256Gi", Pods: 20},
		Sharing:     &pb.Sharing{Budget: &pb.Budget{GpuHours: 2880, Period: pb.BudgetPeriod_BUDGET_PERIOD_ROLLING_30D}},
		Members:     []*pb.Member{harness.Subject("alice", pb.Role_ROLE_EDITOR), harness.Subject("bob", pb.Role_ROLE_EDITOR)},
	})
	env.CreateTenant(t, "speech", harness.Subject("carol", pb.Role_ROLE_EDITOR))
	// A job whose GPUs the exporter reports from now: worker-0 busy,
	// worker-1 idle. No worker runs it; Prometheus knows its pods by
	// name, as the DCGM exporter names them.
	workers := replica(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, nil)
	workers.Count = 2
	_, err = env.Jobs(t, env.Token("alice")).CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/vision", JobId: "train", Job: &pb.Job{
		Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{workers}},
	}})
	require.NoError(t, err)
	// worker-0 moves between 60 and 95 % (a new value every 5 s, for the
	// picture), worker-1 stays at 3 %.
	ns := env.Namespace("vision")
	busy := func(i int) float64 { return []float64{80, 95, 90, 70, 60, 75}[i%6] }
	ex.Set(promtest.GPU{Hostname: "gpu-0", Index: 0, Namespace: ns, Pod: "train-worker-0", Container: "tensorflow", Util: busy(0), FBUsed: 20000})
	ex.Set(promtest.GPU{Hostname: "gpu-0", Index: 1, Namespace: ns, Pod: "train-worker-1", Container: "tensorflow", Util: 3, FBUsed: 500})
	moving, stopMoving := context.WithCancel(context.Background())
	defer stopMoving()
	go func() {
		for i := 1; ; i++ {
			select {
			case <-moving.Done():
				return
			case <-time.After(5 * time.Second):
			}
			ex.Set(promtest.GPU{Hostname: "gpu-0", Index: 0, Namespace: ns, Pod: "train-worker-0", Container: "tensorflow", Util: busy(i), FBUsed: 20000})
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	// Ten days up to the last full hour: alice holds 2 to 6 GPUs by a
	// daily rhythm (4 on average), bob 3 in UTC working hours (8 to 18)
	// and 1 otherwise (46 GPU-hours a day), carol 3 all along, one of them
	// held idle (a job flagged IdleGPUs; usage_daily has no idle column:
	// the hours give it).
	end := time.Now().UTC().Truncate(time.Hour)
	_, err = conn.Exec(ctx, `
		INSERT INTO usage_hourly (tenant_id, hour, creator, labels, gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds, gpu_idle_seconds)
		SELECT g.tenant, h, g.creator, g.labels,
		       3600 * CASE g.creator
		         WHEN 'alice' THEN 4 + round(2 * sin(extract(epoch FROM h) / 3600 * pi() / 12))
		         WHEN 'bob' THEN CASE WHEN extract(hour FROM h AT TIME ZONE 'UTC') BETWEEN 8 AND 18 THEN 3 ELSE 1 END
		         ELSE 3 END,
		       3600 * 8, 3600 * 32 * 2^30, 3600, CASE g.creator WHEN 'carol' THEN 3600 ELSE 0 END
		FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', interval '1 hour') h,
		     (VALUES ('vision', 'alice', '{"team": "detection"}'::jsonb), ('vision', 'bob', '{"team": "segmentation"}'::jsonb),
		             ('speech', 'carol', '{}'::jsonb)) g(tenant, creator, labels)`,
		end.Add(-10*24*time.Hour), end)
	require.NoError(t, err, "seed usage_hourly")
	_, err = conn.Exec(ctx, `
		INSERT INTO usage_daily (tenant_id, day, creator, labels, gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds)
		SELECT tenant_id, date_trunc('day', hour, 'UTC'), creator, labels,
		       sum(gpu_seconds), sum(cpu_seconds), sum(memory_byte_seconds), sum(pod_seconds)
		FROM usage_hourly GROUP BY 1, 2, 3, 4`)
	require.NoError(t, err, "seed usage_daily")
	// The scheduler's samples of those days, every 5 minutes: 32 GPUs,
	// 48 for the last four days; vision's jobs wait in UTC working hours
	// (the longest for up to an hour), speech's one in three hours.
	_, err = conn.Exec(ctx, `
		INSERT INTO capacity_samples (sampled_at, gpus)
		SELECT s, CASE WHEN s < $2::timestamptz - interval '4 days' THEN 32 ELSE 48 END
		FROM generate_series($1::timestamptz, $2::timestamptz, interval '5 minutes') s`, end.Add(-10*24*time.Hour), end)
	require.NoError(t, err, "seed capacity_samples")
	_, err = conn.Exec(ctx, `
		INSERT INTO queue_samples (sampled_at, tenant_id, pending_jobs, pending_gpus, oldest_wait_seconds)
		SELECT s, 'vision', 1 + (extract(hour FROM s AT TIME ZONE 'UTC')::int % 5), 8, 60 * extract(minute FROM s AT TIME ZONE 'UTC') * (1 + extract(hour FROM s AT TIME ZONE 'UTC')::int % 3) / 3
		FROM generate_series($1::timestamptz, $2::timestamptz, interval '5 minutes') s
		WHERE extract(hour FROM s AT TIME ZONE 'UTC') BETWEEN 8 AND 18
		UNION ALL
		SELECT s, 'speech', 2, 4, 300
		FROM generate_series($1::timestamptz, $2::timestamptz, interval '5 minutes') s
		WHERE extract(hour FROM s AT TIME ZONE 'UTC')::int % 3 = 0`, end.Add(-10*24*time.Hour), end)
	require.NoError(t, err, "seed queue_samples")

	b := newBrowser(t)
	// legend is the labels of a chart's legend, the time axis left out.
	legend := func(tb *tab, sel string) []string {
		return eval[[]string](tb, `[...document.querySelectorAll(`+jsString(sel+` .u-legend tr.u-series`)+`)].slice(1).map(r => r.querySelector(".u-label").innerText.trim())`)
	}
	// drawn waits for a chart's canvas with n series and limits lines.
	drawn := func(tb *tab, sel string, series, limits int) {
		tb.waitJS(`(() => { const c = document.querySelector(`+jsString(sel+` .chart`)+`);
			return !!c && c.dataset.series === "`+strconv.Itoa(series)+`" && c.dataset.limits === "`+strconv.Itoa(limits)+`" &&
				!!c.querySelector("canvas") && c.querySelector("canvas").width > 0 &&
				c.querySelectorAll(".u-legend tr.u-series").length === `+strconv.Itoa(1+series+limits)+`; })()`, 20*time.Second)
	}

	// chart waits for a LineChart with n lines over at least points xs.
	chart := func(tb *tab, sel string, lines, points int) {
		tb.waitJS(`(() => { const c = document.querySelector(`+jsString(sel)+`);
			return !!c && c.dataset.series === "`+strconv.Itoa(lines)+`" && +c.dataset.points >= `+strconv.Itoa(points)+` &&
				!!c.querySelector("canvas") && c.querySelector("canvas").width > 0; })()`, 45*time.Second)
	}

	t.Run("TenantByCreatorThenLabel", func(t *testing.T) {
		alice := b.tab(t, env.HTTPURL)
		alice.signIn(env.Token("alice"))
		alice.click(`header nav a[href="/tenants/vision/usage"]`)
		alice.waitText("main h1", "Usage of vision", 10*time.Second)
		drawn(alice, `[data-testid=tenant-usage]`, 2, 2)
		require.Equal(t, []string{"alice", "bob", "Quota", "Budget pace"}, legend(alice, `[data-testid=tenant-usage]`))
		require.Contains(t, alice.text(`[data-testid=tenant-usage]`), "Budget 2880 GPU-hours per 30 days")
		// Vision's queue: jobs waiting (mean, most) and the longest wait.
		chart(alice, `[data-testid=tenant-queue-chart]`, 3, 2)
		require.Equal(t, []string{"Jobs waiting (mean)", "Jobs waiting (most)", "Longest wait (most)"}, legend(alice, `[data-testid=tenant-queue]`))

		// Not a platform admin: no cluster view.
		alice.waitJS(`!!document.querySelector('[data-cluster=forbidden]')`, 20*time.Second)
		require.Zero(t, eval[int](alice, `document.querySelectorAll('[data-testid=cluster-usage]').length`))

		alice.choose(`[data-testid=stack-by]`, "label")
		drawn(alice, `[data-testid=tenant-usage]`, 2, 2)
		alice.waitJS(`document.querySelector('[data-testid=tenant-usage] .u-legend').innerText.includes("detection")`, 20*time.Second)
		require.Equal(t, []string{"detection", "segmentation", "Quota", "Budget pace"}, legend(alice, `[data-testid=tenant-usage]`))

		// 30 days by day reads usage_daily: the same groups, and all ten
		// days: alice 240 hours × 4, bob 10 × 46.
		alice.click(`input[name=range][value="30d"]`)
		alice.waitJS(`document.querySelector('[data-testid=tenant-usage] .chart').dataset.series === "2" &&
			document.querySelector('[data-testid=tenant-usage] .u-title').innerText.includes("daily")`, 20*time.Second)
		require.Equal(t, []string{"detection", "segmentation", "Quota", "Budget pace"}, legend(alice, `[data-testid=tenant-usage]`))
		alice.waitText(`[data-testid=tenant-usage] .usage-totals`, "960", 20*time.Second)
		totals := alice.text(`[data-testid=tenant-usage] .usage-totals`)
		require.Regexp(t, `detection\s+960\b`, totals)
		require.Regexp(t, `segmentation\s+460\b`, totals)
		require.NotContains(t, totals, "idle", "no GPU-hours held idle: no column")
	})

	t.Run("ClusterByTenantForAdmins", func(t *testing.T) {
		admin := b.tab(t, env.HTTPURL)
		admin.signIn(env.AdminToken())
		admin.open("/tenants/vision/usage")
		drawn(admin, `[data-testid=tenant-usage]`, 2, 2)
		drawn(admin, `[data-testid=cluster-usage]`, 2, 1)
		require.Equal(t, []string{"vision", "speech", "Capacity"}, legend(admin, `[data-testid=cluster-usage] [data-limits]`))
		// The capacity line is the samples': 48 GPUs at the last hour.
		require.Equal(t, 48, eval[int](admin, `(() => { const c = document.querySelector('[data-testid=cluster-usage] [data-limits]'); return +c.dataset.lastLimit; })()`))
		// The report of idle GPUs: each tenant's GPU-hours held and idle.
		held := eval[[]int](admin, `/speech\s+(\d+)\s+(\d+)/.exec(document.querySelector('[data-testid=cluster-usage] .usage-totals').innerText).slice(1).map(Number)`)
		require.Positive(t, held[0])
		require.Equal(t, held[0], 3*held[1], "one of speech's three GPUs idle")
		require.Regexp(t, `vision\s+\d+\s+0\b`, admin.text(`[data-testid=cluster-usage] .usage-totals`))
		chart(admin, `[data-testid=cluster-queue-chart]`, 3, 2)
		// Back to 7 days by hour for the picture.
		admin.click(`input[name=range][value="7d"]`)
		admin.waitJS(`document.querySelector('[data-testid=cluster-usage] .u-title') !== null`, 10*time.Second)
		admin.screenshot("usage.png", false)

		// Live while open: a new ledger row shows within the 30 s refresh.
		// (Speech's GPU-hours are read from the page, not computed: the
		// 7 days may have moved on by an hour since the seed.)
		speech := `+/speech\s+(\d+)/.exec(document.querySelector('[data-testid=cluster-usage] .usage-totals').innerText)[1]`
		before := eval[int](admin, speech)
		require.Positive(t, before)
		_, err := conn.Exec(ctx, `INSERT INTO usage_hourly (tenant_id, hour, creator, labels, gpu_seconds) VALUES ('speech', $1, 'dave', '{}', 5 * 3600)`,
			end.Add(-time.Hour))
		require.NoError(t, err)
		admin.waitJS(speech+` === `+strconv.Itoa(before+5), 45*time.Second)
	})

	t.Run("JobGPUUtilization", func(t *testing.T) {
		// Prometheus scrapes the exporter since the job was created: the
		// API behind the chart has both replicas, worker-0 busy, worker-1
		// idle (Eventually: the job's life in 15 s steps needs 45 s for
		// three points) ...
		var u struct {
			Available bool `json:"available"`
			Series    []struct {
				Replica string `json:"replica"`
				Points  []struct {
					Utilization float64 `json:"utilization"`
				} `json:"points"`
			} `json:"series"`
		}
		rest := env.REST(env.Token("alice"))
		require.Eventually(t, func() bool {
			r := rest.Do(t, http.MethodGet, "/v1/tenants/vision/jobs/train/utilization", nil)
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			require.NoError(t, json.Unmarshal(r.Body, &u))
			require.True(t, u.Available)
			return len(u.Series) == 2 && len(u.Series[0].Points) >= 3 && len(u.Series[1].Points) >= 3
		}, 90*time.Second, time.Second, "the job's GPU series in Prometheus: %+v", u)
		require.Equal(t, "worker-0", u.Series[0].Replica)
		for _, p := range u.Series[0].Points {
			require.GreaterOrEqual(t, p.Utilization, 60.0)
		}
		require.InDelta(t, 3, u.Series[1].Points[len(u.Series[1].Points)-1].Utilization, 0.01)

		// ... and the job's page draws them.
		alice := b.tab(t, env.HTTPURL)
		alice.signIn(env.Token("alice"))
		alice.open("/tenants/vision/jobs/train")
		chart(alice, `[data-testid=gpu-chart]`, 2, 3)
		require.Equal(t, []string{"worker-0", "worker-1"}, legend(alice, `[data-testid=gpu-utilization]`))
		alice.screenshot("job-gpu.png", false)

		// Another tenant's job of the same name: not found, as GetJob.
		_, err := env.Jobs(t, env.Token("carol")).CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/speech", JobId: "train", Job: &pb.Job{
			Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{replica(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, nil)}},
		}})
		require.NoError(t, err)
		r := rest.Do(t, http.MethodGet, "/v1/tenants/speech/jobs/train/utilization", nil)
		require.Equal(t, http.StatusNotFound, r.Status, string(r.Body))
	})

	t.Run("JobTimeline", func(t *testing.T) {
		// No worker runs: the job waits in the queue, and its page draws
		// that as the one segment of its timeline, running up to now.
		_, err := env.Jobs(t, env.Token("alice")).CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/vision", JobId: "waits", Job: &pb.Job{
			Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{replica(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, nil)}},
		}})
		require.NoError(t, err)
		alice := b.tab(t, env.HTTPURL)
		alice.signIn(env.Token("alice"))
		alice.open("/tenants/vision/jobs/waits")
		alice.waitJS(`!!document.querySelector('figure.jobline .jobline-seg[data-state=QUEUED]')`, 20*time.Second)
		require.Contains(t, alice.text(`figure.jobline .jobline-legend`), "queued")
	})

	// The page's data is the API's: alice may not read the cluster, nor
	// speech's queue; vision's queue has vision's rows and no capacity.
	rest := env.REST(env.Token("alice"))
	for _, path := range []string{"/v1/tenants/-/usage", "/v1/tenants/-/queueHistory"} {
		r := rest.Do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusForbidden, r.Status, path)
	}
	r := rest.Do(t, http.MethodGet, "/v1/tenants/speech/queueHistory", nil)
	require.Equal(t, http.StatusNotFound, r.Status)
	var q struct {
		Rows []struct {
			Tenant string `json:"tenant"`
		} `json:"rows"`
		Capacity []json.RawMessage `json:"capacity"`
	}
	r = rest.Do(t, http.MethodGet, "/v1/tenants/vision/queueHistory?step=1h", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.NoError(t, json.Unmarshal(r.Body, &q))
	require.NotEmpty(t, q.Rows)
	for _, row := range q.Rows {
		require.Equal(t, "vision", row.Tenant)
	}
	require.Empty(t, q.Capacity)
	r = env.REST(env.AdminToken()).Do(t, http.MethodGet, "/v1/tenants/-/queueHistory?step=1h", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.NoError(t, json.Unmarshal(r.Body, &q))
	require.NotEmpty(t, q.Capacity)
}

// choose picks an option of a select the way a person would, so that
// React sees the change.
func (tb *tab) choose(sel, value string) {
	tb.t.Helper()
	tb.waitJS(`!!document.querySelector(`+jsString(sel)+`)`, 10*time.Second)
	eval[bool](tb, `(() => {
		const e = document.querySelector(`+jsString(sel)+`);
		Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, "value").set.call(e, `+jsString(value)+`);
		e.dispatchEvent(new Event("change", { bubbles: true }));
		return true;
	})()`)
}
