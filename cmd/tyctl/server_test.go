package main

import (
	"bytes"
	"context"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/trainyard/trainyard/internal/api"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// A real gRPC server on 127.0.0.1 with fake JobService and TenantService
// implementations: the tests run tyctl's cobra root with arguments and check
// what the server received (requests and metadata) and what tyctl printed.

// call is one request the fake server received.
type call struct {
	method    string
	req       proto.Message
	auth      []string // authorization metadata
	userAgent string
}

type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) record(ctx context.Context, method string, req proto.Message) int {
	md, _ := metadata.FromIncomingContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{method: method, req: proto.Clone(req), auth: md.Get("authorization"), userAgent: strings.Join(md.Get("user-agent"), " ")})
	return len(r.calls)
}

func (r *recorder) methodCalls(method string) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []call
	for _, c := range r.calls {
		if c.method == method {
			out = append(out, c)
		}
	}
	return out
}

type fakeJobs struct {
	pb.UnimplementedJobServiceServer
	*recorder
	mu         sync.Mutex
	createErrs []error // returned, in order, before CreateJob succeeds
	jobs       []*pb.Job
	pageSize   int
	watch      []watchScript // one per WatchJob call
	watchAll   []watchScript // one per WatchJobs call
	positions  []int64       // ListJobs' watchAfterEventId, one per call (then 0)
	logs       []string
}

// watchScript is what one WatchJob call sends, then how it ends (nil: EOF).
type watchScript struct {
	send []*pb.WatchJobResponse
	end  error
}

func (f *fakeJobs) CreateJob(ctx context.Context, req *pb.CreateJobRequest) (*pb.Job, error) {
	f.record(ctx, "CreateJob", req)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.createErrs) > 0 {
		err := f.createErrs[0]
		f.createErrs = f.createErrs[1:]
		return nil, err
	}
	j := proto.Clone(req.GetJob()).(*pb.Job)
	j.Name = req.GetParent() + "/jobs/" + req.GetJobId()
	j.Status = &pb.JobStatus{State: pb.JobState_JOB_STATE_QUEUED}
	return j, nil
}

// ParseJobFile is the real handler: it needs no store, and tyctl's job
// files are read by the server's rules.
func (f *fakeJobs) ParseJobFile(ctx context.Context, req *pb.ParseJobFileRequest) (*pb.ParseJobFileResponse, error) {
	f.record(ctx, "ParseJobFile", req)
	return api.NewJobServer(api.Deps{}).ParseJobFile(ctx, req) // its errors are statuses already
}

