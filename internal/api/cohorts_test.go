package api

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

type fakeCohortStore struct {
	*fakeStore
	put tenant.Cohort
}

func (f *fakeCohortStore) CohortPut(_ context.Context, c tenant.Cohort) (tenant.Cohort, error) {
	f.put = c
	c.Tenants = []string{"a", "b"}
	return c, nil
}

// PutCohort validates the pool (errors name the field) and returns the
// cohort with its members as tenants' names.
func TestPutCohort(t *testing.T) {
	st := &fakeCohortStore{fakeStore: newFakeStore()}
	srv := NewTenantServer(Deps{Store: st})
	got, err := srv.PutCohort(context.Background(), &pb.PutCohortRequest{Cohort: &pb.Cohort{
		Name: "cohorts/lab", NominalQuota: &pb.Quota{Gpu: 16}, GpuTypes: map[string]int64{"A100": 16}}})
	require.NoError(t, err)
	require.Equal(t, tenant.Cohort{Name: "lab", Nominal: tenant.Quota{GPU: 16}, GPUTypes: map[string]int64{"A100": 16}}, st.put)
	require.Equal(t, "cohorts/lab", got.GetName())
	require.Equal(t, []string{"tenants/a", "tenants/b"}, got.GetTenants())
	require.EqualValues(t, 16, got.GetNominalQuota().GetGpu())

	for _, c := range []struct {
		req   *pb.PutCohortRequest
		field string
	}{
		{&pb.PutCohortRequest{}, "cohort"},
		{&pb.PutCohortRequest{Cohort: &pb.Cohort{Name: "lab"}}, "cohort.name"},
		{&pb.PutCohortRequest{Cohort: &pb.Cohort{Name: "cohorts/Lab"}}, "cohort.name"},
		{&pb.PutCohortRequest{Cohort: &pb.Cohort{Name: "cohorts/lab", NominalQuota: &pb.Quota{Gpu: -1}}}, "cohort.nominalQuota.gpu"},
		{&pb.PutCohortRequest{Cohort: &pb.Cohort{Name: "cohorts/lab", NominalQuota: &pb.Quota{Cpu: "lots"}}}, "cohort.nominalQuota.cpu"},
		{&pb.PutCohortRequest{Cohort: &pb.Cohort{Name: "cohorts/lab", GpuTypes: map[string]int64{"A100": -2}}}, `cohort.gpuTypes["A100"]`},
	} {
		_, err := srv.PutCohort(context.Background(), c.req)
		s := status.Convert(err)
		require.Equal(t, codes.InvalidArgument, s.Code(), "%v: %v", c.req, err)
		require.Len(t, s.Details(), 1)
		br := s.Details()[0].(*errdetails.BadRequest)
		require.Equal(t, c.field, br.GetFieldViolations()[0].GetField(), s.Message())
	}
	_, err = srv.GetCohort(context.Background(), &pb.GetCohortRequest{Name: "tenants/lab"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = srv.DeleteCohort(context.Background(), &pb.DeleteCohortRequest{Name: "cohorts/"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}
