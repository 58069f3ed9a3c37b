package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// fakeUsage answers the queue's history with two buckets (the second
// without waiting jobs) and a job's utilisation with two GPUs of one
// replica; available says whether it has Prometheus.
type fakeUsage struct {
	pb.UnimplementedUsageServiceServer
	*recorder
	available bool
}

var bucket0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func (f *fakeUsage) QueryQueueHistory(ctx context.Context, req *pb.QueryQueueHistoryRequest) (*pb.QueryQueueHistoryResponse, error) {
	f.record(ctx, "QueryQueueHistory", req)
	resp := &pb.QueryQueueHistoryResponse{Step: "1h", Rows: []*pb.QueueHistoryRow{{
		Start: timestamppb.New(bucket0), End: timestamppb.New(bucket0.Add(time.Hour)), Tenant: "ml",
		PendingJobsMean: 2.5, PendingJobsMax: 4, PendingGpusMax: 16, OldestWaitSecondsMean: 300, OldestWaitSecondsMax: 5400,
	}}}
	if req.GetParent() == "tenants/-" {
		resp.Capacity = []*pb.CapacityPoint{{Start: timestamppb.New(bucket0), Gpus: 64}, {Start: timestamppb.New(bucket0.Add(time.Hour)), Gpus: 56}}
	}
	return resp, nil
}

// QueryUsage answers two hours of tenant ml (alice's jobs, the second
// hour half idle) and, with tenants/-, an hour of tenant cv, busy.
func (f *fakeUsage) QueryUsage(ctx context.Context, req *pb.QueryUsageRequest) (*pb.QueryUsageResponse, error) {
	f.record(ctx, "QueryUsage", req)
	row := func(tenant string, h int, gpu, used, idle float64) *pb.UsageRow {
		start := bucket0.Add(time.Duration(h) * time.Hour)
		return &pb.UsageRow{Start: timestamppb.New(start), End: timestamppb.New(start.Add(time.Hour)), Tenant: tenant, Creator: "alice",
			GpuHours: gpu, CpuHours: 2 * gpu, MemoryGibHours: 8 * gpu, GpuHoursUsed: used, GpuHoursIdle: idle}
	}
	resp := &pb.QueryUsageResponse{Start: timestamppb.New(bucket0), End: timestamppb.New(bucket0.Add(2 * time.Hour)),
		Step: "1h", GroupBy: req.GetGroupBy(), Rows: []*pb.UsageRow{row("ml", 0, 4, 3, 0), row("ml", 1, 4, 1, 2)}}
	if req.GetParent() == "tenants/-" {
		resp.Rows = append(resp.Rows, row("cv", 1, 8, 6, 0))
	}
	return resp, nil
}

func (f *fakeUsage) QueryJobUtilization(ctx context.Context, req *pb.QueryJobUtilizationRequest) (*pb.QueryJobUtilizationResponse, error) {
	f.record(ctx, "QueryJobUtilization", req)
	resp := &pb.QueryJobUtilizationResponse{Start: timestamppb.New(bucket0), End: timestamppb.New(bucket0.Add(time.Hour)), StepSeconds: 900, Available: f.available}
	if !f.available {
		return resp, nil
	}
	points := func(us ...float64) []*pb.UtilizationPoint {
		var ps []*pb.UtilizationPoint
		for i, u := range us {
			ps = append(ps, &pb.UtilizationPoint{Time: timestamppb.New(bucket0.Add(time.Duration(i) * 15 * time.Minute)), Utilization: u,
				MemoryUsedMib: proto.Float64(1000 * float64(i+1))})
		}
		return ps
	}
	resp.Series = []*pb.UtilizationSeries{
		{Replica: "worker-0", Gpu: "GPU-aaaa", Points: points(0, 50, 100, 90)},
		{Replica: "worker-0", Gpu: "GPU-bbbb", Points: []*pb.UtilizationPoint{{Time: timestamppb.New(bucket0), Utilization: 10}}},
	}
	return resp, nil
}