func (f *fakeJobs) GetJob(ctx context.Context, req *pb.GetJobRequest) (*pb.Job, error) {
	f.record(ctx, "GetJob", req)
	for _, j := range f.jobs {
		if j.GetName() == req.GetName() {
			return j, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "job %q not found", lastSegment(req.GetName()))
}

// ListJobs pages through f.jobs; the token is the index to start at.
func (f *fakeJobs) ListJobs(ctx context.Context, req *pb.ListJobsRequest) (*pb.ListJobsResponse, error) {
	n := len(f.methodCalls("ListJobs"))
	f.record(ctx, "ListJobs", req)
	start := 0
	if tok := req.GetPageToken(); tok != "" {
		start = int(tok[0] - '0')
	}
	end := min(start+f.pageSize, len(f.jobs))
	resp := &pb.ListJobsResponse{Jobs: f.jobs[start:end]}
	if n < len(f.positions) {
		resp.WatchAfterEventId = f.positions[n]
	}
	if end < len(f.jobs) {
		resp.NextPageToken = string(rune('0' + end))
	}
	return resp, nil
}

func (f *fakeJobs) CancelJob(ctx context.Context, req *pb.CancelJobRequest) (*pb.Job, error) {
	f.record(ctx, "CancelJob", req)
	return &pb.Job{Name: req.GetName(), Status: &pb.JobStatus{State: pb.JobState_JOB_STATE_RUNNING, CancelRequested: true}}, nil
}

func (f *fakeJobs) SuspendJob(ctx context.Context, req *pb.SuspendJobRequest) (*pb.Job, error) {
	f.record(ctx, "SuspendJob", req)
	return &pb.Job{Name: req.GetName(), Status: &pb.JobStatus{State: pb.JobState_JOB_STATE_RUNNING, SuspendRequested: true}}, nil
}

func (f *fakeJobs) ResumeJob(ctx context.Context, req *pb.ResumeJobRequest) (*pb.Job, error) {
	f.record(ctx, "ResumeJob", req)
	return &pb.Job{Name: req.GetName(), Status: &pb.JobStatus{State: pb.JobState_JOB_STATE_QUEUED}}, nil
}

func (f *fakeJobs) WatchJob(req *pb.WatchJobRequest, stream grpc.ServerStreamingServer[pb.WatchJobResponse]) error {
	n := len(f.methodCalls("WatchJob"))
	f.record(stream.Context(), "WatchJob", req)
	return playWatch(f.watch, n, stream)
}

func (f *fakeJobs) WatchJobs(req *pb.WatchJobsRequest, stream grpc.ServerStreamingServer[pb.WatchJobResponse]) error {
	n := len(f.methodCalls("WatchJobs"))
	f.record(stream.Context(), "WatchJobs", req)
	return playWatch(f.watchAll, n, stream)
}

// playWatch sends the n-th script's messages and ends as it says.
func playWatch(scripts []watchScript, n int, stream grpc.ServerStreamingServer[pb.WatchJobResponse]) error {
	if n >= len(scripts) {
		return status.Error(codes.Internal, "no more watch scripts")
	}
	for _, m := range scripts[n].send {
		if err := stream.Send(m); err != nil {
			return err
		}
	}
	return scripts[n].end
}

func (f *fakeJobs) GetJobLogs(req *pb.GetJobLogsRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	f.record(stream.Context(), "GetJobLogs", req)
	for _, l := range f.logs {
		if err := stream.Send(&httpbody.HttpBody{ContentType: "text/plain; charset=utf-8", Data: []byte(l)}); err != nil {
			return err
		}
	}
	return nil
}

type fakeTenants struct {
	pb.UnimplementedTenantServiceServer
	*recorder
}

func (f *fakeTenants) CreateTenant(ctx context.Context, req *pb.CreateTenantRequest) (*pb.Tenant, error) {
	f.record(ctx, "CreateTenant", req)
	t := proto.Clone(req.GetTenant()).(*pb.Tenant)
	t.Name, t.Namespace, t.State = "tenants/"+req.GetTenantId(), "ty-"+req.GetTenantId(), pb.TenantState_TENANT_STATE_ACTIVE
	return t, nil
}

func (f *fakeTenants) UpdateTenant(ctx context.Context, req *pb.UpdateTenantRequest) (*pb.Tenant, error) {
	f.record(ctx, "UpdateTenant", req)
	t := proto.Clone(req.GetTenant()).(*pb.Tenant)
	t.SharingStatus = &pb.SharingStatus{BudgetUsedGpuHours: 1500, BudgetRemainingGpuHours: 500}
	return t, nil
}

func (f *fakeTenants) PutCohort(ctx context.Context, req *pb.PutCohortRequest) (*pb.Cohort, error) {
	f.record(ctx, "PutCohort", req)
	c := proto.Clone(req.GetCohort()).(*pb.Cohort)
	c.Tenants = []string{"tenants/team-a", "tenants/team-b"}
	return c, nil
}

func (f *fakeTenants) ListCohorts(ctx context.Context, req *pb.ListCohortsRequest) (*pb.ListCohortsResponse, error) {
	f.record(ctx, "ListCohorts", req)
	return &pb.ListCohortsResponse{Cohorts: []*pb.Cohort{
		{Name: "cohorts/lab", NominalQuota: &pb.Quota{Gpu: 16}, GpuTypes: map[string]int64{"A100": 16}, Tenants: []string{"tenants/team-a"}},
		{Name: "cohorts/other", Tenants: []string{"tenants/team-c"}},
	}}, nil
}

func (f *fakeTenants) PutSecret(ctx context.Context, req *pb.PutSecretRequest) (*pb.Secret, error) {
	f.record(ctx, "PutSecret", req)
	s := &pb.Secret{Name: req.GetSecret().GetName()}
	for k := range req.GetSecret().GetData() {
		s.Keys = append(s.Keys, k)
	}
	slices.Sort(s.Keys)
	return s, nil
}

type fixture struct {
	addr    string
	rec     *recorder
	jobs    *fakeJobs
	tenants *fakeTenants
	audit   *fakeAudit
}

func startFake(t *testing.T) *fixture {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rec := &recorder{}
	f := &fixture{addr: lis.Addr().String(), rec: rec, jobs: &fakeJobs{recorder: rec, pageSize: 50}, tenants: &fakeTenants{recorder: rec},
		audit: &fakeAudit{recorder: rec}}
	s := grpc.NewServer()
	pb.RegisterJobServiceServer(s, f.jobs)
	pb.RegisterTenantServiceServer(s, f.tenants)
	pb.RegisterAuditServiceServer(s, f.audit)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return f
}

type result struct {
	stdout, stderr string
	code           int
}

// tyctl runs the CLI against the fake server with env as its environment.
func (f *fixture) tyctl(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if _, ok := env[envConfig]; !ok {
		// Never the config file of whoever runs the tests.
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env[envConfig] = filepath.Join(t.TempDir(), "config.yaml")
	}
	a := newApp(strings.NewReader(""), &stdout, &stderr, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	a.now = func() time.Time { return testNow }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := run(ctx, append([]string{"--server", f.addr, "--insecure"}, args...), a)
	return result{stdout.String(), stderr.String(), code}
}

const testToken = "tok-3f9a1c7e5b"

func TestSubmitSendsJobTokenAndRequestID(t *testing.T) {
	f := startFake(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600))

	r := f.tyctl(t, nil, "--token-file", tokenFile, "--tenant", "ml", "jobs", "submit", "-f", "examples/mnist.yaml", "--id", "mnist-1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "job mnist-1 submitted (QUEUED)\n", r.stdout)

	calls := f.rec.methodCalls("CreateJob")
	require.Len(t, calls, 1)
	c := calls[0]
	require.Equal(t, []string{"Bearer " + testToken}, c.auth)
	require.Contains(t, c.userAgent, "tyctl/")
	req := c.req.(*pb.CreateJobRequest)
	require.Equal(t, "tenants/ml", req.GetParent())
	require.Equal(t, "mnist-1", req.GetJobId())
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, req.GetRequestId())
	require.Equal(t, "request id "+req.GetRequestId()+" (to retry safely: --request-id "+req.GetRequestId()+")\n", r.stderr)
	require.Equal(t, pb.ReplicaType_REPLICA_TYPE_WORKER, req.GetJob().GetSpec().GetReplicas()[1].GetType())
	require.Equal(t, pb.RestartPolicy_RESTART_POLICY_EXIT_CODE, req.GetJob().GetSpec().GetReplicas()[1].GetRestartPolicy())
	require.NotContains(t, r.stdout+r.stderr, testToken)
}

func TestSubmitRetriesUnavailableWithTheSameRequestID(t *testing.T) {
	f := startFake(t)
	f.jobs.createErrs = []error{status.Error(codes.Unavailable, "server restarting")}
	env := map[string]string{envToken: testToken, envTenant: "ml"}
	r := f.tyctl(t, env, "jobs", "submit", "-f", "examples/mnist.yaml", "--request-id", "retry-1", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr, "a given request id is not repeated back")
	require.Contains(t, r.stdout, `"name": "tenants/ml/jobs/"`)

	calls := f.rec.methodCalls("CreateJob")
	require.Len(t, calls, 2)
	for _, c := range calls {
		require.Equal(t, "retry-1", c.req.(*pb.CreateJobRequest).GetRequestId())
		require.Equal(t, []string{"Bearer " + testToken}, c.auth, "token from TYCTL_TOKEN")
	}
}

func TestSubmitRejectedByServerPrintsEveryViolation(t *testing.T) {
	f := startFake(t)
	st, err := status.New(codes.InvalidArgument, "spec.replicas[1].image: is required (and more, see details)").
		WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "spec.replicas[1].image", Description: "is required"},
			{Field: "jobId", Description: `"Mnist" is not a DNS-1035 label`},
		}})
	require.NoError(t, err)
	f.jobs.createErrs = []error{st.Err()}

	r := f.tyctl(t, nil, "--tenant", "ml", "--token", testToken, "jobs", "submit", "-f", "examples/mnist.yaml", "--id", "Mnist", "--request-id", "r1")
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	require.Equal(t, "tyctl: InvalidArgument: spec.replicas[1].image: is required (and more, see details)\n"+
		"  spec.replicas[1].image: is required\n"+
		"  jobId: \"Mnist\" is not a DNS-1035 label\n", r.stderr)
}

