//go:build integration

package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Bad bytes and bad requests at the boundary (issue 9, defects 2, 4, 5, 7):
// each is a 4xx naming what is wrong, never a 500.

// fieldsOf returns the fields of a REST error's BadRequest details.
func fieldsOf(t *testing.T, r harness.Response) []string {
	t.Helper()
	var body struct {
		Details []struct {
			FieldViolations []struct{ Field string }
		}
	}
	require.NoError(t, json.Unmarshal(r.Body, &body), string(r.Body))
	var out []string
	for _, d := range body.Details {
		for _, v := range d.FieldViolations {
			out = append(out, v.Field)
		}
	}
	return out
}

func TestNULBytesAreRefusedAtTheBoundary(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_ADMIN))
	alice := env.REST(env.Token("alice"))
	admin := env.REST(env.AdminToken())

	// A malformed id in a path names nothing: 404, as other bad ids get.
	for _, path := range []string{"/v1/tenants/acme/jobs/a%00b", "/v1/tenants/acme/jobs/a%00b/events"} {
		r := alice.Do(t, "GET", path, nil)
		require.Equal(t, http.StatusNotFound, r.Status, "%s: %s", path, r.Body)
	}
	r := alice.Do(t, "DELETE", "/v1/tenants/acme/secrets/a%00b", nil)
	require.Equal(t, http.StatusNotFound, r.Status, string(r.Body))
	_, err := env.Jobs(t, env.Token("alice")).GetJob(ctxT(t), &pb.GetJobRequest{Name: "tenants/acme/jobs/a\x00b"})
	require.Equal(t, codes.NotFound, status.Code(err))

	// Anywhere else: 400 naming the field.
	worker := `{"type":"REPLICA_TYPE_WORKER","image":"tensorflow/tensorflow:2.16.1"`
	for body, field := range map[string]string{
		`{"displayName":"a\u0000b","spec":{"replicas":[` + worker + `}]}}`:                                  "job.displayName",
		`{"spec":{"replicas":[` + worker + `,"command":["python","a\u0000"]}]}}`:                            "job.spec.replicas[0].command[1]",
		`{"spec":{"replicas":[` + worker + `,"env":[{"name":"A","value":"\u0000"}]}]}}`:                     "job.spec.replicas[0].env[0].value",
		`{"spec":{"replicas":[` + worker + `,"podAnnotations":{"sim.trainyard.dev/run-for":"1\u0000s"}}]}}`: "job.spec.replicas[0].podAnnotations",
	} {
		r := alice.Do(t, "POST", "/v1/tenants/acme/jobs", body)
		require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
		require.Contains(t, fieldsOf(t, r), field, string(r.Body))
	}
	r = alice.Do(t, "GET", `/v1/tenants/acme/jobs?filter=labels.team%3D%22a%00b%22`, nil)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Equal(t, []string{"filter"}, fieldsOf(t, r))
	r = admin.Do(t, "POST", "/v1/tenants?tenantId=beta", `{"members":[{"subject":"a\u0000b","role":"ROLE_VIEWER"}]}`)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Equal(t, []string{"tenant.members[0].subject"}, fieldsOf(t, r))
	r = admin.Do(t, "PATCH", "/v1/tenants/acme?updateMask=displayName", `{"displayName":"\u0000"}`)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Equal(t, []string{"tenant.displayName"}, fieldsOf(t, r))
}

func TestInvalidUTF8InPathOrQueryIs400(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	// Authentication comes first (issue 41, finding 1): a stranger is 401.
	r := env.REST("").Do(t, "GET", "/v1/tenants/t/jobs/a%ffb", nil)
	require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
	anon := env.REST(env.Token("alice"))
	r = anon.Do(t, "GET", "/v1/tenants/t/jobs/a%ffb", nil)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Equal(t, []string{"name"}, fieldsOf(t, r))
	require.NotContains(t, string(r.Body), "marshal")
	r = anon.Do(t, "GET", "/v1/tenants/t/jobs?pageToken=%ff", nil)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Equal(t, []string{"pageToken"}, fieldsOf(t, r))
}

func TestBodyThatExpandsPastTheMessageLimitIs400(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	codes := strings.Repeat("-1,", (3900<<10)/3)
	body := `{"spec":{"replicas":[{"type":"REPLICA_TYPE_WORKER","image":"tensorflow/tensorflow:2.16.1",` +
		`"restartPolicy":"RESTART_POLICY_EXIT_CODE","retryableExitCodes":[` + codes + `-1]}]}}`
	r := env.REST(env.Token("alice")).Do(t, "POST", "/v1/tenants/acme/jobs", body)
	require.Equal(t, http.StatusBadRequest, r.Status, "%.300s", r.Body)
	// The body's budget of values (issue 41, finding 5) refuses it before
	// it becomes protobuf, naming the limit.
	require.Contains(t, string(r.Body), "the body has more than 500000 values (the server's limit)")
	require.Less(t, len(r.Body), 64<<10, "the answer is not larger than the question")
}

func TestOtherMethodsAre405WithAllow(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	rest := env.REST(env.AdminToken())
	for _, m := range []string{"PUT", "OPTIONS", "TRACE"} {
		r := rest.Do(t, m, "/v1/tenants/acme/jobs/j", nil)
		require.Equal(t, http.StatusMethodNotAllowed, r.Status, m)
		require.Equal(t, "DELETE, GET", r.Header.Get("Allow"), m)
	}
}

// A database outage is UNAVAILABLE (503 with Retry-After over REST) for
// every RPC, and service resumes when the database is back.
func TestDatabaseOutageIsUnavailable(t *testing.T) {
	env := harness.Start(t, harness.Options{DatabaseProxy: true})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	alice := env.Token("alice")
	rest := env.REST(alice)
	jobs := env.Jobs(t, alice)

	env.DBProxy.SetDown(true)
	r := rest.Do(t, "GET", "/v1/tenants/acme/jobs", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.Status, string(r.Body))
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.NotContains(t, string(r.Body), "127.0.0.1")
	_, err := jobs.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme"})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	_, err = env.Tenants(t, alice).ListTenants(ctxT(t), &pb.ListTenantsRequest{})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)

	env.DBProxy.SetDown(false)
	require.Eventually(t, func() bool {
		_, err := jobs.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme"})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond)
}
