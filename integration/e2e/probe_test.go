//go:build integration

package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/pgtest"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// The regression tests of issue 41's probe findings that need the real
// server; the others are unit tests beside the code (internal/server's
// probe_test.go, internal/document, internal/kube, internal/store).

// rawBytes is a client codec that sends bytes as they are.
type rawBytes struct{}

func (rawBytes) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawBytes) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawBytes) Name() string                       { return "proto" }

func post(t *testing.T, url, contentType, token, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// Findings 1, 4, 5, 6, 7, 8: strangers are refused before their bodies are
// decoded; members' bad bodies and messages are 400 / INVALID_ARGUMENT
// naming the field or the limit; wrong methods are 405.
func TestProbeBodiesAndMessages(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	alice := env.Token("alice")

	flood := "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: j}\nspec:\n  args: [" + strings.Repeat("0,", 1_900_000) + "0]\n"
	start := time.Now()
	resp, body := post(t, env.HTTPURL+"/v1/tenants/acme/jobs:importTFJob", "application/yaml", "", flood)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
	resp, body = post(t, env.HTTPURL+"/v1/tenants", "application/yaml", "", flood)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
	require.NotContains(t, body, "apiVersion")
	resp, body = post(t, env.HTTPURL+"/v1/tenants/acme/jobs:importTFJob", "application/yaml", alice, flood)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "more than 100000 values")
	require.Less(t, time.Since(start), 10*time.Second, "three refusals of a 4 MB body are quick")

	zeros := `{"apiVersion":"kubeflow.org/v1","kind":"TFJob","spec":{"x":[` + strings.Repeat("0,", 1_900_000) + `0]}}`
	resp, body = post(t, env.HTTPURL+"/v1/tenants/acme/jobs:importTFJob", "application/json", "", zeros)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
	resp, body = post(t, env.HTTPURL+"/v1/tenants/acme/jobs:importTFJob", "application/json", alice, zeros)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.NotContains(t, body, "larger than max")

	rest := env.REST(alice)
	for _, tc := range []struct{ body, want string }{
		{`{not json`, "the body is not valid JSON"},
		{`{"job":{}}garbage`, "unexpected data after the JSON value"},
		{`{"job":{}}{"job":{}}`, "unexpected data after the JSON value"},
	} {
		r := rest.Do(t, "POST", "/v1/tenants/acme/jobs", tc.body)
		require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
		require.Contains(t, string(r.Body), tc.want)
	}
	r := rest.Do(t, "GET", "/v1/tenants/acme/jobs?pageSize=abc", nil)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "pageSize: invalid value")
	resp, body = post(t, env.HTTPURL+"/v1/tenants/acme/jobs:importTFJob", "application/yaml", alice, "kind: TFJob\n---\nkind: Pod\n")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "more than one YAML document")

	r = rest.Do(t, "GET", "/v1/tenants/acme/jobs/j1:cancel", nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.Status, string(r.Body))
	require.Equal(t, "POST", r.Header.Get("Allow"))

	conn, err := grpc.NewClient(env.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	var out []byte
	garbage := []byte{0xff, 0xff, 0xff, 0xff}
	err = conn.Invoke(ctxT(t), "/trainyard.v1.JobService/GetJob", garbage, &out, grpc.ForceCodec(rawBytes{}))
	require.Equal(t, codes.Unauthenticated, status.Code(err), "a stranger's message is not decoded: %v", err)
	authed := harness.Dial(t, env.GRPCAddr, alice)
	err = authed.Invoke(ctxT(t), "/trainyard.v1.JobService/GetJob", garbage, &out, grpc.ForceCodec(rawBytes{}))
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.NotContains(t, status.Convert(err).Message(), "grpc:")
	require.NotContains(t, env.Server.Logs(), "cannot parse invalid wire-format data")
}

// Finding 2: a database that refuses connections (ALLOW_CONNECTIONS false,
// its backends terminated) is 503 with Retry-After and UNAVAILABLE, and an
// open watch ends UNAVAILABLE, which clients reopen.
func TestProbeDatabaseRefusesConnections(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	alice := env.Token("alice")
	jobs := env.Jobs(t, alice)
	watchCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	watch, err := jobs.WatchJobs(watchCtx, &pb.WatchJobsRequest{Parent: "tenants/acme"})
	require.NoError(t, err)

	name := env.DatabaseURL[strings.LastIndex(env.DatabaseURL, "/")+1:]
	if i := strings.IndexByte(name, '?'); i >= 0 {
		name = name[:i]
	}
	admin := pgtest.URLFor(env.DatabaseURL, "postgres")
	require.NoError(t, pgtest.Exec(ctxT(t), admin, `ALTER DATABASE "`+name+`" ALLOW_CONNECTIONS false`))
	t.Cleanup(func() {
		_ = pgtest.Exec(context.Background(), admin, `ALTER DATABASE "`+name+`" ALLOW_CONNECTIONS true`)
	})
	require.NoError(t, pgtest.Exec(ctxT(t), admin, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '`+name+`'`))

	rest := env.REST(alice)
	require.Eventually(t, func() bool {
		r := rest.Do(t, "GET", "/v1/tenants/acme/jobs/j1", nil)
		return r.Status == http.StatusServiceUnavailable && r.Header.Get("Retry-After") != ""
	}, 30*time.Second, 100*time.Millisecond, "503 with Retry-After, never 500")
	_, err = jobs.GetJob(ctxT(t), &pb.GetJobRequest{Name: "tenants/acme/jobs/j1"})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	for {
		if _, err = watch.Recv(); err != nil {
			break
		}
	}
	require.Equal(t, codes.Unavailable, status.Code(err), "the watch ends UNAVAILABLE: %v", err)
	require.NotContains(t, env.Server.Logs(), "internal error")

	require.NoError(t, pgtest.Exec(ctxT(t), admin, `ALTER DATABASE "`+name+`" ALLOW_CONNECTIONS true`))
	require.Eventually(t, func() bool {
		_, err := jobs.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme"})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond)
}

// Finding 3: a database that accepts connections but answers nothing
// (a stalled proxy) does not hang calls: they end at the server's request
// timeout, UNAVAILABLE / 503 with Retry-After, and recover with it.
func TestProbeStalledDatabase(t *testing.T) {
	env := harness.Start(t, harness.Options{DatabaseProxy: true, ServeArgs: []string{"--request-timeout", "2s"}})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	alice := env.Token("alice")
	rest := env.REST(alice)
	jobs := env.Jobs(t, alice)

	env.DBProxy.SetStalled(true)
	start := time.Now()
	r := rest.Do(t, "GET", "/v1/tenants/acme/jobs/j1", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.Status, string(r.Body))
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Less(t, time.Since(start), 15*time.Second)
	_, err := jobs.GetJob(ctxT(t), &pb.GetJobRequest{Name: "tenants/acme/jobs/j1"})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	// A watch has no deadline; its tenant lookup is bounded all the same.
	start = time.Now()
	watch, err := jobs.WatchJobs(context.Background(), &pb.WatchJobsRequest{Parent: "tenants/acme"})
	require.NoError(t, err)
	_, err = watch.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.Less(t, time.Since(start), 30*time.Second)

	env.DBProxy.SetStalled(false)
	require.Eventually(t, func() bool {
		_, err := jobs.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme"})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond)
}