func TestSubmitBadFileCreatesNothing(t *testing.T) {
	f := startFake(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("spec:\n  replicas:\n  - type: WORKERS\n    image: tf\n"), 0o600))
	r := f.tyctl(t, nil, "--tenant", "ml", "jobs", "submit", "-f", bad)
	require.Equal(t, 1, r.code)
	require.Equal(t, "tyctl: InvalidArgument: "+bad+": spec.replicas[0].type: \"WORKERS\" is not one of CHIEF, WORKER, PS, EVALUATOR\n"+
		"  "+bad+": spec.replicas[0].type: \"WORKERS\" is not one of CHIEF, WORKER, PS, EVALUATOR\n", r.stderr)
	require.Len(t, f.rec.methodCalls("ParseJobFile"), 1, "the server reads the file")
	require.Empty(t, f.rec.methodCalls("CreateJob"))
}

func TestUnauthenticatedHint(t *testing.T) {
	f := startFake(t)
	f.jobs.createErrs = []error{status.Error(codes.Unauthenticated, "missing bearer token")}
	r := f.tyctl(t, nil, "--tenant", "ml", "jobs", "submit", "-f", "examples/mnist.yaml", "--request-id", "r1")
	require.Equal(t, 1, r.code)
	require.Equal(t, "tyctl: Unauthenticated: missing bearer token\n"+
		"hint: no token was sent: pass one with --token-file FILE, --token or TYCTL_TOKEN\n", r.stderr)
	require.Empty(t, f.rec.methodCalls("CreateJob")[0].auth)
}

