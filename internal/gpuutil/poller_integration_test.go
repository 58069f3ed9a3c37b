//go:build integration

package gpuutil_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	promtest "github.com/trainyard/trainyard/integration/prometheus"
	apisrv "github.com/trainyard/trainyard/internal/api"
	"github.com/trainyard/trainyard/internal/gpuutil"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/pgtest"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Run(m, "gpuutil", func(ctx context.Context, url string) error { return store.Migrate(ctx, url, "up") }))
}

// runningJob creates a job of workers GPU workers and makes it RUNNING,
// admitted, as the scheduler and a worker would have left it.
func runningJob(ctx context.Context, t *testing.T, st *store.Store, exec func(string, ...any), tenantID, name, creator string, workers int32) job.Job {
	t.Helper()
	spec := job.Spec{
		Replicas: []job.ReplicaSpec{{
			Type: job.Worker, Count: workers, Image: "tensorflow/tensorflow:2.16.1", Command: []string{"python", "train.py"},
			Resources: job.Resources{CPU: "1", Memory: "1Gi", GPU: 1}, Port: job.DefaultPort, RestartPolicy: job.RestartOnFailure,
		}},
		RunPolicy: job.RunPolicy{BackoffLimit: 3, CleanPodPolicy: job.CleanRunning},
	}
	j, created, err := st.JobCreate(ctx, store.JobCreateParams{Job: job.Job{Tenant: tenantID, Name: name, Spec: spec, Creator: creator}})
	require.NoError(t, err)
	require.True(t, created)
	var replicas []map[string]any
	for i := range workers {
		replicas = append(replicas, map[string]any{"type": "worker", "index": i, "pod": job.PodName(name, job.Worker, i), "state": "RUNNING", "restarts": 0})
	}
	exec(`UPDATE jobs SET state = 'RUNNING', admitted = true, version = version + 1,
		status = status || jsonb_build_object('state', 'RUNNING', 'startTime', now(), 'replicas', $3::jsonb)
		WHERE tenant_id = $1 AND uid = $2`, tenantID, j.UID, replicas)
	// The usage ledger's open span, as the scheduler's commit opens it.
	// (in the job's row: migration 000025).
	exec(`UPDATE jobs SET ledger_since = (status->>'startTime')::timestamptz, ledger_gpus = $3::bigint, ledger_cpu_millis = 1000 * $3::bigint,
		ledger_memory_bytes = (1::bigint << 30) * $3::bigint, ledger_pods = $3::bigint
		WHERE tenant_id = $1 AND uid = $2`, tenantID, j.UID, workers)
	return j
}