// startUsageFake serves only UsageService, on the fixture's recorder.
func startUsageFake(t *testing.T, available bool) *fixture {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fixture{addr: lis.Addr().String(), rec: &recorder{}}
	s := grpc.NewServer()
	pb.RegisterUsageServiceServer(s, &fakeUsage{recorder: f.rec, available: available})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return f
}

// usage queue asks for the tenant's queue (or every tenant's with --all),
// over the window the flags give, and prints a line per bucket and tenant;
// --all adds the cluster's GPUs and the bucket in which nothing waited.
func TestUsageQueue(t *testing.T) {
	f := startUsageFake(t, true)
	env := map[string]string{envToken: testToken, envTenant: "ml"}
	r := f.tyctl(t, env, "usage", "queue", "--since", "24h", "--step", "5m")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `START\s+TENANT\s+PENDING\s+PENDING MAX\s+GPUS ASKED MAX\s+OLDEST WAIT\s+OLDEST WAIT MAX\n`, r.stdout)
	require.Regexp(t, `2026-03-01 10:00Z\s+ml\s+2.5\s+4\s+16\s+5m\s+90m\n`, r.stdout)
	require.NotContains(t, r.stdout, "CLUSTER GPUS", "a tenant is not told the cluster's size")
	calls := f.rec.methodCalls("QueryQueueHistory")
	require.Len(t, calls, 1)
	req := calls[0].req.(*pb.QueryQueueHistoryRequest)
	require.Equal(t, "tenants/ml", req.GetParent())
	require.Equal(t, "5m", req.GetStep())
	require.True(t, testNow.Add(-24*time.Hour).Equal(req.GetStart().AsTime()))
	require.Nil(t, req.GetEnd())

	r = f.tyctl(t, env, "usage", "queue", "--all", "--start", "2026-03-01", "--end", "2026-03-02T00:00:00Z")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `2026-03-01 10:00Z\s+ml\s+2.5\s+4\s+16\s+5m\s+90m\s+64\n`, r.stdout)
	require.Regexp(t, `2026-03-01 11:00Z\s+-\s+0.0\s+0\s+0\s+-\s+-\s+56\n`, r.stdout)
	req = f.rec.methodCalls("QueryQueueHistory")[1].req.(*pb.QueryQueueHistoryRequest)
	require.Equal(t, "tenants/-", req.GetParent())
	require.Equal(t, "1h", req.GetStep())
	require.True(t, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Equal(req.GetStart().AsTime()))
	require.True(t, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).Equal(req.GetEnd().AsTime()))

	r = f.tyctl(t, env, "usage", "queue", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"pendingJobsMean": 2.5`)

	r = f.tyctl(t, env, "usage", "queue", "--since", "1h", "--start", "2026-03-01")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "--since and --start")
	r = f.tyctl(t, env, "usage", "queue", "--end", "yesterday")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "--end")
	require.Len(t, f.rec.methodCalls("QueryQueueHistory"), 3, "bad flags make no call")
}

// usage prints the GPU-hours used and idle beside the allocated ones;
// usage idle sums them per tenant (and group) over the window, most idle
// first, with the idle share.
func TestUsageIdle(t *testing.T) {
	f := startUsageFake(t, true)
	env := map[string]string{envToken: testToken, envTenant: "ml"}
	r := f.tyctl(t, env, "usage", "--since", "2h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `START\s+TENANT\s+GPUHOURS\s+CPUHOURS\s+MEMORYGIBHOURS\s+GPUHOURSUSED\s+GPUHOURSIDLE\n`, r.stdout)
	require.Regexp(t, `2026-03-01 11:00Z\s+ml\s+4.00\s+8.00\s+32.00\s+1.00\s+2.00\n`, r.stdout)
	require.Regexp(t, `TOTAL\s+8.00\s+16.00\s+64.00\s+4.00\s+2.00\n`, r.stdout)
	r = f.tyctl(t, env, "usage", "--csv")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "start,end,tenant,gpuHours,cpuHours,memoryGibHours,gpuHoursUsed,gpuHoursIdle\n"+
		"2026-03-01T10:00:00Z,2026-03-01T11:00:00Z,ml,4,8,32,3,0\n")

	r = f.tyctl(t, env, "usage", "idle", "--all", "--since", "2h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "From 2026-03-01 10:00Z to 2026-03-01 12:00Z\n", strings.SplitAfter(r.stdout, "\n")[0])
	require.Regexp(t, `TENANT\s+GPU HOURS\s+USED\s+IDLE\s+IDLE %\n`+
		`ml\s+8.00\s+4.00\s+2.00\s+25%\n`+
		`cv\s+8.00\s+6.00\s+0.00\s+0%\n`+
		`TOTAL\s+16.00\s+10.00\s+2.00\s+12%\n`, r.stdout)
	calls := f.rec.methodCalls("QueryUsage")
	req := calls[len(calls)-1].req.(*pb.QueryUsageRequest)
	require.Equal(t, "tenants/-", req.GetParent())
	require.Equal(t, "1h", req.GetStep())
	require.True(t, testNow.Add(-2*time.Hour).Equal(req.GetStart().AsTime()))

	r = f.tyctl(t, env, "usage", "idle", "--group-by", "creator", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"gpuHoursIdle": 2`)
	require.Contains(t, r.stdout, `"end": "2026-03-01T12:00:00Z"`, "a row spans the window")
	require.Equal(t, "tenants/ml", f.rec.methodCalls("QueryUsage")[3].req.(*pb.QueryUsageRequest).GetParent())
}

