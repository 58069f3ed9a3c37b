package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// The regression tests of issue 41's probe findings that need no more than
// the server with stub services; the rest are in integration/e2e/probe_test.go.

// Finding 1: a REST request without a valid token is refused before its
// body is read or decoded, whatever the body.
func TestProbeAuthenticatesBeforeTheBody(t *testing.T) {
	refuse := func(r *http.Request) error {
		if r.Header.Get("Authorization") != "Bearer good" {
			return status.Error(codes.Unauthenticated, "authentication required")
		}
		return nil
	}
	s := startServer(t, &stubJobs{}, func(c *Config) { c.AuthHTTP = refuse })
	yamlBody := "apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  args: [" + strings.Repeat("0,", 1_000_000) + "0]\n"
	// 401, not the 400 that decoding this body gives: it was not decoded.
	resp, got := do(t, s, "POST", "/v1/tenants/t/jobs:importTFJob", strings.NewReader(yamlBody), "Content-Type", "application/yaml")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, got)

	resp, got = do(t, s, "POST", "/v1/tenants", strings.NewReader(yamlBody), "Content-Type", "application/yaml")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, got)
	require.NotContains(t, got, "apiVersion")

	// With a token, the same body is refused by the value budget, naming it.
	resp, got = do(t, s, "POST", "/v1/tenants/t/jobs:importTFJob", strings.NewReader(yamlBody), "Content-Type", "application/yaml", "Authorization", "Bearer good")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, got)
	require.Contains(t, got, "more than 100000 values")
}

// Finding 5: a JSON body of millions of values is 400 naming the limit,
// not 429 with grpc-go's text.
func TestProbeManyValuesNameTheLimit(t *testing.T) {
	s := startServer(t, &stubJobs{})
	body := `{"spec":{"replicas":[{"retryableExitCodes":[` + strings.Repeat("0,", 1_900_000) + `0]}]}}`
	resp, got := do(t, s, "POST", "/v1/tenants/t/jobs", strings.NewReader(body))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, got)
	require.Contains(t, got, "the body has more than 500000 values (the server's limit)")
	require.NotContains(t, got, "larger than max")
}

// Findings 6 and 7: bodies are read strictly; errors name the field in
// plain words; a compressed body is 415.
func TestProbeStrictBodies(t *testing.T) {
	s := startServer(t, &stubJobs{})
	for _, tc := range []struct {
		name, body, contentType, want string
	}{
		{"not json", `{not json`, "", "the body is not valid JSON: unexpected character 'n' at byte 1"},
		{"trailing garbage", `{"spec":{}}garbage`, "", "unexpected data after the JSON value"},
		{"two objects", `{"spec":{}}{"spec":{}}`, "", "unexpected data after the JSON value"},
		{"duplicate key", `{"displayName":"a","displayName":"b"}`, "", "displayName: the key appears twice"},
		{"invalid UTF-8", "{\"displayName\":\"a\xffb\"}", "", "displayName: not valid UTF-8"},
		{"wrong type", `{"spec":{"priority":"high"}}`, "", `spec.priority: invalid value \"high\": expected an integer`},
		{"unknown field", `{"spec":{"nope":1}}`, "", "spec.nope: unknown field"},
		{"yaml duplicate key", "kind: TFJob\nkind: Pod\n", "application/yaml", "kind: the key appears twice"},
		{"yaml second document", "kind: TFJob\n---\nkind: Pod\n", "application/yaml", "more than one YAML document"},
		{"yaml huge int", "spec:\n  priority: 99999999999999999999999999\n", "application/yaml", "spec.priority: 99999999999999999999999999 is too large"},
		{"yaml nan", "spec:\n  priority: .nan\n", "application/yaml", "spec.priority: .nan is not a finite number"},
		{"yaml complex key", "? [a]\n: b\n", "application/yaml", "a key must be a plain value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := []string{}
			if tc.contentType != "" {
				h = append(h, "Content-Type", tc.contentType)
			}
			resp, got := do(t, s, "POST", "/v1/tenants/t/jobs", strings.NewReader(tc.body), h...)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, got)
			require.Contains(t, got, tc.want)
			require.NotContains(t, got, "proto:")
			require.NotContains(t, got, "json:")
			require.NotContains(t, got, "looking for")
		})
	}

	resp, got := do(t, s, "POST", "/v1/tenants/t/jobs", strings.NewReader(`{"spec":{}}`), "Content-Encoding", "gzip")
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, got)
	require.Contains(t, got, `Content-Encoding \"gzip\" is not supported`)
	resp, got = do(t, s, "POST", "/v1/tenants/t/jobs", strings.NewReader(`{"spec":{}}`), "Content-Encoding", "identity")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, got)
	require.Contains(t, got, "reached the handler")
}

// Finding 3: a call the database does not answer ends at the server's
// request timeout as UNAVAILABLE with Retry-After, over REST and gRPC; a
// caller's own shorter deadline stays DEADLINE_EXCEEDED.
func TestProbeRequestTimeout(t *testing.T) {
	s := startServer(t, &stubJobs{stall: true}, func(c *Config) { c.RequestTimeout = 200 * time.Millisecond })
	resp, got := do(t, s, "GET", "/v1/tenants/t/jobs/j1", nil)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, got)
	require.Equal(t, retryAfter, resp.Header.Get("Retry-After"))
	require.Contains(t, got, "could not answer within 200ms")

	conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	_, err = pb.NewJobServiceClient(conn).GetJob(context.Background(), &pb.GetJobRequest{Name: "tenants/t/jobs/j1"})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = pb.NewJobServiceClient(conn).GetJob(ctx, &pb.GetJobRequest{Name: "tenants/t/jobs/j1"})
	require.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
}