func TestListPagesAndTable(t *testing.T) {
	f := startFake(t)
	f.jobs.pageSize = 2
	f.jobs.jobs = []*pb.Job{runningJob("c"), runningJob("b"), runningJob("a")}
	env := map[string]string{envTenant: "ml", envToken: testToken}

	r := f.tyctl(t, env, "jobs", "list", "--filter", "state = RUNNING", "--limit", "2", "--all-pages")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "NAME   STATE     REPLICAS                RESTARTS   POSITION   WAITING FOR   ETA   AGE   REASON\n"+
		"c      RUNNING   chief 1/1, worker 4/4   0          -          -             -     5m    -\n"+
		"b      RUNNING   chief 1/1, worker 4/4   0          -          -             -     5m    -\n"+
		"a      RUNNING   chief 1/1, worker 4/4   0          -          -             -     5m    -\n", r.stdout)
	calls := f.rec.methodCalls("ListJobs")
	require.Len(t, calls, 2)
	first, second := calls[0].req.(*pb.ListJobsRequest), calls[1].req.(*pb.ListJobsRequest)
	require.True(t, proto.Equal(&pb.ListJobsRequest{Parent: "tenants/ml", PageSize: 2, Filter: "state = RUNNING"}, first))
	require.Equal(t, "2", second.GetPageToken())
	require.Equal(t, "state = RUNNING", second.GetFilter())

	// One page only: the rest is pointed at on stderr, stdout stays a table.
	r = f.tyctl(t, env, "jobs", "list", "--limit", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 3, strings.Count(r.stdout, "\n"))
	require.Equal(t, "More jobs: --all-pages, or --page-token 2\n", r.stderr)
}

// list --watch lists, then watches from the list's position with the same
// filter; a watch that fell behind what the server keeps (OUT_OF_RANGE)
// lists again and watches from the new list, and any other end of the
// watch but a disconnect ends the command.
func TestListWatchFollowsTheList(t *testing.T) {
	f := startFake(t)
	f.jobs.pageSize = 10
	f.jobs.jobs = []*pb.Job{runningJob("a")}
	f.jobs.positions = []int64{40, 70}
	f.jobs.watchAll = []watchScript{
		{send: []*pb.WatchJobResponse{watchEvent(41, pb.JobState_JOB_STATE_RUNNING, "JobRunning")},
			end: status.Error(codes.OutOfRange, "afterEventId: events up to position 60 were deleted by event retention")},
		{send: []*pb.WatchJobResponse{watchEvent(71, pb.JobState_JOB_STATE_SUCCEEDED, "JobSucceeded")},
			end: status.Error(codes.PermissionDenied, "no longer a member of tenant ml")},
	}
	r := f.tyctl(t, map[string]string{envTenant: "ml", envToken: testToken}, "jobs", "list", "--filter", "state = RUNNING", "-w")
	require.Equal(t, 1, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 6, r.stdout)
	require.True(t, strings.HasPrefix(lines[0], "NAME "), lines[0])
	require.True(t, strings.HasPrefix(lines[1], "a "), lines[1])
	require.Contains(t, lines[2], "JobRunning")
	require.True(t, strings.HasPrefix(lines[3], "NAME "), "listed again: %s", lines[3])
	require.Contains(t, lines[5], "JobSucceeded")
	require.Contains(t, r.stderr, "tyctl: the watch fell behind the events the server keeps (afterEventId: events up to position 60")
	require.Contains(t, r.stderr, "PermissionDenied: no longer a member of tenant ml")

	watches := f.rec.methodCalls("WatchJobs")
	require.Len(t, watches, 2)
	require.True(t, proto.Equal(&pb.WatchJobsRequest{Parent: "tenants/ml", Filter: "state = RUNNING", AfterEventId: 40, Bookmarks: true}, watches[0].req.(*pb.WatchJobsRequest)))
	require.EqualValues(t, 70, watches[1].req.(*pb.WatchJobsRequest).GetAfterEventId(), "from the second list")
}

