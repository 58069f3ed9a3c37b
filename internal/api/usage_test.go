package api

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trainyard/trainyard/internal/store"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// usageStore records the query it was asked and answers rows.
type usageStore struct {
	*fakeStore
	asked store.UsageQueryParams
	rows  []store.UsageRow
}

func (s *usageStore) UsageQuery(_ context.Context, p store.UsageQueryParams) ([]store.UsageRow, error) {
	s.asked = p
	return s.rows, nil
}

func TestQueryUsageWindowAndRows(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC)
	st := &usageStore{fakeStore: newFakeStore(), rows: []store.UsageRow{{
		Start: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Tenant: "ml", Creator: "alice", Labels: []string{"vision"},
		GPUSeconds: 7200, CPUSeconds: 3600, MemoryByteSeconds: 3600 << 30, GPUUsedSeconds: 1800, GPUIdleSeconds: 5400,
	}}}
	s := NewUsageServer(Deps{Store: st, Now: func() time.Time { return now }})
	resp, err := s.QueryUsage(context.Background(), &pb.QueryUsageRequest{Parent: "tenants/ml", Step: "1d", GroupBy: "creator, label:team",
		Start: timestamppb.New(time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC))})
	require.NoError(t, err)
	require.Equal(t, store.UsageQueryParams{Tenant: "ml", Step: store.StepDay, ByCreator: true, ByLabels: []string{"team"},
		Start: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC), Now: now}, st.asked,
		"start rounded down, end (now) up, to UTC days")
	require.Equal(t, "creator,label:team", resp.GetGroupBy())
	require.Len(t, resp.GetRows(), 1)
	r := resp.GetRows()[0]
	require.Equal(t, 2.0, r.GetGpuHours())
	require.Equal(t, 1.0, r.GetCpuHours())
	require.Equal(t, 1.0, r.GetMemoryGibHours())
	require.Equal(t, 0.5, r.GetGpuHoursUsed())
	require.Equal(t, 1.5, r.GetGpuHoursIdle())
	require.Equal(t, map[string]string{"team": "vision"}, r.GetLabels())
	require.Equal(t, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), r.GetEnd().AsTime())

	_, err = s.QueryUsage(context.Background(), &pb.QueryUsageRequest{Parent: "tenants/-"})
	require.NoError(t, err)
	require.Empty(t, st.asked.Tenant, "tenants/- is every tenant")
	require.Equal(t, now.Add(-DefaultUsageWindow).Truncate(time.Hour), st.asked.Start)
}

func TestQueryUsageRefusesBadInput(t *testing.T) {
	s := NewUsageServer(Deps{Store: &usageStore{fakeStore: newFakeStore()}})
	for _, c := range []struct {
		req   *pb.QueryUsageRequest
		field string
	}{
		{&pb.QueryUsageRequest{Parent: "tenants/ml", Step: "5m"}, "step"},
		{&pb.QueryUsageRequest{Parent: "tenants/ml", GroupBy: "team"}, "groupBy"},
		{&pb.QueryUsageRequest{Parent: "tenants/ml", GroupBy: "label:"}, "groupBy"},
		{&pb.QueryUsageRequest{Parent: "tenants/ml", GroupBy: "creator,creator"}, "groupBy"},
		{&pb.QueryUsageRequest{Parent: "tenants/ml", Start: timestamppb.New(time.Now()), End: timestamppb.New(time.Now().Add(-48 * time.Hour))}, "end"},
		{&pb.QueryUsageRequest{Parent: "tenants/ml", Start: timestamppb.New(time.Now().AddDate(-2, 0, 0))}, "end"},
		{&pb.QueryUsageRequest{Parent: "ml"}, "parent"},
	} {
		_, err := s.QueryUsage(context.Background(), c.req)
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", c.req)
		require.Contains(t, status.Convert(err).Message(), c.field)
	}
}
