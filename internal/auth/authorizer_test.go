package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/resname"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// fakeTenants is a TenantSource over a map.
type fakeTenants map[string]tenant.Tenant

func (f fakeTenants) TenantGet(_ context.Context, id string) (tenant.Tenant, error) {
	t, ok := f[id]
	if !ok {
		return tenant.Tenant{}, fmt.Errorf("store: tenant %q: %w", id, ErrTenantNotFound)
	}
	return t, nil
}

// The world of the matrix: tenant "alpha" where each role principal has
// its role, "bravo" where none of them has any, "leaving" and "gone"
// (offboarding, deleted) with the same members as alpha, and no "ghost".
var (
	roleMembers = []tenant.Member{
		{Subject: "vera", Role: tenant.RoleViewer},
		{Subject: "ed", Role: tenant.RoleEditor},
		{Subject: "ada", Role: tenant.RoleAdmin},
	}
	testTenants = fakeTenants{
		"alpha":   {ID: "alpha", State: tenant.Active, Members: roleMembers},
		"bravo":   {ID: "bravo", State: tenant.Active, Members: []tenant.Member{{Subject: "someone-else", Role: tenant.RoleAdmin}}},
		"leaving": {ID: "leaving", State: tenant.Offboarding, Members: roleMembers},
		"gone":    {ID: "gone", State: tenant.Deleted, Members: roleMembers},
	}
	// Columns of the matrix, in order.
	principals = []struct {
		col string
		p   Principal
	}{
		{"none", Principal{Subject: "nobody"}},
		{"viewer", Principal{Subject: "vera"}},
		{"editor", Principal{Subject: "ed"}},
		{"admin", Principal{Subject: "ada"}},
		{"platform", Principal{Subject: "root", Groups: []string{"platform-admins"}, PlatformAdmin: true}},
	}
)

