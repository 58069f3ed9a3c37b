package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// bearer sends a token with every call. Loopback tests run without TLS.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	if b == "" {
		return nil, nil
	}
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }

// Conn returns a gRPC connection that authenticates with token ("" sends none).
func (e *Env) Conn(t testing.TB, token string) *grpc.ClientConn {
	return Dial(t, e.GRPCAddr, token)
}

// Dial returns a gRPC connection to addr (one of several API servers) that
// authenticates with token, closed when the test ends; opts are added.
func Dial(t testing.TB, addr, token string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(bearer(token)),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Jobs returns a JobService client authenticating with token.
func (e *Env) Jobs(t testing.TB, token string) pb.JobServiceClient {
	return pb.NewJobServiceClient(e.Conn(t, token))
}

// Tenants returns a TenantService client authenticating with token.
func (e *Env) Tenants(t testing.TB, token string) pb.TenantServiceClient {
	return pb.NewTenantServiceClient(e.Conn(t, token))
}

// Group and Subject build tenant members.
func Group(g string, r pb.Role) *pb.Member {
	return &pb.Member{Principal: &pb.Member_Group{Group: g}, Role: r}
}

func Subject(s string, r pb.Role) *pb.Member {
	return &pb.Member{Principal: &pb.Member_Subject{Subject: s}, Role: r}
}

// CreateTenant creates a tenant as a platform admin.
func (e *Env) CreateTenant(t testing.TB, id string, members ...*pb.Member) *pb.Tenant {
	t.Helper()
	return e.CreateTenantWith(t, id, &pb.Tenant{Members: members})
}

// CreateTenantWith creates a tenant with the given fields as a platform admin.
func (e *Env) CreateTenantWith(t testing.TB, id string, tn *pb.Tenant) *pb.Tenant {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := e.Tenants(t, e.AdminToken()).CreateTenant(ctx, &pb.CreateTenantRequest{TenantId: id, Tenant: tn})
	if err != nil {
		t.Fatalf("create tenant %s: %v", id, err)
	}
	return out
}

// WaitJob polls a job until cond holds and returns it.
func WaitJob(t testing.TB, c pb.JobServiceClient, name string, timeout time.Duration, cond func(*pb.Job) bool) *pb.Job {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *pb.Job
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		j, err := c.GetJob(ctx, &pb.GetJobRequest{Name: name})
		cancel()
		if err == nil {
			last = j
			if cond(j) {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: condition not met within %s (last error %v)\nlast state: %s", name, timeout, err, protojson.Format(last))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// InState is a WaitJob condition.
func InState(states ...pb.JobState) func(*pb.Job) bool {
	return func(j *pb.Job) bool {
		for _, s := range states {
			if j.GetStatus().GetState() == s {
				return true
			}
		}
		return false
	}
}

// REST is a small JSON client for the REST gateway.
type REST struct {
	base  string
	token string
}

// REST returns a REST client authenticating with token ("" sends none).
func (e *Env) REST(token string) *REST { return &REST{base: e.HTTPURL, token: token} }

// Response is a REST reply.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v (a proto message or anything encoding/json takes).
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	var err error
	if m, ok := v.(proto.Message); ok {
		err = protojson.Unmarshal(r.Body, m)
	} else {
		err = json.Unmarshal(r.Body, v)
	}
	if err != nil {
		t.Fatalf("decoding %s: %v", r.Body, err)
	}
}

// Do sends method path with body (nil, a []byte/string, a proto message or
// anything encoding/json takes).
func (c *REST) Do(t testing.TB, method, path string, body any) Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	case proto.Message:
		data, err := protojson.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

func randomID(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}

// Name helpers.
func JobName(tenant, job string) string { return fmt.Sprintf("tenants/%s/jobs/%s", tenant, job) }
func TenantName(tenant string) string   { return "tenants/" + tenant }