// rawBytes is a client codec that sends bytes as they are: a client that
// writes messages no protobuf decoder accepts.
type rawBytes struct{}

func (rawBytes) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawBytes) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawBytes) Name() string                       { return "proto" }

// nestedStruct is an ImportTFJobRequest whose tfjob Struct nests depth
// levels: {"a": {"a": …}}.
func nestedStruct(depth int) []byte {
	s := []byte{}
	for range depth {
		value := append([]byte{0x2a}, protowireLen(s)...) // Value.struct_value
		value = append(value, s...)
		entry := append([]byte{0x0a, 0x01, 'a', 0x12}, protowireLen(value)...)
		entry = append(entry, value...)
		s = append([]byte{0x0a}, protowireLen(entry)...) // Struct.fields
		s = append(s, entry...)
	}
	return append(append([]byte{0x12}, protowireLen(s)...), s...) // ImportTFJobRequest.tfjob
}

func protowireLen(b []byte) []byte {
	var out []byte
	n := uint64(len(b))
	for n >= 0x80 {
		out = append(out, byte(n)|0x80)
		n >>= 7
	}
	return append(out, byte(n))
}

// Finding 4: a request message that is not valid protobuf is
// INVALID_ARGUMENT with a plain reason, on unary calls and streams, not
// INTERNAL with grpc-go's text; the handler never sees it.
func TestProbeMalformedMessages(t *testing.T) {
	s := startServer(t, &stubJobs{})
	conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	for _, tc := range []struct {
		name, method string
		msg          []byte
		want         string
	}{
		{"wire garbage", "/trainyard.v1.JobService/GetJob", []byte{0xff, 0xff, 0xff, 0xff}, "not valid protobuf"},
		{"invalid UTF-8", "/trainyard.v1.JobService/CreateJob", []byte{0x0a, 0x02, 'a', 0xff}, "a string field is not valid UTF-8"},
		{"nested too deep", "/trainyard.v1.JobService/ImportTFJob", nestedStruct(150), "nested more than 200 levels deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out []byte
			err := conn.Invoke(context.Background(), tc.method, tc.msg, &out, grpc.ForceCodec(rawBytes{}))
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			require.Contains(t, status.Convert(err).Message(), tc.want)
			require.NotContains(t, status.Convert(err).Message(), "grpc:")
		})
	}

	desc := &grpc.StreamDesc{ServerStreams: true}
	cs, err := conn.NewStream(context.Background(), desc, "/trainyard.v1.JobService/WatchJob", grpc.ForceCodec(rawBytes{}))
	require.NoError(t, err)
	require.NoError(t, cs.SendMsg([]byte{0xff, 0xff, 0xff, 0xff}))
	require.NoError(t, cs.CloseSend())
	var out []byte
	err = cs.RecvMsg(&out)
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "not valid protobuf")

	// A well-formed message still reaches the handler.
	_, err = pb.NewJobServiceClient(conn).CreateJob(context.Background(), &pb.CreateJobRequest{Parent: "tenants/t"})
	require.Contains(t, status.Convert(err).Message(), "reached the handler")
}

// Finding 8: with the console at every other path, the server's own GET
// paths still answer other methods 405 with Allow, not the console.
func TestProbeMethodNotAllowedBesideTheConsole(t *testing.T) {
	console := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("console")) })
	s := startServer(t, &stubJobs{}, func(c *Config) { c.Console = console })
	for _, p := range []string{"/healthz", "/metrics", "/openapi.json", "/docs"} {
		resp, body := do(t, s, "POST", p, nil)
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s: %s", p, body)
		require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
	}
	resp, body := do(t, s, "GET", "/jobs", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "console", body)
}

// Finding 9: the gateway's gRPC server listens on no socket: it is served
// in memory, so no one can connect to it and claim an X-Forwarded-For
// (TestRequestIDAndClientAddress checks the public port ignores it).
func TestProbeGatewayHasNoListener(t *testing.T) {
	s := startServer(t, &stubJobs{})
	require.Equal(t, "bufconn", s.gwLn.Addr().Network())
	resp, body := do(t, s, "GET", "/v1/tenants/t/jobs/j", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
}

// Finding 6: query parameters that do not parse are 400 naming the
// parameter in plain words, not strconv's or time's text.
func TestProbeQueryParameters(t *testing.T) {
	s := startServer(t, &stubJobs{})
	for _, tc := range []struct{ path, want string }{
		{"/v1/tenants/t/jobs?pageSize=abc", `pageSize: invalid value \"abc\": expected an integer between`},
		{"/v1/auditRecords?startTime=garbage", `startTime: invalid value \"garbage\": expected an RFC 3339 time`},
		{"/v1/tenants/t/jobs?pageSize=1&pageSize=2", "pageSize: given more than once"},
	} {
		resp, got := do(t, s, "GET", tc.path, nil)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, got)
		require.Contains(t, got, tc.want)
		require.NotContains(t, got, "strconv")
		require.NotContains(t, got, "2006")
	}
}