// jobs utilization names the job, passes the window and step, and prints
// a line per GPU with a sparkline; without Prometheus it says so.
func TestJobsUtilization(t *testing.T) {
	f := startUsageFake(t, true)
	env := map[string]string{envToken: testToken, envTenant: "ml"}
	r := f.tyctl(t, env, "jobs", "utilization", "mnist-1", "--since", "1h", "--step", "30s")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "From 2026-03-01 10:00:00Z to 2026-03-01 11:00:00Z, every 15m\n")
	require.Regexp(t, `REPLICA\s+GPU\s+MEAN\s+MAX\s+LAST\s+MEMORY MAX\s+OVER TIME\n`, r.stdout)
	require.Regexp(t, `worker-0\s+GPU-aaaa\s+60%\s+100%\s+90%\s+4000 MiB\s+▁▅█▇\n`, r.stdout)
	require.Regexp(t, `worker-0\s+GPU-bbbb\s+10%\s+10%\s+10%\s+-\s+▂\n`, r.stdout)
	req := f.rec.methodCalls("QueryJobUtilization")[0].req.(*pb.QueryJobUtilizationRequest)
	require.Equal(t, "tenants/ml/jobs/mnist-1", req.GetName())
	require.Equal(t, int32(30), req.GetStepSeconds())
	require.True(t, testNow.Add(-time.Hour).Equal(req.GetStart().AsTime()))

	r = f.tyctl(t, env, "jobs", "utilization", "tenants/cv/jobs/resnet", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"replica": "worker-0"`)
	req = f.rec.methodCalls("QueryJobUtilization")[1].req.(*pb.QueryJobUtilizationRequest)
	require.Equal(t, "tenants/cv/jobs/resnet", req.GetName())
	require.Zero(t, req.GetStepSeconds(), "the server's default")
	require.Nil(t, req.GetStart())

	r = f.tyctl(t, env, "jobs", "utilization", "mnist-1", "--step", "1500ms")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "--step 1.5s: want whole seconds")
	require.Len(t, f.rec.methodCalls("QueryJobUtilization"), 2)

	f = startUsageFake(t, false)
	r = f.tyctl(t, env, "jobs", "utilization", "mnist-1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "without --prometheus-url")
}

func TestSparkline(t *testing.T) {
	require.Equal(t, "-", sparkline(nil, 4))
	require.Equal(t, "▁█", sparkline([]float64{0, 100}, 4))
	require.Equal(t, "▁█", sparkline([]float64{0, 0, 100, 100}, 2), "averaged down to the width")
	require.Equal(t, "█", sparkline([]float64{250}, 4), "clamped")
}