// A tenant watch asks for bookmarks, resumes after the latest one, and
// prints none.
func TestListWatchResumesAfterABookmark(t *testing.T) {
	f := startFake(t)
	f.jobs.pageSize = 10
	f.jobs.jobs = []*pb.Job{runningJob("a")}
	f.jobs.positions = []int64{40}
	f.jobs.watchAll = []watchScript{
		{send: []*pb.WatchJobResponse{watchEvent(41, pb.JobState_JOB_STATE_RUNNING, "JobRunning"), {BookmarkEventId: 900}},
			end: status.Error(codes.Unavailable, "stream lifetime reached")},
		{send: []*pb.WatchJobResponse{{BookmarkEventId: 950}},
			end: status.Error(codes.PermissionDenied, "no longer a member of tenant ml")},
	}
	r := f.tyctl(t, map[string]string{envTenant: "ml", envToken: testToken}, "-o", "json", "jobs", "list", "-w")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "resuming after event 900")
	require.NotContains(t, r.stdout, "900", "bookmarks are not printed")
	require.NotContains(t, r.stdout, "950")
	watches := f.rec.methodCalls("WatchJobs")
	require.Len(t, watches, 2)
	require.True(t, watches[0].req.(*pb.WatchJobsRequest).GetBookmarks())
	require.EqualValues(t, 900, watches[1].req.(*pb.WatchJobsRequest).GetAfterEventId())
}

func TestGetByFullNameAsJSON(t *testing.T) {
	f := startFake(t)
	f.jobs.jobs = []*pb.Job{runningJob("mnist-1")}
	// A full resource name needs no --tenant.
	r := f.tyctl(t, nil, "-o", "json", "jobs", "get", "tenants/ml/jobs/mnist-1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"replicaCounts": [`)
	require.Contains(t, r.stdout, `"state": "JOB_STATE_RUNNING"`)

	r = f.tyctl(t, nil, "--tenant", "ml", "jobs", "get", "nope")
	require.Equal(t, 1, r.code)
	require.Equal(t, "tyctl: NotFound: job \"nope\" not found\n", r.stderr)
}

func TestNoTenant(t *testing.T) {
	f := startFake(t)
	r := f.tyctl(t, nil, "jobs", "list")
	require.Equal(t, 1, r.code)
	require.Equal(t, "tyctl: no tenant: pass --tenant or set TYCTL_TENANT\n", r.stderr)
	require.Empty(t, f.rec.methodCalls("ListJobs"))
}

func TestCancel(t *testing.T) {
	f := startFake(t)
	r := f.tyctl(t, nil, "--tenant", "ml", "jobs", "cancel", "mnist-1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "job mnist-1: cancel requested; its pods are being stopped (tyctl jobs watch mnist-1)\n", r.stdout)
	require.Equal(t, "tenants/ml/jobs/mnist-1", f.rec.methodCalls("CancelJob")[0].req.(*pb.CancelJobRequest).GetName())
}

func TestSuspendResume(t *testing.T) {
	f := startFake(t)
	r := f.tyctl(t, nil, "--tenant", "ml", "jobs", "suspend", "mnist-1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "job mnist-1: suspend requested; its pods are being stopped (tyctl jobs watch mnist-1)\n", r.stdout)
	require.Equal(t, "tenants/ml/jobs/mnist-1", f.rec.methodCalls("SuspendJob")[0].req.(*pb.SuspendJobRequest).GetName())
	r = f.tyctl(t, nil, "--tenant", "ml", "jobs", "resume", "mnist-1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "job mnist-1: QUEUED\n", r.stdout)
	require.Equal(t, "tenants/ml/jobs/mnist-1", f.rec.methodCalls("ResumeJob")[0].req.(*pb.ResumeJobRequest).GetName())
	r = f.tyctl(t, nil, "--tenant", "ml", "jobs", "resume", "bad name!")
	require.NotEqual(t, 0, r.code)
	require.Len(t, f.rec.methodCalls("ResumeJob"), 1, "a bad name is not sent")
}

func watchEvent(id int64, state pb.JobState, reason string) *pb.WatchJobResponse {
	return &pb.WatchJobResponse{
		Event: &pb.JobEvent{Id: id, Job: "tenants/ml/jobs/mnist-1", Type: "Normal", Reason: reason, State: state, CreateTime: ago(0)},
		// The job as it is when sent: already final in a batch, which is why the event's state counts.
		Job: &pb.Job{Name: "tenants/ml/jobs/mnist-1", Status: &pb.JobStatus{State: pb.JobState_JOB_STATE_SUCCEEDED}},
	}
}

func TestWatchExitCodes(t *testing.T) {
	for _, tc := range []struct {
		final pb.JobState
		code  int
	}{
		{pb.JobState_JOB_STATE_SUCCEEDED, 0},
		{pb.JobState_JOB_STATE_FAILED, 1},
		{pb.JobState_JOB_STATE_CANCELLED, 1},
	} {
		t.Run(shortEnum(tc.final), func(t *testing.T) {
			f := startFake(t)
			f.jobs.watch = []watchScript{{send: []*pb.WatchJobResponse{
				{Job: runningJob("mnist-1")},
				watchEvent(8, pb.JobState_JOB_STATE_RUNNING, "Running"),
				{BookmarkEventId: 8}, // not printed, nor taken for a state
				watchEvent(9, tc.final, "Done"),
			}}}
			r := f.tyctl(t, nil, "--tenant", "ml", "--token", testToken, "jobs", "watch", "mnist-1")
			require.Equal(t, tc.code, r.code, r.stderr)
			require.Empty(t, r.stderr)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			require.Len(t, lines, 3)
			require.Contains(t, lines[0], "current state")
			require.Regexp(t, shortEnum(tc.final)+` +Normal +Done$`, lines[2])
			c := f.rec.methodCalls("WatchJob")[0]
			require.True(t, proto.Equal(&pb.WatchJobRequest{Name: "tenants/ml/jobs/mnist-1", Bookmarks: true}, c.req), "asks for bookmarks")
			require.Equal(t, []string{"Bearer " + testToken}, c.auth)
		})
	}
}

func TestWatchResumesAfterTheLastEventSeen(t *testing.T) {
	f := startFake(t)
	f.jobs.watch = []watchScript{
		{send: []*pb.WatchJobResponse{watchEvent(12, pb.JobState_JOB_STATE_RUNNING, "Running")}, end: status.Error(codes.Unavailable, "server shutting down")},
		{send: []*pb.WatchJobResponse{watchEvent(13, pb.JobState_JOB_STATE_SUCCEEDED, "Succeeded")}},
	}
	r := f.tyctl(t, nil, "--tenant", "ml", "-o", "json", "jobs", "watch", "mnist-1", "--after-event", "11")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "watch interrupted (server shutting down); resuming after event 12")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, "one JSON document per line")
	require.True(t, strings.HasPrefix(lines[1], `{"event":{"id":"13",`), lines[1])

	calls := f.rec.methodCalls("WatchJob")
	require.Len(t, calls, 2)
	require.EqualValues(t, 11, calls[0].req.(*pb.WatchJobRequest).GetAfterEventId())
	require.EqualValues(t, 12, calls[1].req.(*pb.WatchJobRequest).GetAfterEventId())
}

func TestWatchOfAFinishedJobAsksForItsState(t *testing.T) {
	f := startFake(t)
	failed := runningJob("mnist-1")
	failed.Status.State = pb.JobState_JOB_STATE_FAILED
	f.jobs.jobs = []*pb.Job{failed}
	f.jobs.watch = []watchScript{{}} // resumed past the last event: nothing to send
	r := f.tyctl(t, nil, "--tenant", "ml", "jobs", "watch", "mnist-1", "--after-event", "99")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stdout, "FAILED")
	require.Len(t, f.rec.methodCalls("GetJob"), 1)
}

func TestLogsStreamToStdout(t *testing.T) {
	f := startFake(t)
	f.jobs.logs = []string{"epoch 1 loss 0.3\n", "epoch 2 ", "loss 0.1\n"}
	r := f.tyctl(t, nil, "--tenant", "ml", "jobs", "logs", "mnist-1", "--replica", "worker-1", "-f", "--tail", "10")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "epoch 1 loss 0.3\nepoch 2 loss 0.1\n", r.stdout)
	require.True(t, proto.Equal(&pb.GetJobLogsRequest{Name: "tenants/ml/jobs/mnist-1", Replica: "worker-1", Follow: true, TailLines: 10},
		f.rec.methodCalls("GetJobLogs")[0].req))
}

