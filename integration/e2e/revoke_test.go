//go:build integration

package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// TestRevokedMemberIsRefusedAtOnce: serve allows CreateJob from a tenant
// record it remembers (issue 47), and still the create right after a
// member's removal is refused (NOT_FOUND, as for a stranger), right after
// a demotion to viewer PERMISSION_DENIED, and right after being added
// again allowed: the create's statement checks the role itself, and a
// refusal is never decided from memory. Round after round, each create
// follows the change with nothing in between.
func TestRevokedMemberIsRefusedAtOnce(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_ADMIN))
	admin := env.Tenants(t, env.AdminToken())
	bob := env.Jobs(t, env.Token("bob", "ml"))
	setMembers := func(members ...*pb.Member) {
		t.Helper()
		_, err := admin.UpdateTenant(ctxT(t), &pb.UpdateTenantRequest{
			Tenant:     &pb.Tenant{Name: harness.TenantName("acme"), Members: append([]*pb.Member{harness.Subject("alice", pb.Role_ROLE_ADMIN)}, members...)},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"members"}},
		})
		require.NoError(t, err)
	}
	n := 0
	create := func() error {
		n++
		_, err := bob.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: harness.TenantName("acme"),
			JobId: fmt.Sprintf("j%d", n), Job: oneWorker(nil, nil)})
		return err
	}
	for round := range 10 {
		member := harness.Subject("bob", pb.Role_ROLE_EDITOR)
		if round%2 == 1 {
			member = harness.Group("ml", pb.Role_ROLE_EDITOR)
		}
		setMembers(member)
		require.NoError(t, create(), "round %d: added", round)
		require.NoError(t, create(), "round %d: the record is remembered now", round)

		setMembers()
		err := create()
		require.Equal(t, codes.NotFound, status.Code(err), "round %d: removed: %v", round, err)
		require.Equal(t, `tenant "acme" not found`, status.Convert(err).Message())

		setMembers(member)
		require.NoError(t, create(), "round %d: added again", round)
		require.NoError(t, create())
		setMembers(harness.Group("ml", pb.Role_ROLE_VIEWER))
		err = create()
		require.Equal(t, codes.PermissionDenied, status.Code(err), "round %d: demoted: %v", round, err)
		require.Contains(t, status.Convert(err).Message(), "requires role editor")
	}
	jobs, err := env.Jobs(t, env.Token("alice")).ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: harness.TenantName("acme"), PageSize: 1000})
	require.NoError(t, err)
	require.Len(t, jobs.GetJobs(), 40, "four creates a round, the refused ones created nothing")
}
