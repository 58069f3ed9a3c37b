package api

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestTenantUpdateFields(t *testing.T) {
	for name, tc := range map[string]struct {
		paths []string
		want  []string
		bad   string
	}{
		"empty: resolved later": {paths: nil, want: nil},
		"star: all":             {paths: []string{"*"}, want: updatableTenantFields},
		"json names":            {paths: []string{"displayName", "podReaderGroups"}, want: []string{"display_name", "pod_reader_groups"}},
		"quota sub-fields":      {paths: []string{"quota.gpu", "quota.memory"}, want: []string{"quota.gpu", "quota.memory"}},
		"gateway body mask":     {paths: []string{"display_name", "quota.cpu", "quota.gpu", "quota.pods"}, want: []string{"display_name", "quota.cpu", "quota.gpu", "quota.pods"}},
		"output only ignored":   {paths: []string{"name", "namespace", "state", "createTime", "update_time", "labels"}, want: []string{"labels"}},
		"usage is output only":  {paths: []string{"usage", "usage.cpu", "usage.gpu", "quota.gpu"}, want: []string{"quota.gpu"}},
		"scheduling sub-fields": {paths: []string{"scheduling.preemptionPolicy"}, want: []string{"scheduling.preemption_policy"}},
		"idle GPU settings":     {paths: []string{"scheduling.idleGpuThresholdPercent", "scheduling.idle_gpu_seconds"}, want: []string{"scheduling.idle_gpu_threshold_percent", "scheduling.idle_gpu_seconds"}},
		"unknown":               {paths: []string{"owner"}, bad: `"owner" cannot be updated`},
		"unknown quota field":   {paths: []string{"quota.tpu"}, bad: `"quota.tpu" cannot be updated`},
		"no label sub-path":     {paths: []string{"labels.team"}, bad: "cannot be updated"},
		"members sub-path bad":  {paths: []string{"members.role"}, bad: "cannot be updated"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := tenantUpdateFields(tc.paths)
			if tc.bad != "" {
				require.Equal(t, codes.InvalidArgument, status.Code(err))
				require.Contains(t, status.Convert(err).Message(), tc.bad)
				return
			}
			require.NoError(t, err)
			want := map[string]bool{}
			for _, f := range tc.want {
				want[f] = true
			}
			require.Equal(t, want, got)
		})
	}
}

func TestUpdateTenantMergesQuotaFields(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active, DisplayName: "A",
		Quota:   tenant.Quota{GPU: 4, CPU: "64", Memory: "256Gi", Pods: 20},
		Members: []tenant.Member{{Group: "ml", Role: tenant.RoleEditor}}}
	srv := NewTenantServer(Deps{Store: fakeTenantStore{st}})
	update := func(mask []string, in *pb.Tenant) (*pb.Tenant, error) {
		in.Name = "tenants/a"
		req := &pb.UpdateTenantRequest{Tenant: in}
		if mask != nil {
			req.UpdateMask = &fieldmaskpb.FieldMask{Paths: mask}
		}
		return srv.UpdateTenant(context.Background(), req)
	}

	// What the gateway makes of PATCH {"quota":{"gpu":8}}.
	got, err := update([]string{"quota.gpu"}, &pb.Tenant{Quota: &pb.Quota{Gpu: 8}})
	require.NoError(t, err)
	require.True(t, proto.Equal(&pb.Quota{Gpu: 8, Cpu: "64", Memory: "256Gi", Pods: 20}, got.GetQuota()), "%v", got.GetQuota())
	require.Equal(t, "A", got.GetDisplayName())
	require.Len(t, got.GetMembers(), 1)

	got, err = update([]string{"quota"}, &pb.Tenant{Quota: &pb.Quota{Gpu: 2}})
	require.NoError(t, err)
	require.True(t, proto.Equal(&pb.Quota{Gpu: 2}, got.GetQuota()), "the whole quota is replaced: %v", got.GetQuota())

	_, err = update([]string{"quota.gpu"}, &pb.Tenant{Quota: &pb.Quota{Gpu: -1}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, "tenant.quota.gpu", badRequest(t, err).GetFieldViolations()[0].GetField())
}

// A tenant's allowed clusters must be registered when they are added;
// a name kept from before stays valid after its cluster was deleted.
func TestTenantClustersMustBeRegistered(t *testing.T) {
	st := newFakeStore()
	st.clusters = []cluster.Cluster{{Name: "default"}, {Name: "b"}}
	st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active, Clusters: []string{"gone"}}
	srv := NewTenantServer(Deps{Store: fakeTenantStore{st}})

	_, err := srv.CreateTenant(context.Background(), &pb.CreateTenantRequest{TenantId: "new", Tenant: &pb.Tenant{Clusters: []string{"b", "mars"}}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	v := badRequest(t, err).GetFieldViolations()
	require.Equal(t, "tenant.clusters[1]", v[0].GetField())
	require.Contains(t, v[0].GetDescription(), `cluster "mars" is not registered`)

	update := func(clusters ...string) (*pb.Tenant, error) {
		return srv.UpdateTenant(context.Background(), &pb.UpdateTenantRequest{
			Tenant: &pb.Tenant{Name: "tenants/a", Clusters: clusters}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"clusters"}}})
	}
	got, err := update("gone", "b")
	require.NoError(t, err, "gone was allowed before; b is registered")
	require.Equal(t, []string{"gone", "b"}, got.GetClusters())
	_, err = update("b", "nowhere")
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, "tenant.clusters[1]", badRequest(t, err).GetFieldViolations()[0].GetField())
	got, err = update()
	require.NoError(t, err)
	require.Empty(t, got.GetClusters(), "an empty list allows every cluster")
}