func TestTenantsCreate(t *testing.T) {
	f := startFake(t)
	r := f.tyctl(t, nil, "--token", testToken, "tenants", "create", "ml-team", "--quota-gpu", "16", "--quota-memory", "512Gi",
		"--member", "group:ml-team=editor", "--member", "subject:alice=admin", "--pod-reader-group", "ml-team", "--label", "org=research",
		"--preemption", "lower-priority", "--queueing", "best-effort-fifo")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "tenant ml-team created (namespace ty-ml-team)\n", r.stdout)
	want := &pb.CreateTenantRequest{TenantId: "ml-team", Tenant: &pb.Tenant{
		Labels: map[string]string{"org": "research"},
		Quota:  &pb.Quota{Gpu: 16, Memory: "512Gi"},
		Members: []*pb.Member{
			{Principal: &pb.Member_Group{Group: "ml-team"}, Role: pb.Role_ROLE_EDITOR},
			{Principal: &pb.Member_Subject{Subject: "alice"}, Role: pb.Role_ROLE_ADMIN},
		},
		PodReaderGroups: []string{"ml-team"},
		Scheduling: &pb.Scheduling{PreemptionPolicy: pb.PreemptionPolicy_PREEMPTION_POLICY_LOWER_PRIORITY,
			QueueingStrategy: pb.QueueingStrategy_QUEUEING_STRATEGY_BEST_EFFORT_FIFO},
	}}
	got := f.rec.methodCalls("CreateTenant")[0].req
	require.True(t, proto.Equal(want, got), "got %v", got)
}

