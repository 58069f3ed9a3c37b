//go:build integration

package e2e

import (
	"context"
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/usage"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// The usage API (issue 44) over gRPC and REST, JSON and CSV, and who may
// read what: the ledger's rows are written straight into Postgres, so the
// figures are known to the second.
func TestUsageAPI(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "usage-a", harness.Subject("vera", pb.Role_ROLE_VIEWER))
	env.CreateTenant(t, "usage-b", harness.Subject("bob", pb.Role_ROLE_ADMIN))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	// usage-a: alice's vision job, 2 GPUs from 10:30 to 12:15 (3.5 GPU-hours);
	// bob's, 1 GPU, 11:00 to 11:20:36 (0.3433.. GPU-hours). usage-b: 8 GPUs, one hour.
	for _, iv := range []struct {
		tenant, creator, team string
		gpus                  int
		from, to              time.Duration
	}{
		{"usage-a", "alice", "vision", 2, 10*time.Hour + 30*time.Minute, 12*time.Hour + 15*time.Minute},
		{"usage-a", "bob", "nlp", 1, 11 * time.Hour, 11*time.Hour + 20*time.Minute + 36*time.Second},
		{"usage-b", "carol", "vision", 8, 9 * time.Hour, 10 * time.Hour},
	} {
		_, err := conn.Exec(ctx, `INSERT INTO usage_intervals (tenant_id, job_uid, creator, labels, gpus, cpu_millis, memory_bytes, pods, start_time, end_time, rolled_to)
			VALUES ($1, gen_random_uuid(), $2, jsonb_build_object('team', $3::text), $4, 4000, 8589934592, 1, $5, $6, $5)`,
			iv.tenant, iv.creator, iv.team, iv.gpus, day.Add(iv.from), day.Add(iv.to))
		require.NoError(t, err)
	}

	vera := pb.NewUsageServiceClient(env.Conn(t, env.Token("vera")))
	req := &pb.QueryUsageRequest{Parent: "tenants/usage-a", Start: timestamppb.New(day), End: timestamppb.New(day.Add(24 * time.Hour)),
		GroupBy: "creator,label:team", Step: "1h"}
	resp, err := vera.QueryUsage(ctx, req)
	require.NoError(t, err)
	var gpu float64
	for _, r := range resp.GetRows() {
		require.Equal(t, "usage-a", r.GetTenant())
		gpu += r.GetGpuHours()
	}
	require.InDelta(t, 3.5+(20*60+36)/3600.0, gpu, 1e-9)
	require.Len(t, resp.GetRows(), 4, "alice's 10:00, 11:00 and 12:00, bob's 11:00")
	require.Equal(t, "alice", resp.GetRows()[0].GetCreator())
	require.Equal(t, map[string]string{"team": "vision"}, resp.GetRows()[0].GetLabels())
	require.InDelta(t, 1.0, resp.GetRows()[0].GetGpuHours(), 1e-9, "half an hour of 2 GPUs")
	require.InDelta(t, 8*0.5, resp.GetRows()[0].GetMemoryGibHours(), 1e-9)

	// Tenants see their own tenant only; every tenant is the platform's.
	_, err = vera.QueryUsage(ctx, &pb.QueryUsageRequest{Parent: "tenants/usage-b"})
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = vera.QueryUsage(ctx, &pb.QueryUsageRequest{Parent: "tenants/-"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = vera.QueryUsage(ctx, &pb.QueryUsageRequest{Parent: "tenants/usage-a", Step: "5m"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "step")
	admin := pb.NewUsageServiceClient(env.Conn(t, env.AdminToken()))
	all, err := admin.QueryUsage(ctx, &pb.QueryUsageRequest{Parent: "tenants/-", Start: req.Start, End: req.End, Step: "1d"})
	require.NoError(t, err)
	require.Len(t, all.GetRows(), 2)
	require.Equal(t, "usage-a", all.GetRows()[0].GetTenant())
	require.Equal(t, "usage-b", all.GetRows()[1].GetTenant())
	require.InDelta(t, 8.0, all.GetRows()[1].GetGpuHours(), 1e-9)

	// REST: JSON and CSV say the same to the last digit.
	rest := env.REST(env.Token("vera"))
	path := "/v1/tenants/usage-a/usage?groupBy=creator,label:team&step=1h&start=" + day.Format(time.RFC3339) + "&end=" + day.Add(24*time.Hour).Format(time.RFC3339)
	js := rest.Do(t, http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, js.Status, string(js.Body))
	var fromJSON pb.QueryUsageResponse
	js.JSON(t, &fromJSON)
	require.Len(t, fromJSON.GetRows(), 4)
	c := rest.Do(t, http.MethodGet, path+"&format=csv", nil)
	require.Equal(t, http.StatusOK, c.Status, string(c.Body))
	require.Equal(t, "text/csv; charset=utf-8", c.Header.Get("Content-Type"))
	recs, err := csv.NewReader(strings.NewReader(string(c.Body))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"start", "end", "tenant", "creator", "label:team", "gpuHours", "cpuHours", "memoryGibHours", "gpuHoursUsed", "gpuHoursIdle"}, recs[0])
	require.Len(t, recs, 1+len(fromJSON.GetRows()))
	for i, r := range fromJSON.GetRows() {
		require.Equal(t, usage.Record(r, "creator,label:team"), recs[i+1])
		g, err := strconv.ParseFloat(recs[i+1][5], 64)
		require.NoError(t, err)
		require.Equal(t, r.GetGpuHours(), g, "CSV and JSON agree")
	}
	req2, err := http.NewRequest(http.MethodGet, env.HTTPURL+path, nil)
	require.NoError(t, err)
	req2.Header.Set("Authorization", "Bearer "+env.Token("vera"))
	req2.Header.Set("Accept", "text/csv, application/json;q=0.5")
	hr, err := http.DefaultClient.Do(req2)
	require.NoError(t, err)
	hr.Body.Close()
	require.Equal(t, "text/csv; charset=utf-8", hr.Header.Get("Content-Type"), "Accept: text/csv")
	denied := env.REST(env.Token("vera")).Do(t, http.MethodGet, "/v1/tenants/usage-b/usage?format=csv", nil)
	require.Equal(t, http.StatusNotFound, denied.Status)
	require.Contains(t, string(denied.Body), `"code"`, "errors stay JSON")
}

// A job that ran on the local cluster appears in the usage API and its
// CSV: from its admission to its end, its GPUs by the hour.
func TestUsageOfAFinishedJob(t *testing.T) {
	e := startScheduling(t, "usage", nil)
	name := e.submitTo(t, "counted", gpuJob(2, 1, 0, annot(cluster.AnnotationRunFor, "3s")))
	e.wait(t, name, 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	j := e.get(t, name)
	usageClient := pb.NewUsageServiceClient(e.Conn(t, e.Token("alice")))
	var resp *pb.QueryUsageResponse
	require.Eventually(t, func() bool {
		var err error
		resp, err = usageClient.QueryUsage(ctxT(t), &pb.QueryUsageRequest{Parent: harness.TenantName("usage"), GroupBy: "creator"})
		require.NoError(t, err)
		return len(resp.GetRows()) > 0
	}, 30*time.Second, 200*time.Millisecond)
	var gpuHours float64
	for _, r := range resp.GetRows() {
		require.Equal(t, "alice", r.GetCreator())
		gpuHours += r.GetGpuHours()
	}
	// 2 GPUs from admission to end: at least the 3 s the pods ran, at most
	// from its admission to when the test saw it finished.
	ran := j.GetStatus().GetCompletionTime().AsTime().Sub(j.GetStatus().GetStartTime().AsTime())
	require.GreaterOrEqual(t, gpuHours*3600, 2*3.0)
	require.InDelta(t, 2*ran.Seconds(), gpuHours*3600, 2*5.0, "within seconds of the job's own start and completion")
	c := e.REST(e.Token("alice")).Do(t, http.MethodGet, "/v1/tenants/usage/usage?groupBy=creator&format=csv", nil)
	require.Equal(t, http.StatusOK, c.Status, string(c.Body))
	recs, err := csv.NewReader(strings.NewReader(string(c.Body))).ReadAll()
	require.NoError(t, err)
	var fromCSV float64
	for _, r := range recs[1:] {
		g, err := strconv.ParseFloat(r[4], 64)
		require.NoError(t, err)
		fromCSV += g
	}
	require.InDelta(t, gpuHours, fromCSV, 1e-12, "the CSV agrees with the API")
}
