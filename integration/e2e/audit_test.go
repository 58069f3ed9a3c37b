//go:build integration

package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// The audit log end to end: every change through REST and gRPC is recorded
// with who, from where and in which request; platform admins read all of
// it, tenant admins their tenant's, nobody else any; nothing changes it.
// (Secret writes need a cluster; the store's tests record them.)
func TestAuditLog(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A tenant created over REST, with the client's request id.
	req, err := http.NewRequestWithContext(ctx, "POST", env.HTTPURL+"/v1/tenants?tenantId=acme",
		strings.NewReader(`{"members":[{"subject":"alice","role":"ROLE_ADMIN"},{"subject":"vera","role":"ROLE_VIEWER"}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+env.AdminToken())
	req.Header.Set("X-Request-Id", "create-acme-1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "create-acme-1", resp.Header.Get("X-Request-Id"))
	env.CreateTenant(t, "other", harness.Subject("olga", pb.Role_ROLE_ADMIN))

	// Alice, in group ml-team, changes things over gRPC.
	aliceToken := env.Token("alice", "ml-team")
	jobs := env.Jobs(t, aliceToken)
	gctx := metadata.AppendToOutgoingContext(ctx, "x-request-id", "alice-submit-1")
	_, err = jobs.CreateJob(gctx, &pb.CreateJobRequest{Parent: "tenants/acme", JobId: "j1", RequestId: "r1", Job: queuedJob()})
	require.NoError(t, err)
	_, err = jobs.CreateJob(gctx, &pb.CreateJobRequest{Parent: "tenants/acme", JobId: "j1", RequestId: "r1", Job: queuedJob()})
	require.NoError(t, err, "a retry changes nothing and is not recorded")
	_, err = jobs.CancelJob(ctx, &pb.CancelJobRequest{Name: "tenants/acme/jobs/j1"})
	require.NoError(t, err)
	_, err = jobs.DeleteJob(ctx, &pb.DeleteJobRequest{Name: "tenants/acme/jobs/j1"})
	require.NoError(t, err)
	// The platform admin removes vera and raises the quota.
	_, err = env.Tenants(t, env.AdminToken()).UpdateTenant(ctx, &pb.UpdateTenantRequest{
		Tenant:     &pb.Tenant{Name: "tenants/acme", Members: []*pb.Member{harness.Subject("alice", pb.Role_ROLE_ADMIN)}, Quota: &pb.Quota{Gpu: 8}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"members", "quota"}},
	})
	require.NoError(t, err)

	// A platform admin reads everything, newest first.
	audit := pb.NewAuditServiceClient(env.Conn(t, env.AdminToken()))
	all, err := audit.ListAuditRecords(ctx, &pb.ListAuditRecordsRequest{})
	require.NoError(t, err)
	var got []string
	for _, r := range all.GetAuditRecords() {
		got = append(got, r.GetAction()+" "+r.GetResource())
	}
	require.Equal(t, []string{
		"tenant.update tenants/acme", "job.delete tenants/acme/jobs/j1", "job.cancel tenants/acme/jobs/j1",
		"job.create tenants/acme/jobs/j1", "tenant.create tenants/other", "tenant.create tenants/acme",
	}, got)
	created := all.GetAuditRecords()[len(got)-1]
	require.Equal(t, "platform-admin", created.GetActor().GetSubject())
	require.Equal(t, []string{harness.AdminGroup}, created.GetActor().GetGroups())
	require.Equal(t, env.Issuer.URL(), created.GetActor().GetIssuer())
	require.Equal(t, "127.0.0.1", created.GetActor().GetAddress(), "the REST client's address, not the gateway's")
	require.Equal(t, "create-acme-1", created.GetActor().GetRequestId())
	submitted := all.GetAuditRecords()[3]
	require.Equal(t, "alice", submitted.GetActor().GetSubject())
	require.Equal(t, []string{"ml-team"}, submitted.GetActor().GetGroups())
	require.Equal(t, "alice-submit-1", submitted.GetActor().GetRequestId())
	require.True(t, strings.HasPrefix(submitted.GetActor().GetAddress(), "127.0.0.1:"), submitted.GetActor().GetAddress())
	require.Equal(t, "r1", submitted.GetDetails().GetFields()["requestId"].GetStringValue())
	changed := all.GetAuditRecords()[0].GetDetails().GetFields()["changed"].GetStructValue().GetFields()
	require.Contains(t, changed, "members")
	require.Contains(t, changed, "quota")

	// Filters and keyset pages.
	page, err := audit.ListAuditRecords(ctx, &pb.ListAuditRecordsRequest{Action: "tenant.create"})
	require.NoError(t, err)
	require.Len(t, page.GetAuditRecords(), 2)
	page, err = audit.ListAuditRecords(ctx, &pb.ListAuditRecordsRequest{Subject: "alice"})
	require.NoError(t, err)
	require.Len(t, page.GetAuditRecords(), 3)
	var walked int
	preq := &pb.ListAuditRecordsRequest{Parent: "tenants/acme", PageSize: 2}
	for {
		page, err := audit.ListAuditRecords(ctx, preq)
		require.NoError(t, err)
		walked += len(page.GetAuditRecords())
		if preq.PageToken = page.GetNextPageToken(); preq.PageToken == "" {
			break
		}
	}
	require.Equal(t, 5, walked)
	_, err = audit.ListAuditRecords(ctx, &pb.ListAuditRecordsRequest{Action: "tenant.rename"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))

	// A tenant admin reads their tenant's records only; a viewer none.
	r := env.REST(aliceToken).Do(t, "GET", "/v1/tenants/acme/auditRecords", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), `"tenant.create"`)
	require.NotContains(t, string(r.Body), "tenants/other")
	r = env.REST(aliceToken).Do(t, "GET", "/v1/auditRecords", nil)
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Body))
	r = env.REST(aliceToken).Do(t, "GET", "/v1/tenants/other/auditRecords", nil)
	require.Equal(t, http.StatusNotFound, r.Status, string(r.Body))
	r = env.REST(env.Token("olga")).Do(t, "GET", "/v1/tenants/acme/auditRecords", nil)
	require.Equal(t, http.StatusNotFound, r.Status, string(r.Body))
	env.CreateTenant(t, "third", harness.Subject("vic", pb.Role_ROLE_VIEWER))
	r = env.REST(env.Token("vic")).Do(t, "GET", "/v1/tenants/third/auditRecords", nil)
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Body))

	// Nothing in the API changes a record.
	for _, m := range []string{"PUT", "PATCH", "DELETE", "POST"} {
		r := env.REST(env.AdminToken()).Do(t, m, "/v1/auditRecords", nil)
		require.Equal(t, http.StatusMethodNotAllowed, r.Status, m)
		require.Equal(t, "GET", r.Header.Get("Allow"))
	}
}
