//go:build integration

package e2e

import (
	"context"
	"google.golang.org/protobuf/types/known/structpb"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/auth/oidctest"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// TestBadTokensAreRefused: every kind of bad credential is UNAUTHENTICATED
// over gRPC and 401 over REST, and the reason is logged, not returned.
func TestBadTokensAreRefused(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	claims := oidctest.Claims{Subject: "alice"}
	tokens := map[string]string{
		"missing":        "",
		"wrong audience": env.Issuer.WrongAudienceToken(claims),
		"wrong issuer":   env.Issuer.WrongIssuerToken(claims),
		"expired":        env.Issuer.ExpiredToken(claims),
		"bad signature":  env.Issuer.BadSignatureToken(claims),
		"unknown key":    env.Issuer.UnknownKeyToken(claims),
		"alg none":       env.Issuer.AlgNoneToken(claims),
		"hmac":           env.Issuer.HMACToken(claims),
		"garbage":        "not.a.jwt",
	}
	for name, tok := range tokens {
		t.Run(name, func(t *testing.T) {
			_, err := env.Jobs(t, tok).ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme"})
			require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
			msg := status.Convert(err).Message()
			for _, leak := range []string{"audience", "expired", "signature", "issuer"} {
				require.NotContains(t, strings.ToLower(msg), leak, "the reason must be logged, not returned")
			}
			r := env.REST(tok).Do(t, "GET", "/v1/tenants/acme/jobs", nil)
			require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
		})
	}
	// The good token works, and no token ever reached the log.
	_, err := env.Jobs(t, env.Token("alice")).ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme"})
	require.NoError(t, err)
	logs := env.Server.Logs()
	require.Contains(t, logs, "expired")
	for name, tok := range tokens {
		parts := strings.Split(tok, ".")
		if sig := parts[len(parts)-1]; len(sig) > 20 {
			require.False(t, strings.Contains(logs, sig), "the %s token appears in the server log", name)
		}
	}
}

// TestTenantIsolation: a member of tenant A can do nothing at all to tenant
// B, over every method, and cannot even tell B's jobs exist.
func TestTenantIsolation(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "tenant-a", harness.Group("team-a", pb.Role_ROLE_ADMIN))
	env.CreateTenant(t, "tenant-b", harness.Group("team-b", pb.Role_ROLE_ADMIN))
	bob := env.Token("bob", "team-b")
	_, err := env.Jobs(t, bob).CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/tenant-b", JobId: "secret-project", Job: workerJob("tensorflow/tensorflow", 1)})
	require.NoError(t, err)

	alice := env.Token("alice", "team-a")
	jobs, tenants := env.Jobs(t, alice), env.Tenants(t, alice)
	bJob := "tenants/tenant-b/jobs/secret-project"
	calls := map[string]func(context.Context) error{
		"CreateJob": func(ctx context.Context) error {
			_, err := jobs.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/tenant-b", Job: workerJob("tensorflow/tensorflow", 1)})
			return err
		},
		"BatchCreateJobs": func(ctx context.Context) error {
			_, err := jobs.BatchCreateJobs(ctx, &pb.BatchCreateJobsRequest{Parent: "tenants/tenant-b",
				Requests: []*pb.CreateJobRequest{{JobId: "planted", Job: workerJob("tensorflow/tensorflow", 1)}}})
			return err
		},
		"GetJob": func(ctx context.Context) error {
			_, err := jobs.GetJob(ctx, &pb.GetJobRequest{Name: bJob})
			return err
		},
		"ListJobs": func(ctx context.Context) error {
			_, err := jobs.ListJobs(ctx, &pb.ListJobsRequest{Parent: "tenants/tenant-b"})
			return err
		},
		"CancelJob": func(ctx context.Context) error {
			_, err := jobs.CancelJob(ctx, &pb.CancelJobRequest{Name: bJob})
			return err
		},
		"DeleteJob": func(ctx context.Context) error {
			_, err := jobs.DeleteJob(ctx, &pb.DeleteJobRequest{Name: bJob})
			return err
		},
		"SuspendJob": func(ctx context.Context) error {
			_, err := jobs.SuspendJob(ctx, &pb.SuspendJobRequest{Name: bJob})
			return err
		},
		"ResumeJob": func(ctx context.Context) error {
			_, err := jobs.ResumeJob(ctx, &pb.ResumeJobRequest{Name: bJob})
			return err
		},
		"ParseJobFile": func(ctx context.Context) error {
			_, err := jobs.ParseJobFile(ctx, &pb.ParseJobFileRequest{Parent: "tenants/tenant-b", Content: "spec: {}\n"})
			return err
		},
		"ListJobEvents": func(ctx context.Context) error {
			_, err := jobs.ListJobEvents(ctx, &pb.ListJobEventsRequest{Parent: bJob})
			return err
		},
		"ImportTFJob": func(ctx context.Context) error {
			tf, err := structpb.NewStruct(map[string]any{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
				"metadata": map[string]any{"name": "stolen"}, "spec": map[string]any{}})
			if err != nil {
				return err
			}
			_, err = jobs.ImportTFJob(ctx, &pb.ImportTFJobRequest{Parent: "tenants/tenant-b", Tfjob: tf, ValidateOnly: true})
			return err
		},
		"GetJobLogs": func(ctx context.Context) error {
			s, err := jobs.GetJobLogs(ctx, &pb.GetJobLogsRequest{Name: bJob})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		},
		"WatchJob": func(ctx context.Context) error {
			s, err := jobs.WatchJob(ctx, &pb.WatchJobRequest{Name: bJob})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		},
		"WatchJobs": func(ctx context.Context) error {
			s, err := jobs.WatchJobs(ctx, &pb.WatchJobsRequest{Parent: "tenants/tenant-b"})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		},
		"GetTenant": func(ctx context.Context) error {
			_, err := tenants.GetTenant(ctx, &pb.GetTenantRequest{Name: "tenants/tenant-b"})
			return err
		},
		"CreateTenant": func(ctx context.Context) error {
			_, err := tenants.CreateTenant(ctx, &pb.CreateTenantRequest{TenantId: "tenant-c", Tenant: &pb.Tenant{}})
			return err
		},
		"UpdateTenant": func(ctx context.Context) error {
			_, err := tenants.UpdateTenant(ctx, &pb.UpdateTenantRequest{
				Tenant:     &pb.Tenant{Name: "tenants/tenant-b", Members: []*pb.Member{harness.Group("team-a", pb.Role_ROLE_ADMIN)}},
				UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"members"}},
			})
			return err
		},
		"DeleteTenant": func(ctx context.Context) error {
			_, err := tenants.DeleteTenant(ctx, &pb.DeleteTenantRequest{Name: "tenants/tenant-b"})
			return err
		},
		"PutSecret": func(ctx context.Context) error {
			_, err := tenants.PutSecret(ctx, &pb.PutSecretRequest{Secret: &pb.Secret{Name: "tenants/tenant-b/secrets/s3", Data: map[string]string{"k": "v"}}})
			return err
		},
		"ListSecrets": func(ctx context.Context) error {
			_, err := tenants.ListSecrets(ctx, &pb.ListSecretsRequest{Parent: "tenants/tenant-b"})
			return err
		},
		"DeleteSecret": func(ctx context.Context) error {
			_, err := tenants.DeleteSecret(ctx, &pb.DeleteSecretRequest{Name: "tenants/tenant-b/secrets/s3"})
			return err
		},
		// Cohorts span tenants: platform admins only.
		"PutCohort": func(ctx context.Context) error {
			_, err := tenants.PutCohort(ctx, &pb.PutCohortRequest{Cohort: &pb.Cohort{Name: "cohorts/lab", NominalQuota: &pb.Quota{Gpu: 64}}})
			return err
		},
		"GetCohort": func(ctx context.Context) error {
			_, err := tenants.GetCohort(ctx, &pb.GetCohortRequest{Name: "cohorts/lab"})
			return err
		},
		"ListCohorts": func(ctx context.Context) error {
			_, err := tenants.ListCohorts(ctx, &pb.ListCohortsRequest{})
			return err
		},
		"DeleteCohort": func(ctx context.Context) error {
			_, err := tenants.DeleteCohort(ctx, &pb.DeleteCohortRequest{Name: "cohorts/lab"})
			return err
		},
	}
	// Every method of both services is exercised.
	methods := len(pb.JobService_ServiceDesc.Methods) + len(pb.JobService_ServiceDesc.Streams) +
		len(pb.TenantService_ServiceDesc.Methods) + len(pb.TenantService_ServiceDesc.Streams)
	require.Len(t, calls, methods-1, "every method but ListTenants (which filters instead)")

	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call(ctxT(t))
			code := status.Code(err)
			require.Contains(t, []codes.Code{codes.NotFound, codes.PermissionDenied}, code, "%s on another tenant: %v", name, err)
			require.NotContains(t, status.Convert(err).Message(), "secret-project")
		})
	}

	// ListTenants shows only A; B's job is untouched.
	list, err := tenants.ListTenants(ctxT(t), &pb.ListTenantsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetTenants(), 1)
	require.Equal(t, "tenants/tenant-a", list.GetTenants()[0].GetName())
	j, err := env.Jobs(t, bob).GetJob(ctxT(t), &pb.GetJobRequest{Name: bJob})
	require.NoError(t, err)
	require.Equal(t, pb.JobState_JOB_STATE_QUEUED, j.GetStatus().GetState())

	// Over REST, the same answer.
	r := env.REST(alice).Do(t, "GET", "/v1/tenants/tenant-b/jobs/secret-project", nil)
	require.Equal(t, http.StatusNotFound, r.Status)
	require.NotContains(t, string(r.Body), "secret-project")

	// Roles inside a tenant: a viewer reads but cannot write.
	env.CreateTenant(t, "tenant-v", harness.Subject("vera", pb.Role_ROLE_VIEWER))
	vera := env.Jobs(t, env.Token("vera"))
	_, err = vera.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/tenant-v"})
	require.NoError(t, err)
	_, err = vera.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/tenant-v", Job: workerJob("tensorflow/tensorflow", 1)})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}
