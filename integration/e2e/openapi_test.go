//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestOpenAPIDocsHealthMetrics: the served OpenAPI document is valid and
// covers every REST route of the protos; docs, health and metrics answer.
func TestOpenAPIDocsHealthMetrics(t *testing.T) {
	env := harness.Start(t, harness.Options{})

	code, body := get(t, env.HTTPURL+"/openapi.json")
	require.Equal(t, http.StatusOK, code)
	var doc2 openapi2.T
	require.NoError(t, json.Unmarshal([]byte(body), &doc2))
	doc3, err := openapi2conv.ToV3(&doc2)
	require.NoError(t, err)
	require.NoError(t, doc3.Validate(context.Background()), "the OpenAPI document must be valid")

	// Every google.api.http rule appears as a path and method.
	routes := map[string]bool{}
	for p, item := range doc2.Paths {
		for m := range item.Operations() {
			routes[strings.ToUpper(m)+" "+p] = true
		}
	}
	vars := regexp.MustCompile(`\{([a-z_.]+)=([^}]*)\}`)
	expand := func(path string) string {
		// {parent=tenants/*/jobs/*} → tenants/{tenant}/jobs/{job}
		return vars.ReplaceAllStringFunc(path, func(m string) string {
			pattern := vars.FindStringSubmatch(m)[2]
			parts := strings.Split(pattern, "/")
			for i := 1; i < len(parts); i += 2 {
				parts[i] = "{" + strings.TrimSuffix(parts[i-1], "s") + "}"
			}
			return strings.Join(parts, "/")
		})
	}
	n := 0
	for _, sd := range []protoreflect.ServiceDescriptor{
		pb.File_trainyard_v1_job_proto.Services().ByName("JobService"),
		pb.File_trainyard_v1_tenant_proto.Services().ByName("TenantService"),
	} {
		for i := 0; i < sd.Methods().Len(); i++ {
			md := sd.Methods().Get(i)
			rule := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
			var method, path string
			switch p := rule.GetPattern().(type) {
			case *annotations.HttpRule_Get:
				method, path = "GET", p.Get
			case *annotations.HttpRule_Post:
				method, path = "POST", p.Post
			case *annotations.HttpRule_Put:
				method, path = "PUT", p.Put
			case *annotations.HttpRule_Patch:
				method, path = "PATCH", p.Patch
			case *annotations.HttpRule_Delete:
				method, path = "DELETE", p.Delete
			}
			key := method + " " + expand(path)
			require.True(t, routes[key], "%s (%s) missing from /openapi.json; have %v", key, md.FullName(), routes)
			n++
		}
	}
	// Every method of both services was routed.
	require.Equal(t, len(pb.JobService_ServiceDesc.Methods)+len(pb.JobService_ServiceDesc.Streams)+
		len(pb.TenantService_ServiceDesc.Methods)+len(pb.TenantService_ServiceDesc.Streams), n)

	code, body = get(t, env.HTTPURL+"/docs")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "/docs/swagger-ui-bundle.js")
	require.NotContains(t, body, "https://", "the docs page must not load anything from a CDN")
	code, _ = get(t, env.HTTPURL+"/docs/swagger-ui-bundle.js")
	require.Equal(t, http.StatusOK, code)

	code, _ = get(t, env.HTTPURL+"/healthz")
	require.Equal(t, http.StatusOK, code)
	code, _ = get(t, env.HTTPURL+"/readyz")
	require.Equal(t, http.StatusOK, code)

	// One call, then its metric.
	env.REST(env.AdminToken()).Do(t, "GET", "/v1/tenants", nil)
	code, body = get(t, env.HTTPURL+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `grpc_server_handled_total{grpc_code="OK",grpc_method="ListTenants"`)
}