func TestUpdateTenantWithoutMaskKeepsWhatIsNotSet(t *testing.T) {
	require.Empty(t, populatedTenantFields(&pb.Tenant{}), "an empty body changes nothing")
	got := populatedTenantFields(&pb.Tenant{DisplayName: "x", Quota: &pb.Quota{}, PodReaderGroups: []string{"g"}})
	require.Equal(t, map[string]bool{"display_name": true, "quota": true, "pod_reader_groups": true}, got)
}

func TestUpdateTenantSharing(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active, Quota: tenant.Quota{GPU: 8},
		Sharing: tenant.Sharing{Cohort: "research", Weight: 2}}
	srv := NewTenantServer(Deps{Store: fakeTenantStore{st}})
	update := func(mask []string, in *pb.Tenant) (*pb.Tenant, error) {
		in.Name = "tenants/a"
		return srv.UpdateTenant(context.Background(), &pb.UpdateTenantRequest{Tenant: in, UpdateMask: &fieldmaskpb.FieldMask{Paths: mask}})
	}

	// What the gateway makes of PATCH {"sharing":{"budget":{"gpuHours":100},"borrowingLimit":{"gpu":8}}}.
	got, err := update([]string{"sharing.budget.gpu_hours", "sharing.borrowingLimit.gpu"}, &pb.Tenant{Sharing: &pb.Sharing{
		Budget: &pb.Budget{GpuHours: 100}, BorrowingLimit: &pb.Quota{Gpu: 8}}})
	require.NoError(t, err)
	want := &pb.Sharing{Cohort: "research", Weight: 2, BorrowingLimit: &pb.Quota{Gpu: 8}, Budget: &pb.Budget{GpuHours: 100}}
	require.True(t, proto.Equal(want, got.GetSharing()), "the other sharing fields are kept: %v", got.GetSharing())
	require.Equal(t, tenant.Sharing{Cohort: "research", Weight: 2, BorrowingLimit: &tenant.Quota{GPU: 8}, Budget: &tenant.Budget{GPUHours: 100}},
		st.tenants["a"].Sharing)

	_, err = update([]string{"sharing.weight"}, &pb.Tenant{Sharing: &pb.Sharing{Weight: -1}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, "tenant.sharing.weight", badRequest(t, err).GetFieldViolations()[0].GetField())

	got, err = update([]string{"sharing"}, &pb.Tenant{})
	require.NoError(t, err)
	require.Nil(t, got.GetSharing(), "the whole sharing is cleared")

	fields, err := tenantUpdateFields([]string{"sharing.reclaimPolicy", "sharingStatus.budgetUsedGpuHours"})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"sharing.reclaim_policy": true}, fields)
}

func TestSharingStatusFromTheLedger(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	day := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 0, 0, 0, 0, time.UTC) }
	u := store.SharingUsage{BudgetGPUSeconds: 3600 * 110, FirstUse: day(12, 1).Add(5 * time.Hour)}
	u.Decayed[job.GPU], u.Decayed[job.CPU] = 5.6, 2000
	month := sharingStatusToPB(tenant.Sharing{UsageHalfLifeSeconds: 3600, Budget: &tenant.Budget{GPUHours: 100}}, u, now)
	require.InDelta(t, 110, month.GetBudgetUsedGpuHours(), 1e-9, "December's days only")
	require.Zero(t, month.GetBudgetRemainingGpuHours())
	require.Equal(t, day(1, 1).AddDate(1, 0, 0), month.GetBudgetResetTime().AsTime())
	require.EqualValues(t, 6, month.GetDecayedUsage().GetGpu())
	require.Equal(t, "2", month.GetDecayedUsage().GetCpu())

	u = store.SharingUsage{BudgetGPUSeconds: 3600 * 160, FirstUse: day(11, 30).Add(time.Hour)}
	rolling := sharingStatusToPB(tenant.Sharing{Budget: &tenant.Budget{GPUHours: 200, Period: tenant.PeriodRolling30d}}, u, now)
	require.InDelta(t, 160, rolling.GetBudgetUsedGpuHours(), 1e-9)
	require.InDelta(t, 40, rolling.GetBudgetRemainingGpuHours(), 1e-9)
	require.Equal(t, day(12, 30), rolling.GetBudgetResetTime().AsTime(), "when the oldest day in the window leaves it")
	require.Nil(t, rolling.GetDecayedUsage(), "no history without a half-life")
}

func TestTenantIdleGPUSettings(t *testing.T) {
	// Defaults show as such; one setting is updated alone.
	out := tenantToPB(tenant.Tenant{ID: "a"})
	require.InDelta(t, 5, out.GetScheduling().GetIdleGpuThresholdPercent(), 0)
	require.EqualValues(t, 1800, out.GetScheduling().GetIdleGpuSeconds())
	tn := tenant.Tenant{ID: "a", Scheduling: tenant.Scheduling{Preemption: tenant.PreemptLowerPriority, IdleGPUPercent: 10}}
	tenantFieldsFromPB(&pb.Tenant{Scheduling: &pb.Scheduling{IdleGpuSeconds: 600}}, &tn, map[string]bool{"scheduling.idle_gpu_seconds": true})
	require.Equal(t, tenant.Scheduling{Preemption: tenant.PreemptLowerPriority, IdleGPUPercent: 10, IdleGPUSeconds: 600}, tn.Scheduling)
	// Out of range: violations naming the fields.
	v := tenant.Validate(&tenant.Tenant{Scheduling: tenant.Scheduling{IdleGPUPercent: 101, IdleGPUSeconds: -1}})
	var fields []string
	for _, f := range v {
		fields = append(fields, f.Field)
	}
	require.Equal(t, []string{"scheduling.idleGpuThresholdPercent", "scheduling.idleGpuSeconds"}, fields)
}