// requestFor builds method's request naming tenant t.
func requestFor(method, t string) any {
	tn := "tenants/" + t
	switch method {
	case pb.JobService_CreateJob_FullMethodName:
		return &pb.CreateJobRequest{Parent: tn, Job: &pb.Job{}}
	case pb.JobService_ImportTFJob_FullMethodName:
		return &pb.ImportTFJobRequest{Parent: tn}
	case pb.JobService_BatchCreateJobs_FullMethodName:
		return &pb.BatchCreateJobsRequest{Parent: tn}
	case pb.JobService_ParseJobFile_FullMethodName:
		return &pb.ParseJobFileRequest{Parent: tn}
	case pb.JobService_GetJob_FullMethodName:
		return &pb.GetJobRequest{Name: tn + "/jobs/j1"}
	case pb.JobService_ListJobs_FullMethodName:
		return &pb.ListJobsRequest{Parent: tn}
	case pb.JobService_CancelJob_FullMethodName:
		return &pb.CancelJobRequest{Name: tn + "/jobs/j1"}
	case pb.JobService_SuspendJob_FullMethodName:
		return &pb.SuspendJobRequest{Name: tn + "/jobs/j1"}
	case pb.JobService_ResumeJob_FullMethodName:
		return &pb.ResumeJobRequest{Name: tn + "/jobs/j1"}
	case pb.JobService_DeleteJob_FullMethodName:
		return &pb.DeleteJobRequest{Name: tn + "/jobs/j1"}
	case pb.JobService_ListJobEvents_FullMethodName:
		return &pb.ListJobEventsRequest{Parent: tn + "/jobs/j1"}
	case pb.JobService_GetJobLogs_FullMethodName:
		return &pb.GetJobLogsRequest{Name: tn + "/jobs/j1"}
	case pb.JobService_WatchJob_FullMethodName:
		return &pb.WatchJobRequest{Name: tn + "/jobs/j1"}
	case pb.JobService_WatchJobs_FullMethodName:
		return &pb.WatchJobsRequest{Parent: tn}
	case pb.TenantService_CreateTenant_FullMethodName:
		return &pb.CreateTenantRequest{TenantId: t, Tenant: &pb.Tenant{}}
	case pb.TenantService_GetTenant_FullMethodName:
		return &pb.GetTenantRequest{Name: tn}
	case pb.TenantService_ListTenants_FullMethodName:
		return &pb.ListTenantsRequest{}
	case pb.TenantService_UpdateTenant_FullMethodName:
		return &pb.UpdateTenantRequest{Tenant: &pb.Tenant{Name: tn}}
	case pb.TenantService_DeleteTenant_FullMethodName:
		return &pb.DeleteTenantRequest{Name: tn}
	case pb.WebhookService_CreateWebhook_FullMethodName:
		return &pb.CreateWebhookRequest{Parent: tn}
	case pb.WebhookService_GetWebhook_FullMethodName:
		return &pb.GetWebhookRequest{Name: tn + "/webhooks/h"}
	case pb.WebhookService_ListWebhooks_FullMethodName:
		return &pb.ListWebhooksRequest{Parent: tn}
	case pb.WebhookService_UpdateWebhook_FullMethodName:
		return &pb.UpdateWebhookRequest{Webhook: &pb.Webhook{Name: tn + "/webhooks/h"}}
	case pb.WebhookService_DeleteWebhook_FullMethodName:
		return &pb.DeleteWebhookRequest{Name: tn + "/webhooks/h"}
	case pb.WebhookService_PingWebhook_FullMethodName:
		return &pb.PingWebhookRequest{Name: tn + "/webhooks/h"}
	case pb.WebhookService_ListWebhookDeliveries_FullMethodName:
		return &pb.ListWebhookDeliveriesRequest{Parent: tn + "/webhooks/h"}
	case pb.WebhookService_GetWebhookDelivery_FullMethodName:
		return &pb.GetWebhookDeliveryRequest{Name: tn + "/webhooks/h/deliveries/1"}
	case pb.WebhookService_RedeliverWebhookDelivery_FullMethodName:
		return &pb.RedeliverWebhookDeliveryRequest{Name: tn + "/webhooks/h/deliveries/1"}
	case pb.ExperimentService_CreateExperiment_FullMethodName:
		return &pb.CreateExperimentRequest{Parent: tn}
	case pb.ExperimentService_GetExperiment_FullMethodName:
		return &pb.GetExperimentRequest{Name: tn + "/experiments/x"}
	case pb.ExperimentService_ListExperiments_FullMethodName:
		return &pb.ListExperimentsRequest{Parent: tn}
	case pb.ExperimentService_CancelExperiment_FullMethodName:
		return &pb.CancelExperimentRequest{Name: tn + "/experiments/x"}
	case pb.ExperimentService_DeleteExperiment_FullMethodName:
		return &pb.DeleteExperimentRequest{Name: tn + "/experiments/x"}
	case pb.ExperimentService_ListTrials_FullMethodName:
		return &pb.ListTrialsRequest{Parent: tn + "/experiments/x"}
	case pb.ExperimentService_GetTrialMetrics_FullMethodName:
		return &pb.GetTrialMetricsRequest{Name: tn + "/experiments/x/trials/0"}
	case pb.TenantService_PutSecret_FullMethodName:
		return &pb.PutSecretRequest{Secret: &pb.Secret{Name: tn + "/secrets/s1", Data: map[string]string{"k": "v"}}}
	case pb.TenantService_ListSecrets_FullMethodName:
		return &pb.ListSecretsRequest{Parent: tn}
	case pb.TenantService_DeleteSecret_FullMethodName:
		return &pb.DeleteSecretRequest{Name: tn + "/secrets/s1"}
	case pb.AuditService_ListAuditRecords_FullMethodName:
		return &pb.ListAuditRecordsRequest{Parent: tn}
	case pb.UsageService_QueryUsage_FullMethodName:
		return &pb.QueryUsageRequest{Parent: tn}
	case pb.UsageService_QueryQueueHistory_FullMethodName:
		return &pb.QueryQueueHistoryRequest{Parent: tn}
	case pb.UsageService_QueryJobUtilization_FullMethodName:
		return &pb.QueryJobUtilizationRequest{Name: tn + "/jobs/j1"}
	case pb.TenantService_PutCohort_FullMethodName:
		return &pb.PutCohortRequest{Cohort: &pb.Cohort{Name: "cohorts/lab"}}
	case pb.TenantService_GetCohort_FullMethodName:
		return &pb.GetCohortRequest{Name: "cohorts/lab"}
	case pb.TenantService_ListCohorts_FullMethodName:
		return &pb.ListCohortsRequest{}
	case pb.TenantService_DeleteCohort_FullMethodName:
		return &pb.DeleteCohortRequest{Name: "cohorts/lab"}
	case pb.ClusterService_CreateCluster_FullMethodName:
		return &pb.CreateClusterRequest{ClusterId: "eu-1", Cluster: &pb.Cluster{}}
	case pb.ClusterService_GetCluster_FullMethodName:
		return &pb.GetClusterRequest{Name: "clusters/eu-1"}
	case pb.ClusterService_ListClusters_FullMethodName:
		return &pb.ListClustersRequest{}
	case pb.ClusterService_UpdateCluster_FullMethodName:
		return &pb.UpdateClusterRequest{Cluster: &pb.Cluster{Name: "clusters/eu-1"}}
	case pb.ClusterService_DrainCluster_FullMethodName:
		return &pb.DrainClusterRequest{Name: "clusters/eu-1"}
	case pb.ClusterService_CordonCluster_FullMethodName:
		return &pb.CordonClusterRequest{Name: "clusters/eu-1"}
	case pb.ClusterService_UncordonCluster_FullMethodName:
		return &pb.UncordonClusterRequest{Name: "clusters/eu-1"}
	case pb.ClusterService_DeleteCluster_FullMethodName:
		return &pb.DeleteClusterRequest{Name: "clusters/eu-1"}
	}
	if strings.HasPrefix(method, AgentServicePrefix) {
		return &pb.LoadJobRequest{Key: &pb.AgentJobKey{Tenant: t, Uid: "u"}}
	}
	panic("no request for " + method)
}

