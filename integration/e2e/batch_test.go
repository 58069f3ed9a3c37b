//go:build integration

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func batchBody(ids ...string) string {
	items := make([]string, len(ids))
	for i, id := range ids {
		items[i] = fmt.Sprintf(`{"jobId":%q,"requestId":"req-%s","job":{"spec":{"replicas":[
			{"type":"REPLICA_TYPE_WORKER","image":"tensorflow/tensorflow:2.16.1"}]}}}`, id, id)
	}
	return `{"requests":[` + strings.Join(items, ",") + `]}`
}

// BatchCreateJobs over REST: all or nothing, idempotent per item, errors
// naming the item; and the Python client's submit_many over gRPC.
func TestBatchCreateJobsOverRESTAndPython(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Group("ml-team", pb.Role_ROLE_EDITOR))
	alice := env.Token("alice", "ml-team")
	rest := env.REST(alice)

	r := rest.Do(t, "POST", "/v1/tenants/acme/jobs:batchCreate", batchBody("b0", "b1", "b2"))
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var first pb.BatchCreateJobsResponse
	r.JSON(t, &first)
	require.Len(t, first.GetJobs(), 3)
	for i, j := range first.GetJobs() {
		require.Equal(t, fmt.Sprintf("tenants/acme/jobs/b%d", i), j.GetName())
		require.Equal(t, "alice", j.GetCreator())
		require.Equal(t, pb.JobState_JOB_STATE_QUEUED, j.GetStatus().GetState())
	}

	// A retry with one more item: the three come back, one is new.
	r = rest.Do(t, "POST", "/v1/tenants/acme/jobs:batchCreate", batchBody("b0", "b1", "b2", "b3"))
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var again pb.BatchCreateJobsResponse
	r.JSON(t, &again)
	for i := range 3 {
		require.Equal(t, first.GetJobs()[i].GetUid(), again.GetJobs()[i].GetUid())
	}

	// A taken id fails the whole batch, naming the item.
	r = rest.Do(t, "POST", "/v1/tenants/acme/jobs:batchCreate", strings.ReplaceAll(batchBody("c0", "b1"), "req-b1", "req-new"))
	require.Equal(t, http.StatusConflict, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "requests[1].jobId")
	// Every invalid item at once, by index.
	r = rest.Do(t, "POST", "/v1/tenants/acme/jobs:batchCreate", strings.Replace(batchBody("c0", "C_1", "c2"),
		"tensorflow/tensorflow:2.16.1", "", 1))
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), `"requests[0].spec.replicas[0].image"`)
	require.Contains(t, string(r.Body), `"requests[1].jobId"`)
	list, err := env.Jobs(t, alice).ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme"})
	require.NoError(t, err)
	require.Len(t, list.GetJobs(), 4, "failed batches wrote nothing")

	// The Python client: a directory of job files, then the same call again.
	dir := t.TempDir()
	for i := range 3 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%d.yaml", i)),
			fmt.Appendf(nil, "name: py-%d\nspec: {replicas: [{type: worker, image: tensorflow/tensorflow:2.16.1}]}\n", i), 0o600))
	}
	script := `import sys, trainyard
ty = trainyard.Client()
a = ty.submit_many(sys.argv[1], request_id="py")
b = ty.submit_many(sys.argv[1], request_id="py")
assert [j.uid for j in a] == [j.uid for j in b], "idempotent"
print(" ".join(j.name for j in a))
`
	cmd := exec.Command(python(t), "-c", script, dir)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+clientDir(), "TYCTL_SERVER="+env.GRPCAddr, "TYCTL_INSECURE=true",
		"TYCTL_TENANT=acme", "TYCTL_TOKEN="+alice, "TYCTL_CONFIG="+filepath.Join(t.TempDir(), "config.yaml"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "tenants/acme/jobs/py-0 tenants/acme/jobs/py-1 tenants/acme/jobs/py-2\n", string(out))
}

// ParseJobFile over REST (jobs:parse): the server reads a job file of
// several documents by the lenient rules every client shares, a viewer may
// ask, problems name the document, and nothing is created.
func TestParseJobFileOverREST(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Subject("vera", pb.Role_ROLE_VIEWER))
	rest := env.REST(env.Token("vera"))

	file := "name: a\nspec:\n  replicas: [{type: worker, count: 2, image: tf, resources: {cpu: 2}}]\n---\n# notes\n---\n" +
		`{"spec": {"replicas": [{"type": "chief", "image": "tf"}], "runPolicy": {"backoff_limit": 1}}}` + "\n"
	body := fmt.Sprintf(`{"content": %q}`, file)
	r := rest.Do(t, "POST", "/v1/tenants/acme/jobs:parse", body)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var parsed pb.ParseJobFileResponse
	r.JSON(t, &parsed)
	require.Len(t, parsed.GetJobs(), 2)
	require.Equal(t, "a", parsed.GetJobs()[0].GetName())
	require.Equal(t, pb.ReplicaType_REPLICA_TYPE_WORKER, parsed.GetJobs()[0].GetSpec().GetReplicas()[0].GetType())
	require.Equal(t, "2", parsed.GetJobs()[0].GetSpec().GetReplicas()[0].GetResources().GetCpu())
	require.Equal(t, pb.ReplicaType_REPLICA_TYPE_CHIEF, parsed.GetJobs()[1].GetSpec().GetReplicas()[0].GetType())

	r = rest.Do(t, "POST", "/v1/tenants/acme/jobs:parse", fmt.Sprintf(`{"content": %q, "filename": "sweep.yaml"}`,
		strings.Replace(file, "image: tf,", "imagee: tf,", 1)))
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), `"sweep.yaml: documents[0].spec.replicas[0].imagee: unknown field (did you mean image?)`)
	require.Contains(t, string(r.Body), `"documents[0].spec.replicas[0].imagee"`)

	list, err := env.Jobs(t, env.Token("vera")).ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme"})
	require.NoError(t, err)
	require.Empty(t, list.GetJobs(), "parsing creates nothing")
}
