package api

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trainyard/trainyard/internal/gpuutil"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// queueStore records the queue history it was asked and answers rows.
type queueStore struct {
	*fakeStore
	asked    store.QueueHistoryParams
	rows     []store.QueueHistoryRow
	capacity []store.CapacityRow
}

func (s *queueStore) QueueHistoryQuery(_ context.Context, p store.QueueHistoryParams) ([]store.QueueHistoryRow, []store.CapacityRow, error) {
	s.asked = p
	return s.rows, s.capacity, nil
}

func TestQueryQueueHistory(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 32, 0, 0, time.UTC)
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	st := &queueStore{fakeStore: newFakeStore(),
		rows:     []store.QueueHistoryRow{{Start: at, Tenant: "ml", PendingJobsMean: 1.5, PendingJobsMax: 3, PendingGPUsMax: 12, OldestWaitMean: 40, OldestWaitMax: 95}},
		capacity: []store.CapacityRow{{Start: at, GPUs: 64, Samples: 30}},
	}
	s := NewUsageServer(Deps{Store: st, Now: func() time.Time { return now }})

	resp, err := s.QueryQueueHistory(context.Background(), &pb.QueryQueueHistoryRequest{Parent: "tenants/ml", Step: "5m",
		Start: timestamppb.New(now.Add(-2 * time.Hour))})
	require.NoError(t, err)
	require.Equal(t, store.QueueHistoryParams{Tenant: "ml", Step: 5 * time.Minute,
		Start: time.Date(2026, 12, 7, 8, 30, 0, 0, time.UTC), End: time.Date(2026, 12, 7, 10, 35, 0, 0, time.UTC)}, st.asked,
		"start rounded down, end (now) up, to the step")
	require.Len(t, resp.GetRows(), 1)
	r := resp.GetRows()[0]
	require.Equal(t, "ml", r.GetTenant())
	require.Equal(t, 1.5, r.GetPendingJobsMean())
	require.Equal(t, int32(3), r.GetPendingJobsMax())
	require.Equal(t, int64(12), r.GetPendingGpusMax())
	require.Equal(t, 95.0, r.GetOldestWaitSecondsMax())
	require.Equal(t, at.Add(5*time.Minute), r.GetEnd().AsTime())
	require.Empty(t, resp.GetCapacity(), "a tenant's members are not told the cluster's size")

	resp, err = s.QueryQueueHistory(context.Background(), &pb.QueryQueueHistoryRequest{Parent: "tenants/-"})
	require.NoError(t, err)
	require.Empty(t, st.asked.Tenant, "tenants/- is every tenant")
	require.Equal(t, "1h", resp.GetStep())
	require.Equal(t, now.Add(-DefaultQueueWindow).Truncate(time.Hour), st.asked.Start)
	require.Len(t, resp.GetCapacity(), 1)
	require.Equal(t, int64(64), resp.GetCapacity()[0].GetGpus())
}

func TestQueryQueueHistoryRefusesBadInput(t *testing.T) {
	s := NewUsageServer(Deps{Store: &queueStore{fakeStore: newFakeStore()}})
	for _, c := range []struct {
		req   *pb.QueryQueueHistoryRequest
		field string
	}{
		{&pb.QueryQueueHistoryRequest{Parent: "tenants/ml", Step: "1m"}, "step"},
		{&pb.QueryQueueHistoryRequest{Parent: "tenants/ml", Start: timestamppb.New(time.Now()), End: timestamppb.New(time.Now().Add(-48 * time.Hour))}, "end"},
		{&pb.QueryQueueHistoryRequest{Parent: "tenants/ml", Start: timestamppb.New(time.Now().AddDate(0, -3, 0))}, "end"},
		{&pb.QueryQueueHistoryRequest{Parent: "ml"}, "parent"},
	} {
		_, err := s.QueryQueueHistory(context.Background(), c.req)
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", c.req)
		require.Contains(t, status.Convert(err).Message(), c.field)
	}
}

// gpuHistory records what it was asked and answers series.
type gpuHistory struct {
	ns, job    string
	pods       map[string]string
	start, end time.Time
	step       time.Duration
	series     []gpuutil.GPUSeries
	err        error
}

func (h *gpuHistory) Range(_ context.Context, ns, name string, pods map[string]string, start, end time.Time, step time.Duration) ([]gpuutil.GPUSeries, error) {
	h.ns, h.job, h.pods, h.start, h.end, h.step = ns, name, pods, start, end, step
	return h.series, h.err
}

