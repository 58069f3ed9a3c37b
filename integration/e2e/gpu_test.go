//go:build integration

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	promtest "github.com/trainyard/trainyard/integration/prometheus"
	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// GPU utilisation per job (issue 44), end to end: the worker, given
// --prometheus-url, reads a real Prometheus that scrapes a DCGM-shaped
// exporter reporting 80 % for one replica's pod and 0 % for another's.
// GetJob shows both; the job whose only GPU idles gets IdleGPUs (the
// tenant's idle time is 3 s); the usage API shows GPU-hours used, and
// the platform's report the GPU-hours held idle.
func TestGPUUtilizationThroughPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ex := promtest.NewExporter()
	defer ex.Close()
	prom, err := promtest.Start(ctx, promtest.Options{Targets: []string{ex.Target()}, ScrapeInterval: time.Second})
	require.NoError(t, err) // never a skip
	defer prom.Stop()
	e := startScheduling(t, "gpu-util", &pb.Scheduling{IdleGpuThresholdPercent: 5, IdleGpuSeconds: 3},
		"--prometheus-url="+prom.URL, "--gpu-poll-interval=1s", "--gpu-poll-lag=1500ms")
	ns := e.Namespace("gpu-util")
	ex.Set(promtest.GPU{Hostname: "kwok-gpu-0", Index: 0, Namespace: ns, Pod: "train-worker-0", Container: "tensorflow", Util: 80, FBUsed: 20000})
	ex.Set(promtest.GPU{Hostname: "kwok-gpu-0", Index: 1, Namespace: ns, Pod: "train-worker-1", Container: "tensorflow", Util: 0, FBUsed: 300})
	ex.Set(promtest.GPU{Hostname: "kwok-gpu-1", Index: 0, Namespace: ns, Pod: "stuck-worker-0", Container: "tensorflow", Util: 0, FBUsed: 100})

	// Their pods run for 2 minutes (the simulated kubelet); cancelled at the end.
	train := e.submitTo(t, "train", gpuJob(2, 1, 0, annot(cluster.AnnotationRunFor, "120s")))
	stuck := e.submitTo(t, "stuck", gpuJob(1, 1, 0, annot(cluster.AnnotationRunFor, "120s")))
	defer func() {
		for _, n := range []string{train, stuck} {
			_, _ = e.jobs.CancelJob(context.Background(), &pb.CancelJobRequest{Name: n})
		}
	}()

	j := harness.WaitJob(t, e.jobs, train, 90*time.Second, func(j *pb.Job) bool {
		r := j.GetStatus().GetReplicas()
		return len(r) == 2 && r[0].GetGpuUtilization().GetSamples() >= 3 && r[1].GetGpuUtilization().GetSamples() >= 3
	})
	w0, w1 := j.GetStatus().GetReplicas()[0], j.GetStatus().GetReplicas()[1]
	require.Equal(t, int32(0), w0.GetIndex())
	require.InDelta(t, 80, w0.GetGpuUtilization().GetMeanPercent(), 0.01)
	require.InDelta(t, 80, w0.GetGpuUtilization().GetP95Percent(), 0.01)
	require.InDelta(t, 20000, w0.GetGpuUtilization().GetMaxMemoryMib(), 0.01)
	require.InDelta(t, 0, w1.GetGpuUtilization().GetMeanPercent(), 0.01)
	require.EqualValues(t, 2, j.GetStatus().GetGpuUtilization().GetGpus())

	s := harness.WaitJob(t, e.jobs, stuck, 60*time.Second, func(j *pb.Job) bool {
		for _, c := range j.GetStatus().GetConditions() {
			if c.GetType() == job.CondIdleGPUs && c.GetStatus() {
				return true
			}
		}
		return false
	})
	require.InDelta(t, 0, s.GetStatus().GetGpuUtilization().GetMeanPercent(), 0.01)
	for _, c := range e.get(t, train).GetStatus().GetConditions() {
		require.NotEqual(t, job.CondIdleGPUs, c.GetType(), "a job with a busy GPU is not idle")
	}
	evs, err := e.jobs.ListJobEvents(ctx, &pb.ListJobEventsRequest{Parent: stuck})
	require.NoError(t, err)
	found := false
	for _, ev := range evs.GetEvents() {
		found = found || ev.GetReason() == job.ReasonIdleGPUs
	}
	require.True(t, found, "an IdleGPUs event: %v", evs.GetEvents())

	// The usage API: GPU-hours used beside allocated.
	usage := pb.NewUsageServiceClient(e.Conn(t, e.Token("alice")))
	now := time.Now().UTC()
	resp, err := usage.QueryUsage(ctx, &pb.QueryUsageRequest{Parent: harness.TenantName("gpu-util"),
		Start: timestamppb.New(now.Truncate(time.Hour).Add(-time.Hour)), End: timestamppb.New(now.Truncate(time.Hour).Add(time.Hour))})
	require.NoError(t, err)
	var used, allocated float64
	for _, r := range resp.GetRows() {
		used, allocated = used+r.GetGpuHoursUsed(), allocated+r.GetGpuHours()
	}
	require.Positive(t, used)
	require.Less(t, used, allocated)

	// The platform's report of idle GPUs: every tenant's GPU-hours held
	// idle (tenants/-, a platform admin), here the stuck job's windows
	// after the poll that flagged it.
	admin := pb.NewUsageServiceClient(e.Conn(t, e.AdminToken()))
	var idle float64
	require.Eventually(t, func() bool {
		all, err := admin.QueryUsage(ctx, &pb.QueryUsageRequest{Parent: "tenants/-", Step: "1d"})
		require.NoError(t, err)
		idle, allocated = 0, 0
		for _, r := range all.GetRows() {
			if r.GetTenant() == "gpu-util" {
				idle, allocated = idle+r.GetGpuHoursIdle(), allocated+r.GetGpuHours()
			}
		}
		return idle > 0
	}, 30*time.Second, 500*time.Millisecond)
	require.Less(t, idle, allocated/3, "one of the tenant's three GPUs idles, and not from its start")
}