// TestPollerReadsDCGMThroughPrometheus: a real Prometheus scrapes a
// DCGM-shaped exporter every second; the poller reads it into Postgres.
// GetJob shows 80 % for the replica whose GPU works and 0 % for the one
// whose GPU does not; the job whose only GPU idles gets IdleGPUs (and its
// event, a webhook topic) after the tenant's 3 s, and loses it when its
// GPU works again; the stored samples are exactly Prometheus's.
func TestPollerReadsDCGMThroughPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pool, _ := pgtest.Schema(t)
	st := store.New(pool)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	_, err := st.TenantCreate(ctx, tenant.Tenant{ID: "ml", Namespace: "ty-ml",
		Scheduling: tenant.Scheduling{IdleGPUPercent: 5, IdleGPUSeconds: 3}})
	require.NoError(t, err)
	busy := runningJob(ctx, t, st, exec, "ml", "train", "alice", 2)
	runningJob(ctx, t, st, exec, "ml", "stuck", "bob", 1)
	// A tenant that stops jobs idle for 4 s.
	_, err = st.TenantCreate(ctx, tenant.Tenant{ID: "ops", Namespace: "ty-ops",
		Scheduling: tenant.Scheduling{IdleGPUPercent: 5, IdleGPUSeconds: 2, IdleGPUStopSeconds: 4}})
	require.NoError(t, err)
	runningJob(ctx, t, st, exec, "ops", "abandoned", "carol", 1)

	e := promtest.NewExporter()
	defer e.Close()
	e.Set(promtest.GPU{Index: 0, Namespace: "ty-ml", Pod: "train-worker-0", Container: "tensorflow", Util: 80, FBUsed: 30000})
	e.Set(promtest.GPU{Index: 1, Namespace: "ty-ml", Pod: "train-worker-1", Container: "tensorflow", Util: 0, FBUsed: 500})
	e.Set(promtest.GPU{Index: 2, Namespace: "ty-ml", Pod: "stuck-worker-0", Container: "tensorflow", Util: 0, FBUsed: 100})
	e.Set(promtest.GPU{Index: 3, Namespace: "ty-other", Pod: "train-worker-0", Util: 100}) // another namespace's pod of the same name
	e.Set(promtest.GPU{Index: 4, Util: 100})                                               // a free GPU
	e.Set(promtest.GPU{Index: 5, Namespace: "ty-ops", Pod: "abandoned-worker-0", Util: 1})
	prom, err := promtest.Start(ctx, promtest.Options{Targets: []string{e.Target()}, ScrapeInterval: time.Second})
	require.NoError(t, err) // never a skip
	defer prom.Stop()

	// The poller starts once Prometheus has scraped the pods more than its
	// lag (1.5 s) ago, so that every window it reads has recent samples (a
	// window before the first sample counts no GPU-hours used; checked
	// below).
	c, err := api.NewClient(api.Config{Address: prom.URL})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, _, _, err := v1.NewAPI(c).Query(ctx, `count(DCGM_FI_DEV_GPU_UTIL{namespace="ty-ml"})`, time.Now().Add(-2*time.Second))
		return err == nil && len(v.(model.Vector)) == 1 && v.(model.Vector)[0].Value == 3
	}, time.Minute, 100*time.Millisecond, "prometheus log:\n%s", prom.Log())

	reg := prometheus.NewRegistry()
	poller, err := gpuutil.New(gpuutil.Config{URL: prom.URL, Store: st, Interval: time.Second, Lag: 1500 * time.Millisecond,
		Stale: 30 * time.Second, Registry: reg})
	require.NoError(t, err)
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = poller.Run(pctx) }()
	defer func() { stop(); <-done }()

	jobs := apisrv.NewJobServer(apisrv.Deps{Store: st})
	get := func(name string) *pb.Job {
		t.Helper()
		j, err := jobs.GetJob(ctx, &pb.GetJobRequest{Name: "tenants/ml/jobs/" + name})
		require.NoError(t, err)
		return j
	}
	condition := func(j *pb.Job) *pb.Condition {
		for _, c := range j.GetStatus().GetConditions() {
			if c.GetType() == job.CondIdleGPUs {
				return c
			}
		}
		return nil
	}

	// The figures: ≈80 and ≈0 per replica, after a few scrapes.
	require.Eventually(t, func() bool {
		r := get("train").GetStatus().GetReplicas()
		return len(r) == 2 && r[0].GetGpuUtilization().GetSamples() >= 4 && r[1].GetGpuUtilization().GetSamples() >= 4
	}, time.Minute, 250*time.Millisecond, "prometheus log:\n%s", prom.Log())
	j := get("train")
	w0, w1 := j.Status.Replicas[0].GetGpuUtilization(), j.Status.Replicas[1].GetGpuUtilization()
	require.InDelta(t, 80, w0.GetMeanPercent(), 0.01)
	require.InDelta(t, 80, w0.GetP95Percent(), 0.01)
	require.InDelta(t, 30000, w0.GetMeanMemoryMib(), 0.01)
	require.InDelta(t, 30000, w0.GetMaxMemoryMib(), 0.01)
	require.EqualValues(t, 1, w0.GetGpus())
	require.InDelta(t, 0, w1.GetMeanPercent(), 0.01)
	require.InDelta(t, 500, w1.GetMaxMemoryMib(), 0.01)
	require.Nil(t, w1.GetLastBusyTime(), "0 %% is never busy")
	sum := j.GetStatus().GetGpuUtilization()
	require.EqualValues(t, 2, sum.GetGpus())
	require.InDelta(t, 40, sum.GetMeanPercent(), 0.01) // as many samples of each
	require.Nil(t, condition(j), "a job with a busy GPU is not idle")

	// The idle job: IdleGPUs after 3 s of 0 %, with its event.
	require.Eventually(t, func() bool { c := condition(get("stuck")); return c != nil && c.GetStatus() },
		time.Minute, 250*time.Millisecond)
	require.Contains(t, condition(get("stuck")).GetMessage(), "below 5% utilisation since")
	events, err := st.EventList(ctx, "ml", "stuck", 0, 100)
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(events, func(e job.Event) bool {
		return e.Reason == job.ReasonIdleGPUs && e.Type == job.EventWarning
	}), "events: %+v", events)
	var topic string
	require.NoError(t, pool.QueryRow(ctx, `SELECT trainyard_webhook_topic($1, 'RUNNING', '')`, job.ReasonIdleGPUs).Scan(&topic))
	require.Equal(t, "job.idle_gpus", topic, "the event is a webhook topic")
	require.Nil(t, condition(get("train")))

	// The metrics: GPUs used from DCGM (0.8 + 0 + 0), one idle job.
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(mustGauge(t, reg, "trainyard_tenant_idle_gpu_jobs", "ml")) == 1
	}, 30*time.Second, 200*time.Millisecond)
	require.InDelta(t, 0.8, testutil.ToFloat64(mustGauge(t, reg, "trainyard_tenant_gpus_used", "ml")), 0.001)

	// The "ops" tenant stops its job once idle for 4 s: a cancel request
	// (its worker would stop the pods) with an IdleGPUsStopped event.
	require.Eventually(t, func() bool {
		j, err := st.JobGet(ctx, "ops", "abandoned")
		return err == nil && j.Status.CancelRequested
	}, time.Minute, 250*time.Millisecond)
	opsEvents, err := st.EventList(ctx, "ops", "abandoned", 0, 100)
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(opsEvents, func(e job.Event) bool { return e.Reason == job.ReasonIdleGPUsStopped }), "events: %+v", opsEvents)
	stuckJob, err := st.JobGet(ctx, "ml", "stuck")
	require.NoError(t, err)
	require.False(t, stuckJob.Status.CancelRequested, "a tenant without the option never stops idle jobs")

	// It works again: the condition clears, with a GPUsActive event.
	e.Set(promtest.GPU{Index: 2, Namespace: "ty-ml", Pod: "stuck-worker-0", Container: "tensorflow", Util: 90, FBUsed: 100})
	require.Eventually(t, func() bool { c := condition(get("stuck")); return c != nil && !c.GetStatus() },
		time.Minute, 250*time.Millisecond)
	require.Equal(t, job.ReasonGPUsActive, condition(get("stuck")).GetReason())

	// Exact: stop polling; what is stored is every sample Prometheus has
	// for the pod up to sampled_to, each counted once.
	stop()
	<-done
	var sampledTo, started time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT g.sampled_to, (j.status->>'startTime')::timestamptz FROM job_gpu g
		JOIN jobs j ON j.tenant_id = g.tenant_id AND j.uid = g.job_uid WHERE g.job_uid = $1`, busy.UID).Scan(&sampledTo, &started))
	q := fmt.Sprintf(`count_over_time(DCGM_FI_DEV_GPU_UTIL{namespace="ty-ml",pod="train-worker-0"}[%dms])`,
		sampledTo.Sub(started.Truncate(time.Millisecond)).Milliseconds())
	v, _, _, err := v1.NewAPI(c).Query(ctx, q, sampledTo)
	require.NoError(t, err)
	vec := v.(model.Vector)
	require.Len(t, vec, 1)
	figs, err := st.GPUFiguresGet(ctx, "ml", busy.UID)
	require.NoError(t, err)
	require.Equal(t, "worker-0", figs[0].Replica)
	require.EqualValues(t, int64(vec[0].Value), figs[0].Samples, "stored samples = Prometheus's count up to sampled_to")

	// The ledger: GPU-hours used beside allocated. Every window of "train"
	// had a mean of 40 % over its 2 GPUs: used = 2 × 0.4 × its seconds.
	hour := started.Truncate(time.Hour)
	rows, err := st.UsageQuery(ctx, store.UsageQueryParams{Tenant: "ml", Start: hour, End: hour.Add(2 * time.Hour), Step: store.StepHour, ByCreator: true})
	require.NoError(t, err)
	var used, allocated float64
	for _, r := range rows {
		if r.Creator == "alice" {
			used, allocated = used+r.GPUUsedSeconds, allocated+r.GPUSeconds
		}
	}
	window := sampledTo.Sub(started.Truncate(time.Millisecond)).Seconds()
	require.InDelta(t, 2*0.4*window, used, 0.01, "rows: %+v", rows)
	require.Greater(t, allocated, used)
	require.InDelta(t, 0.4, used/allocated, 0.1)
	resp, err := apisrv.NewUsageServer(apisrv.Deps{Store: st}).QueryUsage(ctx, &pb.QueryUsageRequest{Parent: "tenants/ml",
		Start: timestamppb.New(hour), End: timestamppb.New(hour.Add(2 * time.Hour)), GroupBy: "creator"})
	require.NoError(t, err)
	var apiUsed float64
	for _, r := range resp.GetRows() {
		if r.GetCreator() == "alice" {
			apiUsed += r.GetGpuHoursUsed()
		}
	}
	require.InDelta(t, used/3600, apiUsed, 1e-9)

	// By day (usage_daily has no GPU-seconds used: the hours add them).
	day := started.UTC().Truncate(24 * time.Hour)
	rows, err = st.UsageQuery(ctx, store.UsageQueryParams{Tenant: "ml", Start: day, End: day.Add(24 * time.Hour), Step: store.StepDay, ByCreator: true})
	require.NoError(t, err)
	var dayUsed float64
	for _, r := range rows {
		if r.Creator == "alice" {
			dayUsed += r.GPUUsedSeconds
		}
	}
	require.InDelta(t, used, dayUsed, 1e-9)
}

func mustGauge(t *testing.T, reg *prometheus.Registry, name, tenantID string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tenant" && l.GetValue() == tenantID {
					g.Set(m.GetGauge().GetValue())
				}
			}
		}
	}
	return g
}
