//go:build integration

package console

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// TestConsoleUsage opens the Usage page over a ledger with three days of
// hourly rows (and their days, as the rollup writes them): vision's
// alice and bob, speech's carol. Alice sees vision's GPUs stacked by
// creator, then by label, against its quota and its budget's pace, and
// no cluster view; a platform admin sees the cluster stacked by tenant
// too (the screenshot usage.png).
func TestConsoleUsage(t *testing.T) {
	devTokens := filepath.Join(t.TempDir(), "tokens.yaml")
	require.NoError(t, os.WriteFile(devTokens, []byte("tokens:\n  - {token: carol-local-token, subject: carol}\n"), 0o600))
	env := harness.Start(t, harness.Options{ServeArgs: []string{"--dev-auth", devTokens}})
	env.CreateTenantWith(t, "vision", &pb.Tenant{
		DisplayName: "Vision team",
		Quota:       &pb.Quota{Gpu: 8, Cpu: "64", Memory: "256Gi", Pods: 20},
		Sharing:     &pb.Sharing{Budget: &pb.Budget{GpuHours: 2880, Period: pb.BudgetPeriod_BUDGET_PERIOD_ROLLING_30D}},
		Members:     []*pb.Member{harness.Subject("alice", pb.Role_ROLE_EDITOR), harness.Subject("bob", pb.Role_ROLE_EDITOR)},
	})
	env.CreateTenant(t, "speech", harness.Subject("carol", pb.Role_ROLE_EDITOR))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	// Ten days up to the last full hour: alice holds 2 to 6 GPUs by a
	// daily rhythm (4 on average), bob 3 in UTC working hours (8 to 18)
	// and 1 otherwise (46 GPU-hours a day), carol 3 all along.
	end := time.Now().UTC().Truncate(time.Hour)
	_, err = conn.Exec(ctx, `
		INSERT INTO usage_hourly (tenant_id, hour, creator, labels, gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds)
		SELECT g.tenant, h, g.creator, g.labels,
		       3600 * CASE g.creator
		         WHEN 'alice' THEN 4 + round(2 * sin(extract(epoch FROM h) / 3600 * pi() / 12))
		         WHEN 'bob' THEN CASE WHEN extract(hour FROM h AT TIME ZONE 'UTC') BETWEEN 8 AND 18 THEN 3 ELSE 1 END
		         ELSE 3 END,
		       3600 * 8, 3600 * 32 * 2^30, 3600
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

	t.Run("TenantByCreatorThenLabel", func(t *testing.T) {
		alice := b.tab(t, env.HTTPURL)
		alice.signIn(env.Token("alice"))
		alice.click(`header nav a[href="/tenants/vision/usage"]`)
		alice.waitText("main h1", "Usage of vision", 10*time.Second)
		drawn(alice, `[data-testid=tenant-usage]`, 2, 2)
		require.Equal(t, []string{"alice", "bob", "Quota", "Budget pace"}, legend(alice, `[data-testid=tenant-usage]`))
		require.Contains(t, alice.text(`[data-testid=tenant-usage]`), "Budget 2880 GPU-hours per 30 days")

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
	})

	t.Run("ClusterByTenantForAdmins", func(t *testing.T) {
		admin := b.tab(t, env.HTTPURL)
		admin.signIn(env.AdminToken())
		admin.open("/tenants/vision/usage")
		drawn(admin, `[data-testid=tenant-usage]`, 2, 2)
		drawn(admin, `[data-testid=cluster-usage]`, 2, 0)
		require.Equal(t, []string{"vision", "speech"}, legend(admin, `[data-testid=cluster-usage]`))
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

	// The page's data is the API's: alice may not read the cluster.
	r := env.REST(env.Token("alice")).Do(t, http.MethodGet, "/v1/tenants/-/usage", nil)
	require.Equal(t, http.StatusForbidden, r.Status)
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