// A cohort's own pool: put sends the whole pool, list shows pools and
// members.
func TestCohortsPutAndList(t *testing.T) {
	f := startFake(t)
	r := f.tyctl(t, nil, "--token", testToken, "cohorts", "put", "lab", "--gpu", "16", "--gpu-type", "A100=16")
	require.Equal(t, 0, r.code, r.stderr)
	want := &pb.PutCohortRequest{Cohort: &pb.Cohort{Name: "cohorts/lab", NominalQuota: &pb.Quota{Gpu: 16}, GpuTypes: map[string]int64{"A100": 16}}}
	got := f.rec.methodCalls("PutCohort")[0].req
	require.True(t, proto.Equal(want, got), "got %v", got)
	require.Contains(t, r.stdout, "gpu=16 (A100 16)")
	require.Contains(t, r.stdout, "team-a,team-b")

	r = f.tyctl(t, nil, "--token", testToken, "cohorts", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `lab\s+gpu=16 \(A100 16\)\s+team-a`, r.stdout)
	require.Regexp(t, `other\s+-\s+team-c`, r.stdout)

	r = f.tyctl(t, nil, "--token", testToken, "cohorts", "put", "lab", "--gpu-type", "A100")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "--gpu-type")
}

func TestTenantsUpdateSharing(t *testing.T) {
	f := startFake(t)
	r := f.tyctl(t, nil, "--token", testToken, "tenants", "update", "team-a", "--quota-gpu", "8", "--cohort", "lab",
		"--borrowing-limit-gpu", "8", "--weight", "2", "--reclaim", "lower-priority", "--usage-half-life", "24h",
		"--budget-gpu-hours", "2000", "--budget-period", "rolling-30d", "--gpu-type", "A100=8")
	require.Equal(t, 0, r.code, r.stderr)
	want := &pb.UpdateTenantRequest{
		Tenant: &pb.Tenant{Name: "tenants/team-a", Quota: &pb.Quota{Gpu: 8}, Sharing: &pb.Sharing{
			Cohort: "lab", BorrowingLimit: &pb.Quota{Gpu: 8}, Weight: 2, ReclaimPolicy: pb.ReclaimPolicy_RECLAIM_POLICY_LOWER_PRIORITY,
			UsageHalfLifeSeconds: 86400, GpuTypes: map[string]int64{"A100": 8},
			Budget: &pb.Budget{GpuHours: 2000, Period: pb.BudgetPeriod_BUDGET_PERIOD_ROLLING_30D},
		}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"quota.gpu", "sharing.borrowing_limit", "sharing.budget", "sharing.cohort",
			"sharing.gpu_types", "sharing.reclaim_policy", "sharing.usage_half_life_seconds", "sharing.weight"}},
	}
	got := f.rec.methodCalls("UpdateTenant")[0].req
	require.True(t, proto.Equal(want, got), "got %v", got)
	require.Contains(t, r.stdout, "cohort lab, borrowing limit gpu=8, weight 2, reclaim LOWER_PRIORITY, usage half-life 24h0m0s")
	require.Contains(t, r.stdout, "2000 GPU-hours per rolling 30 days")
	require.Contains(t, r.stdout, "1500.0 used, 500.0 remaining")

	r = f.tyctl(t, nil, "--token", testToken, "tenants", "update", "team-a", "--reclaim", "sometimes")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "--reclaim")
}

func TestSecretsPutNeverEchoesValues(t *testing.T) {
	f := startFake(t)
	keyFile := filepath.Join(t.TempDir(), "api-key")
	require.NoError(t, os.WriteFile(keyFile, []byte("file-value-7c1d"), 0o600))
	for _, output := range []string{outTable, outJSON, outYAML} {
		r := f.tyctl(t, nil, "--tenant", "ml", "-o", output, "secrets", "put", "wandb", "--from-literal", "user=literal-value-9e2b", "--from-file", keyFile)
		require.Equal(t, 0, r.code, r.stderr)
		require.NotContains(t, r.stdout+r.stderr, "literal-value-9e2b")
		require.NotContains(t, r.stdout+r.stderr, "file-value-7c1d")
		if output == outTable {
			require.Equal(t, "secret wandb saved (keys: api-key, user)\n", r.stdout)
		}
	}
	req := f.rec.methodCalls("PutSecret")[0].req.(*pb.PutSecretRequest)
	require.Equal(t, "tenants/ml/secrets/wandb", req.GetSecret().GetName())
	require.Equal(t, map[string]string{"user": "literal-value-9e2b", "api-key": "file-value-7c1d"}, req.GetSecret().GetData())
}