var cellCodes = map[string]codes.Code{
	"OK": codes.OK,
	"NF": codes.NotFound,
	"PD": codes.PermissionDenied,
	"FP": codes.FailedPrecondition,
}

// matrix: for each method, the code for each column (none viewer editor
// admin platform) when the request names
//   - own:     alpha, where each role principal has its role;
//   - other:   bravo, an existing tenant where none of them is a member;
//   - missing: ghost, which does not exist;
//   - leaving: an OFFBOARDING (and, separately, a DELETED) tenant with the
//     same members as alpha.
var matrix = []struct {
	method                       string
	own, other, missing, leaving string
}{
	// Job reads: viewer.
	{pb.JobService_GetJob_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.JobService_ListJobs_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.JobService_ListJobEvents_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.JobService_GetJobLogs_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.JobService_WatchJob_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.JobService_WatchJobs_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.JobService_ParseJobFile_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	// Job writes: editor.
	{pb.JobService_CreateJob_FullMethodName, "NF PD OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD FP FP FP"},
	{pb.JobService_ImportTFJob_FullMethodName, "NF PD OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD FP FP FP"},
	{pb.JobService_BatchCreateJobs_FullMethodName, "NF PD OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD FP FP FP"},
	{pb.JobService_CancelJob_FullMethodName, "NF PD OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD FP FP FP"},
	{pb.JobService_SuspendJob_FullMethodName, "NF PD OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD FP FP FP"},
	{pb.JobService_ResumeJob_FullMethodName, "NF PD OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD FP FP FP"},
	{pb.JobService_DeleteJob_FullMethodName, "NF PD OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD FP FP FP"},
	// Tenant reads: viewer; ListTenants: anyone (the handler filters).
	{pb.TenantService_GetTenant_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.TenantService_ListTenants_FullMethodName, "OK OK OK OK OK", "OK OK OK OK OK", "OK OK OK OK OK", "OK OK OK OK OK"},
	// Tenant lifecycle: platform admin. Members learn it exists (they do
	// anyway); others cannot tell it from a missing one.
	{pb.TenantService_CreateTenant_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	{pb.TenantService_UpdateTenant_FullMethodName, "NF PD PD PD OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD PD FP"},
	{pb.TenantService_DeleteTenant_FullMethodName, "NF PD PD PD OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD PD OK"},
	// Cohorts span tenants: platform admins only, whatever tenant.
	{pb.TenantService_PutCohort_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	{pb.TenantService_GetCohort_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	{pb.TenantService_ListCohorts_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	{pb.TenantService_DeleteCohort_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	// Clusters are the platform's: platform admins only, whatever tenant
	// role the caller has (a tenant admin included).
	{pb.ClusterService_CreateCluster_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	{pb.ClusterService_GetCluster_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	{pb.ClusterService_ListClusters_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	{pb.ClusterService_UpdateCluster_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	{pb.ClusterService_DrainCluster_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	{pb.ClusterService_CordonCluster_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	{pb.ClusterService_UncordonCluster_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	{pb.ClusterService_DeleteCluster_FullMethodName, "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK", "PD PD PD PD OK"},
	// Secrets: names readable by viewers, changes by tenant admins.
	{pb.TenantService_ListSecrets_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.TenantService_PutSecret_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD FP FP"},
	{pb.TenantService_DeleteSecret_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD FP FP"},
	// Webhooks: tenant admins, reads included; writes in an active tenant only.
	{pb.WebhookService_CreateWebhook_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD FP FP"},
	{pb.WebhookService_UpdateWebhook_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD FP FP"},
	{pb.WebhookService_DeleteWebhook_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD FP FP"},
	{pb.WebhookService_PingWebhook_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD FP FP"},
	{pb.WebhookService_RedeliverWebhookDelivery_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD FP FP"},
	{pb.WebhookService_GetWebhook_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD OK OK"},
	{pb.WebhookService_ListWebhooks_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD OK OK"},
	{pb.WebhookService_ListWebhookDeliveries_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD OK OK"},
	{pb.WebhookService_GetWebhookDelivery_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD OK OK"},
	// Experiments: as jobs. A viewer of alpha sees nothing of bravo's.
	{pb.ExperimentService_GetExperiment_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.ExperimentService_ListExperiments_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.ExperimentService_ListTrials_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.ExperimentService_GetTrialMetrics_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.ExperimentService_CreateExperiment_FullMethodName, "NF PD OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD FP FP FP"},
	{pb.ExperimentService_CancelExperiment_FullMethodName, "NF PD OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD FP FP FP"},
	{pb.ExperimentService_DeleteExperiment_FullMethodName, "NF PD OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD FP FP FP"},
	// The audit log: a tenant's admins read it, whatever its state.
	{pb.AuditService_ListAuditRecords_FullMethodName, "NF PD PD OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF PD PD OK OK"},
	// Usage: a tenant's members read theirs, whatever its state (it is
	// still billed).
	{pb.UsageService_QueryUsage_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	// AgentService: remote clusters' agents only, never a user, not even
	// a platform admin (agent_test.go has the agents' side).
	{pb.AgentService_ClaimJobs_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_ExtendLease_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_RenewLease_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_ReleaseJobs_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_ReleaseAllJobs_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_LoadJob_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_SaveJob_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_ParkJob_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_PurgeJob_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_ListJobsByKeys_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_GetAgentTenant_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_ListAgentTenants_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_ListAgentSecrets_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.AgentService_AgentHeartbeat_FullMethodName, "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD", "PD PD PD PD PD"},
	{pb.UsageService_QueryQueueHistory_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
	{pb.UsageService_QueryJobUtilization_FullMethodName, "NF OK OK OK OK", "NF NF NF NF OK", "NF NF NF NF NF", "NF OK OK OK OK"},
}

func parseRow(t *testing.T, row string) []codes.Code {
	t.Helper()
	f := strings.Fields(row)
	require.Len(t, f, len(principals), "row %q", row)
	out := make([]codes.Code, len(f))
	for i, s := range f {
		c, ok := cellCodes[s]
		require.True(t, ok, "cell %q", s)
		out[i] = c
	}
	return out
}

func TestAuthorizerMatrix(t *testing.T) {
	a := NewAuthorizer(testTenants)
	ctx := context.Background()
	cases := []struct {
		where   string
		tenants []string
		row     func(m int) string
	}{
		{"own", []string{"alpha"}, func(m int) string { return matrix[m].own }},
		{"other", []string{"bravo"}, func(m int) string { return matrix[m].other }},
		{"missing", []string{"ghost"}, func(m int) string { return matrix[m].missing }},
		{"leaving", []string{"leaving", "gone"}, func(m int) string { return matrix[m].leaving }},
	}
	for m, row := range matrix {
		short := row.method[strings.LastIndex(row.method, "/")+1:]
		for _, c := range cases {
			want := parseRow(t, c.row(m))
			for _, tid := range c.tenants {
				for col, pr := range principals {
					t.Run(fmt.Sprintf("%s/%s/%s/%s", short, c.where, tid, pr.col), func(t *testing.T) {
						acc, err := a.Authorize(ctx, pr.p, row.method, requestFor(row.method, tid))
						st := status.Convert(err)
						require.Equal(t, want[col], st.Code(), "message: %s", st.Message())
						if err != nil {
							require.Equal(t, Access{}, acc)
							return
						}
						if perm, _ := RequiredPermission(row.method); perm == PermAuthenticated || row.method == pb.TenantService_CreateTenant_FullMethodName || strings.Contains(row.method, "Cohort") || strings.Contains(row.method, "Cluster") {
							require.Empty(t, acc.TenantID)
							return
						}
						require.Equal(t, tid, acc.TenantID)
						require.Equal(t, tid, acc.Tenant.ID)
						require.NotEqual(t, tenant.RoleNone, acc.Role)
					})
				}
			}
		}
	}
}

// Every method of both services has a row in the policy table and in the
// matrix; the table has nothing else.
func TestEveryMethodHasARule(t *testing.T) {
	var all []string
	for _, sd := range []grpc.ServiceDesc{pb.JobService_ServiceDesc, pb.TenantService_ServiceDesc, pb.AuditService_ServiceDesc, pb.UsageService_ServiceDesc, pb.WebhookService_ServiceDesc, pb.ClusterService_ServiceDesc, pb.ExperimentService_ServiceDesc, pb.AgentService_ServiceDesc} {
		for _, m := range sd.Methods {
			all = append(all, "/"+sd.ServiceName+"/"+m.MethodName)
		}
		for _, s := range sd.Streams {
			all = append(all, "/"+sd.ServiceName+"/"+s.StreamName)
		}
	}
	inMatrix := map[string]bool{}
	for _, row := range matrix {
		inMatrix[row.method] = true
	}
	for _, m := range all {
		perm, ok := RequiredPermission(m)
		require.True(t, ok, "%s has no rule", m)
		require.NotEqual(t, PermDeny, perm, "%s", m)
		require.True(t, inMatrix[m], "%s is not in the matrix", m)
	}
	require.Len(t, rules, len(all), "rules name methods that do not exist")
	require.Len(t, matrix, len(all))
}

func TestAuthorizerMessages(t *testing.T) {
	a := NewAuthorizer(testTenants)
	ctx := context.Background()
	vera, ed := principals[1].p, principals[2].p

	_, err := a.Authorize(ctx, vera, pb.JobService_GetJob_FullMethodName, requestFor(pb.JobService_GetJob_FullMethodName, "bravo"))
	require.Equal(t, `tenant "bravo" not found`, status.Convert(err).Message())
	_, err = a.Authorize(ctx, vera, pb.JobService_GetJob_FullMethodName, requestFor(pb.JobService_GetJob_FullMethodName, "ghost"))
	require.Equal(t, `tenant "ghost" not found`, status.Convert(err).Message(), "missing and foreign tenants must look the same")

	_, err = a.Authorize(ctx, vera, pb.JobService_CreateJob_FullMethodName, requestFor(pb.JobService_CreateJob_FullMethodName, "alpha"))
	require.Equal(t, `permission denied: requires role editor in tenant "alpha"`, status.Convert(err).Message())
	_, err = a.Authorize(ctx, ed, pb.TenantService_PutSecret_FullMethodName, requestFor(pb.TenantService_PutSecret_FullMethodName, "alpha"))
	require.Equal(t, `permission denied: requires role admin in tenant "alpha"`, status.Convert(err).Message())
	_, err = a.Authorize(ctx, ed, pb.TenantService_UpdateTenant_FullMethodName, requestFor(pb.TenantService_UpdateTenant_FullMethodName, "alpha"))
	require.Equal(t, `permission denied: requires platform admin`, status.Convert(err).Message())
	_, err = a.Authorize(ctx, ed, pb.JobService_CreateJob_FullMethodName, requestFor(pb.JobService_CreateJob_FullMethodName, "leaving"))
	require.Equal(t, `tenant "leaving" is offboarding: it accepts no changes`, status.Convert(err).Message())
}

func TestAuthorizerGroupMembership(t *testing.T) {
	a := NewAuthorizer(fakeTenants{"alpha": {ID: "alpha", State: tenant.Active, Members: []tenant.Member{
		{Group: "ml-viewers", Role: tenant.RoleViewer},
		{Group: "ml-editors", Role: tenant.RoleEditor},
	}}})
	ctx := context.Background()
	create := pb.JobService_CreateJob_FullMethodName

	_, err := a.Authorize(ctx, Principal{Subject: "u", Groups: []string{"ml-viewers"}}, create, requestFor(create, "alpha"))
	require.Equal(t, codes.PermissionDenied, status.Code(err))

	acc, err := a.Authorize(ctx, Principal{Subject: "u", Groups: []string{"ml-viewers", "ml-editors"}}, create, requestFor(create, "alpha"))
	require.NoError(t, err)
	require.Equal(t, tenant.RoleEditor, acc.Role, "the highest role wins")

	_, err = a.Authorize(ctx, Principal{Subject: "ml-editors"}, create, requestFor(create, "alpha"))
	require.Equal(t, codes.NotFound, status.Code(err), "a subject named like a group is not in the group")
}

func TestAuthorizerMalformedNames(t *testing.T) {
	a := NewAuthorizer(testTenants)
	admin := principals[4].p
	cases := []struct {
		method string
		req    any
		field  string
	}{
		{pb.JobService_CreateJob_FullMethodName, &pb.CreateJobRequest{}, "parent"},
		{pb.JobService_CreateJob_FullMethodName, &pb.CreateJobRequest{Parent: "tenants/"}, "parent"},
		{pb.JobService_CreateJob_FullMethodName, &pb.CreateJobRequest{Parent: "tenants/Alpha"}, "parent"},
		{pb.JobService_CreateJob_FullMethodName, &pb.CreateJobRequest{Parent: "tenants/-alpha"}, "parent"},
		{pb.JobService_CreateJob_FullMethodName, &pb.CreateJobRequest{Parent: "tenants/" + strings.Repeat("a", 64)}, "parent"},
		{pb.JobService_CreateJob_FullMethodName, &pb.CreateJobRequest{Parent: "projects/alpha"}, "parent"},
		{pb.JobService_CreateJob_FullMethodName, &pb.CreateJobRequest{Parent: "tenants/alpha/jobs/j1"}, "parent"},
		{pb.JobService_CreateJob_FullMethodName, &pb.CreateJobRequest{Parent: "/tenants/alpha"}, "parent"},
		{pb.JobService_GetJob_FullMethodName, &pb.GetJobRequest{Name: "tenants/alpha"}, "name"},
		{pb.JobService_GetJob_FullMethodName, &pb.GetJobRequest{Name: "tenants/alpha/jobs/"}, "name"},
		{pb.JobService_GetJob_FullMethodName, &pb.GetJobRequest{Name: "tenants/alpha/secrets/j1"}, "name"},
		{pb.JobService_GetJob_FullMethodName, &pb.GetJobRequest{Name: "tenants/alpha/jobs/j1/extra"}, "name"},
		{pb.JobService_ListJobEvents_FullMethodName, &pb.ListJobEventsRequest{Parent: "tenants/alpha"}, "parent"},
		{pb.TenantService_UpdateTenant_FullMethodName, &pb.UpdateTenantRequest{}, "tenant.name"},
		{pb.TenantService_PutSecret_FullMethodName, &pb.PutSecretRequest{}, "secret.name"},
		{pb.TenantService_PutSecret_FullMethodName, &pb.PutSecretRequest{Secret: &pb.Secret{Name: "tenants/alpha/jobs/s"}}, "secret.name"},
		{pb.TenantService_DeleteSecret_FullMethodName, &pb.DeleteSecretRequest{Name: "tenants/alpha/secrets"}, "name"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%T/%v", c.req, c.req), func(t *testing.T) {
			_, err := a.Authorize(context.Background(), admin, c.method, c.req)
			st := status.Convert(err)
			require.Equal(t, codes.InvalidArgument, st.Code(), st.Message())
			require.Contains(t, st.Message(), c.field)
			require.Len(t, st.Details(), 1)
			br, ok := st.Details()[0].(*errdetails.BadRequest)
			require.True(t, ok)
			require.Equal(t, c.field, br.GetFieldViolations()[0].GetField())
		})
	}
}

// Every tenant's audit records (no parent) are the platform admins'.
func TestAuditRecordsOfEveryTenant(t *testing.T) {
	a := NewAuthorizer(testTenants)
	m := pb.AuditService_ListAuditRecords_FullMethodName
	for _, pr := range principals {
		acc, err := a.Authorize(context.Background(), pr.p, m, &pb.ListAuditRecordsRequest{})
		if pr.p.PlatformAdmin {
			require.NoError(t, err)
			require.Empty(t, acc.TenantID)
			continue
		}
		require.Equal(t, codes.PermissionDenied, status.Code(err), pr.col)
	}
}

// Every tenant's usage (tenants/-) is the platform admins'; an empty
// parent is no name at all.
func TestUsageOfEveryTenant(t *testing.T) {
	a := NewAuthorizer(testTenants)
	m := pb.UsageService_QueryUsage_FullMethodName
	for _, pr := range principals {
		acc, err := a.Authorize(context.Background(), pr.p, m, &pb.QueryUsageRequest{Parent: "tenants/-"})
		if pr.p.PlatformAdmin {
			require.NoError(t, err)
			require.Empty(t, acc.TenantID)
		} else {
			require.Equal(t, codes.PermissionDenied, status.Code(err), pr.col)
		}
		_, err = a.Authorize(context.Background(), pr.p, m, &pb.QueryUsageRequest{})
		require.Equal(t, codes.InvalidArgument, status.Code(err), pr.col)
	}
}

func TestAuthorizerDeniesUnknownMethods(t *testing.T) {
	a := NewAuthorizer(testTenants)
	for _, m := range []string{"/trainyard.v1.JobService/Nope", "/trainyard.v2.JobService/GetJob", "", "/grpc.health.v1.Health/Check"} {
		_, err := a.Authorize(context.Background(), principals[4].p, m, &pb.GetJobRequest{Name: "tenants/alpha/jobs/j"})
		require.Equal(t, codes.PermissionDenied, status.Code(err), m)
	}
}

func TestAuthorizerLookupFailures(t *testing.T) {
	boom := errors.New("connection refused to 10.0.0.5:5432")
	failing := TenantSourceFunc(func(context.Context, string) (tenant.Tenant, error) { return tenant.Tenant{}, boom })
	get := pb.JobService_GetJob_FullMethodName
	req := requestFor(get, "alpha")
	vera := principals[1].p

	_, err := NewAuthorizer(failing).Authorize(context.Background(), vera, get, req)
	st := status.Convert(err)
	require.Equal(t, codes.Internal, st.Code())
	require.Equal(t, "internal error", st.Message(), "store errors never reach the caller")
	require.ErrorIs(t, err, boom, "but the log can have them")

	down := TenantSourceFunc(func(context.Context, string) (tenant.Tenant, error) {
		return tenant.Tenant{}, fmt.Errorf("%w: %w", ErrTenantSourceUnavailable, boom)
	})
	_, err = NewAuthorizer(down).Authorize(context.Background(), vera, get, req)
	st = status.Convert(err)
	require.Equal(t, codes.Unavailable, st.Code(), "a database outage is retried, not internal")
	require.NotContains(t, st.Message(), "10.0.0.5")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = NewAuthorizer(failing).Authorize(ctx, vera, get, req)
	require.Equal(t, codes.Canceled, status.Code(err))

	wrongID := TenantSourceFunc(func(context.Context, string) (tenant.Tenant, error) {
		return tenant.Tenant{ID: "bravo", State: tenant.Active, Members: roleMembers}, nil
	})
	_, err = NewAuthorizer(wrongID).Authorize(context.Background(), vera, get, req)
	require.Equal(t, codes.Internal, status.Code(err), "a store returning another tenant must not grant access to it")

	_, err = NewAuthorizer(testTenants).Authorize(context.Background(), vera, get, &pb.ListJobsRequest{Parent: "tenants/alpha"})
	require.Equal(t, codes.Internal, status.Code(err), "a request of the wrong type is a programming error")

	noState := fakeTenants{"alpha": {ID: "alpha", Members: roleMembers}}
	_, err = NewAuthorizer(noState).Authorize(context.Background(), principals[2].p, pb.JobService_CreateJob_FullMethodName, requestFor(pb.JobService_CreateJob_FullMethodName, "alpha"))
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "writes need an explicitly ACTIVE tenant")
}

// A record the caller passes stands in for the source's, for its tenant only.
func TestAuthorizerTenantRecord(t *testing.T) {
	a := NewAuthorizer(testTenants)
	watch := pb.JobService_WatchJobs_FullMethodName
	vera := principals[1].p
	removed := tenant.Tenant{ID: "alpha", State: tenant.Active, Members: roleMembers[1:]}

	_, err := a.Authorize(WithTenantRecord(context.Background(), "alpha", removed, false), vera, watch, requestFor(watch, "alpha"))
	require.Equal(t, codes.NotFound, status.Code(err), "vera is not in the record, whatever the source says")
	_, err = a.Authorize(WithTenantRecord(context.Background(), "alpha", tenant.Tenant{}, true), vera, watch, requestFor(watch, "alpha"))
	require.Equal(t, codes.NotFound, status.Code(err), "a gone tenant")
	acc, err := a.Authorize(WithTenantRecord(context.Background(), "bravo", removed, true), vera, watch, requestFor(watch, "alpha"))
	require.NoError(t, err, "a record of another tenant is not used")
	require.Equal(t, "alpha", acc.TenantID)
}

func TestPrincipalRoleIn(t *testing.T) {
	alpha := testTenants["alpha"]
	require.Equal(t, tenant.RoleNone, Principal{Subject: "nobody"}.RoleIn(alpha))
	require.Equal(t, tenant.RoleEditor, Principal{Subject: "ed"}.RoleIn(alpha))
	require.Equal(t, tenant.RoleAdmin, Principal{Subject: "x", PlatformAdmin: true}.RoleIn(alpha))
	require.Equal(t, tenant.RoleAdmin, Principal{Subject: "vera", PlatformAdmin: true}.RoleIn(alpha), "platform admin beats a lower membership")
}

func TestTenantOf(t *testing.T) {
	for name, want := range map[string]string{
		"tenants/a":                          "a",
		"tenants/ml-team-1":                  "ml-team-1",
		"tenants/" + strings.Repeat("a", 63): strings.Repeat("a", 63),
	} {
		got, ok := resname.Tenant.TenantOf(name)
		require.True(t, ok, name)
		require.Equal(t, want, got)
	}
	got, ok := resname.Job.TenantOf("tenants/t1/jobs/j")
	require.True(t, ok)
	require.Equal(t, "t1", got)
	for _, bad := range []string{"", "tenants", "tenants/", "tenants/a/", "tenants/a-", "tenants/a_b", "tenants/a.b", "Tenants/a", "tenants//a"} {
		_, ok := resname.Tenant.TenantOf(bad)
		require.False(t, ok, bad)
	}
}