func utilizationFixture() (*fakeStore, time.Time, time.Time) {
	st := newFakeStore()
	st.tenants["ml"] = tenant.Tenant{ID: "ml", Namespace: "ty-ml"}
	started := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	ended := started.Add(2 * time.Hour)
	st.jobs = append(st.jobs, job.Job{Tenant: "ml", UID: "u1", Name: "train", CreateTime: started.Add(-time.Minute),
		Spec:   job.Spec{Replicas: []job.ReplicaSpec{{Type: job.Worker, Count: 2}}},
		Status: job.Status{StartTime: &started, CompletionTime: &ended}})
	return st, started, ended
}

// The job's life is the default window; the query names the tenant's
// namespace and the job's pods; memory without a sample is left out.
func TestQueryJobUtilization(t *testing.T) {
	st, started, ended := utilizationFixture()
	h := &gpuHistory{series: []gpuutil.GPUSeries{{Replica: "worker-0", GPU: "GPU-a", Points: []gpuutil.GPUPoint{
		{Time: started, Utilization: 80, MemoryMiB: 1024}, {Time: started.Add(time.Minute), Utilization: 82, MemoryMiB: math.NaN()},
	}}}}
	s := NewUsageServer(Deps{Store: st, GPUHistory: h, Now: func() time.Time { return ended.Add(time.Hour) }})
	resp, err := s.QueryJobUtilization(context.Background(), &pb.QueryJobUtilizationRequest{Name: "tenants/ml/jobs/train"})
	require.NoError(t, err)
	require.True(t, resp.GetAvailable())
	require.Equal(t, "ty-ml", h.ns)
	require.Equal(t, "train", h.job)
	require.Equal(t, map[string]string{"train-worker-0": "worker-0", "train-worker-1": "worker-1"}, h.pods)
	require.Equal(t, started, h.start)
	require.Equal(t, ended, h.end)
	require.Equal(t, 30*time.Second, h.step, "two hours over 240 points")
	require.Equal(t, int32(30), resp.GetStepSeconds())
	require.Len(t, resp.GetSeries(), 1)
	pts := resp.GetSeries()[0].GetPoints()
	require.Equal(t, 80.0, pts[0].GetUtilization())
	require.Equal(t, 1024.0, pts[0].GetMemoryUsedMib())
	require.Nil(t, pts[1].MemoryUsedMib)

	// Asked for a window and a step.
	_, err = s.QueryJobUtilization(context.Background(), &pb.QueryJobUtilizationRequest{Name: "tenants/ml/jobs/train", StepSeconds: 60,
		Start: timestamppb.New(started.Add(time.Hour))})
	require.NoError(t, err)
	require.Equal(t, started.Add(time.Hour), h.start)
	require.Equal(t, time.Minute, h.step)

	// Prometheus down: UNAVAILABLE.
	h.err = errors.New("connection refused")
	_, err = s.QueryJobUtilization(context.Background(), &pb.QueryJobUtilizationRequest{Name: "tenants/ml/jobs/train"})
	require.Equal(t, codes.Unavailable, status.Code(err))
}

func TestQueryJobUtilizationWithoutPrometheus(t *testing.T) {
	st, _, _ := utilizationFixture()
	s := NewUsageServer(Deps{Store: st})
	resp, err := s.QueryJobUtilization(context.Background(), &pb.QueryJobUtilizationRequest{Name: "tenants/ml/jobs/train"})
	require.NoError(t, err)
	require.False(t, resp.GetAvailable())
	require.Empty(t, resp.GetSeries())
}

func TestQueryJobUtilizationRefusesBadInput(t *testing.T) {
	st, _, _ := utilizationFixture()
	s := NewUsageServer(Deps{Store: st, GPUHistory: &gpuHistory{}})
	for _, c := range []struct {
		req   *pb.QueryJobUtilizationRequest
		field string
		code  codes.Code
	}{
		{&pb.QueryJobUtilizationRequest{Name: "tenants/ml"}, "name", codes.InvalidArgument},
		{&pb.QueryJobUtilizationRequest{Name: "tenants/ml/jobs/train", StepSeconds: -1}, "stepSeconds", codes.InvalidArgument},
		{&pb.QueryJobUtilizationRequest{Name: "tenants/ml/jobs/train", StepSeconds: 1}, "stepSeconds", codes.InvalidArgument},
		{&pb.QueryJobUtilizationRequest{Name: "tenants/ml/jobs/nope"}, "nope", codes.NotFound},
		// Another tenant's job of the same name is not found under this one.
		{&pb.QueryJobUtilizationRequest{Name: "tenants/other/jobs/train"}, "train", codes.NotFound},
	} {
		_, err := s.QueryJobUtilization(context.Background(), c.req)
		require.Equal(t, c.code, Code(err), "%v: %v", c.req, err)
		require.Contains(t, err.Error(), c.field)
	}
}