func TestFlagsBeatEnvThroughCobra(t *testing.T) {
	f := startFake(t)
	// tyctl() passes --server with the fake's address: the bogus TYCTL_SERVER
	// must lose, or nothing would answer. --tenant beats TYCTL_TENANT, and
	// --token beats TYCTL_TOKEN.
	env := map[string]string{envServer: "nowhere.invalid:1", envTenant: "env-tenant", envToken: "env-token-123"}
	r := f.tyctl(t, env, "--tenant", "flag-tenant", "--token", testToken, "jobs", "cancel", "mnist-1")
	require.Equal(t, 0, r.code, r.stderr)
	c := f.rec.methodCalls("CancelJob")[0]
	require.Equal(t, "tenants/flag-tenant/jobs/mnist-1", c.req.(*pb.CancelJobRequest).GetName())
	require.Equal(t, []string{"Bearer " + testToken}, c.auth)

	r = f.tyctl(t, env, "jobs", "cancel", "mnist-2")
	require.Equal(t, 0, r.code, r.stderr)
	c = f.rec.methodCalls("CancelJob")[1]
	require.Equal(t, "tenants/env-tenant/jobs/mnist-2", c.req.(*pb.CancelJobRequest).GetName())
	require.Equal(t, []string{"Bearer env-token-123"}, c.auth)
}

// A watch of one job resumed behind the server's event retention goes on
// from the job's current state (a fresh watch), says so on stderr, and
// still exits by the job's outcome; a tenant-wide one fails with a hint.
func TestWatchBehindRetentionFollowsTheJobAsItIs(t *testing.T) {
	f := startFake(t)
	expired := status.Error(codes.OutOfRange, "afterEventId: events up to position 60 were deleted by event retention")
	f.jobs.watch = []watchScript{
		{send: []*pb.WatchJobResponse{watchEvent(41, pb.JobState_JOB_STATE_RUNNING, "Running")}, end: status.Error(codes.Unavailable, "server shutting down")},
		{end: expired},
		{send: []*pb.WatchJobResponse{{Job: runningJob("mnist-1")}, watchEvent(77, pb.JobState_JOB_STATE_SUCCEEDED, "Succeeded")}},
	}
	r := f.tyctl(t, nil, "--tenant", "ml", "jobs", "watch", "mnist-1", "--after-event", "40")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "the events after 41 are no longer kept")
	require.Contains(t, r.stderr, "following the job from its current state")
	calls := f.rec.methodCalls("WatchJob")
	require.Len(t, calls, 3)
	for i, want := range []int64{40, 41, 0} {
		require.Equal(t, want, calls[i].req.(*pb.WatchJobRequest).GetAfterEventId(), "call %d", i)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 3)
	require.Contains(t, lines[1], "current state")
	require.Regexp(t, `SUCCEEDED +Normal +Succeeded$`, lines[2])

	f = startFake(t)
	f.jobs.watchAll = []watchScript{{end: expired}}
	r = f.tyctl(t, nil, "--tenant", "ml", "jobs", "watch", "--after-event", "40")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "tyctl: OutOfRange: afterEventId")
	require.Contains(t, r.stderr, "hint: the server no longer keeps events that old: 'tyctl jobs list --watch'")
	require.Len(t, f.rec.methodCalls("WatchJobs"), 1)
}

func TestTenantsClusters(t *testing.T) {
	f := startFake(t)
	r := f.tyctl(t, nil, "--token", testToken, "tenants", "update", "team-a", "--cluster", "default", "--cluster", "b")
	require.Equal(t, 0, r.code, r.stderr)
	got := f.rec.methodCalls("UpdateTenant")[0].req.(*pb.UpdateTenantRequest)
	require.Equal(t, []string{"default", "b"}, got.GetTenant().GetClusters())
	require.Equal(t, []string{"clusters"}, got.GetUpdateMask().GetPaths(), "nothing else changes")

	r = f.tyctl(t, nil, "--token", testToken, "tenants", "update", "team-a", "--cluster", "")
	require.Equal(t, 0, r.code, r.stderr)
	got = f.rec.methodCalls("UpdateTenant")[1].req.(*pb.UpdateTenantRequest)
	require.Empty(t, got.GetTenant().GetClusters(), "every cluster")
	require.Equal(t, []string{"clusters"}, got.GetUpdateMask().GetPaths())

	r = f.tyctl(t, nil, "--token", testToken, "tenants", "create", "team-z", "--cluster", "b")
	require.Equal(t, 0, r.code, r.stderr)
	created := f.rec.methodCalls("CreateTenant")[0].req.(*pb.CreateTenantRequest)
	require.Equal(t, []string{"b"}, created.GetTenant().GetClusters())
}
