//go:build integration

package e2e

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Streams: GetJobLogs, WatchJob and WatchJobs end to end, over gRPC and the
// REST gateway.

func streamCtx(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx, cancel
}

// logJob is one worker replica with pod annotations for the simulated
// kubelet.
func logJob(annotations map[string]string, clean pb.CleanPodPolicy) *pb.Job {
	return &pb.Job{Spec: &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{{
			Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 1, Image: "tensorflow/tensorflow:2.16.1",
			Command: []string{"python", "train.py"}, PodAnnotations: annotations,
		}},
		RunPolicy: &pb.RunPolicy{BackoffLimit: new(int32(0)), CleanPodPolicy: clean},
	}}
}

// restStream opens a streaming GET and returns its response; the caller
// reads and closes the body, and cancels ctx to end it.
func restStream(t *testing.T, ctx context.Context, env *harness.Env, token, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", env.HTTPURL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// readUntil reads r until what was read contains want; it fails on EOF or
// when ctx ends first.
func readUntil(t *testing.T, r io.Reader, want string) string {
	t.Helper()
	var got strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(got.String(), want) {
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("stream ended (%v) before %q; got:\n%s", err, want, got.String())
		}
	}
	return got.String()
}

// TestJobLogsLiveAndAfterThePodIsGone reads a running replica's log live
// from the cluster, over REST (plain text) and gRPC, following it; then the
// tail the worker kept of a failed replica once its pod is deleted.
func TestJobLogsLiveAndAfterThePodIsGone(t *testing.T) {
	env := harness.Start(t, harness.Options{Cluster: true, Workers: 1})
	env.CreateTenant(t, "acme", harness.Group("ml-team", pb.Role_ROLE_EDITOR))
	alice := env.Token("alice", "ml-team")
	jobs := env.Jobs(t, alice)
	waitTenantNamespace(t, env, "acme")

	// A replica that runs until cancelled.
	_, err := jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/acme", JobId: "live",
		Job: logJob(map[string]string{cluster.AnnotationRunForever: "true"}, pb.CleanPodPolicy_CLEAN_POD_POLICY_ALL)})
	require.NoError(t, err)
	harness.WaitJob(t, jobs, "tenants/acme/jobs/live", 2*time.Minute, func(j *pb.Job) bool {
		return j.GetStatus().GetState() == pb.JobState_JOB_STATE_RUNNING && len(j.GetStatus().GetReplicas()) == 1 &&
			j.GetStatus().GetReplicas()[0].GetPod() != ""
	})

	// REST, not following: the log so far as text/plain. The simulated
	// kubelet may serve its fallback for a moment after the pod starts;
	// every log begins with the progress lines.
	var body string
	require.Eventually(t, func() bool {
		r := env.REST(alice).Do(t, "GET", "/v1/tenants/acme/jobs/live/logs?replica=worker-0", nil)
		body = string(r.Body)
		return r.Status == http.StatusOK && strings.Contains(body, cluster.LogLineStep+"10 ")
	}, 30*time.Second, 200*time.Millisecond, "last body: %s", body)
	require.NotContains(t, body, `"result"`, "the log is text, not JSON")

	// REST, following: the stream stays open after the log so far.
	ctx, cancel := streamCtx(t, time.Minute)
	resp := restStream(t, ctx, env, alice, "/v1/tenants/acme/jobs/live/logs?replica=worker-0&follow=true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	readUntil(t, resp.Body, cluster.LogLineStep+"10 ")
	more := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 1))
		more <- err
	}()
	select {
	case err := <-more:
		t.Fatalf("a followed log ended while the replica runs: %v", err)
	case <-time.After(time.Second):
	}
	cancel()
	resp.Body.Close()

	// gRPC: the last 3 lines; then following.
	logs, err := jobs.GetJobLogs(ctxT(t), &pb.GetJobLogsRequest{Name: "tenants/acme/jobs/live", Replica: "worker-0", TailLines: 3})
	require.NoError(t, err)
	tail := recvAll(t, logs)
	require.Len(t, strings.Split(strings.TrimSuffix(tail, "\n"), "\n"), 3, "tail: %q", tail)
	require.Contains(t, tail, cluster.LogLineStep+"10 ")
	ctx, cancel = streamCtx(t, time.Minute)
	follow, err := jobs.GetJobLogs(ctx, &pb.GetJobLogsRequest{Name: "tenants/acme/jobs/live", Follow: true})
	require.NoError(t, err)
	first, err := follow.Recv()
	require.NoError(t, err)
	require.Equal(t, "text/plain; charset=utf-8", first.GetContentType())
	require.Contains(t, string(first.GetData()), "[trainyard-sim]", "worker-0 by default: the job has no chief")
	cancel()
	// What arrived before the cancel may still be read; then the stream
	// ends CANCELED.
	for err == nil {
		_, err = follow.Recv()
	}
	require.Equal(t, codes.Canceled, status.Code(err))

	_, err = jobs.CancelJob(ctxT(t), &pb.CancelJobRequest{Name: "tenants/acme/jobs/live"})
	require.NoError(t, err)

	// A replica that fails; CleanPodPolicy All deletes its pod once the
	// job has failed, after the worker kept the tail of its log.
	_, err = jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/acme", JobId: "crash",
		Job: logJob(map[string]string{cluster.AnnotationExitCode: "3"}, pb.CleanPodPolicy_CLEAN_POD_POLICY_ALL)})
	require.NoError(t, err)
	failed := harness.WaitJob(t, jobs, "tenants/acme/jobs/crash", 2*time.Minute, harness.InState(pb.JobState_JOB_STATE_FAILED))
	require.Contains(t, failed.GetStatus().GetReplicas()[0].GetLastTermination().GetLogTail(), cluster.LogLineFailed, "GetJob returns the tail")
	waitFor(t, time.Minute, func() error {
		if pods := jobPods(t, env, "acme", "crash"); len(pods) > 0 {
			return errors.New("the failed job's pod is still there")
		}
		return nil
	})

	r := env.REST(alice).Do(t, "GET", "/v1/tenants/acme/jobs/crash/logs?replica=worker-0", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "Traceback (most recent call last):")
	require.True(t, strings.HasSuffix(strings.TrimSpace(string(r.Body)), cluster.LogLineFailed), "body: %s", r.Body)
	logs, err = jobs.GetJobLogs(ctxT(t), &pb.GetJobLogsRequest{Name: "tenants/acme/jobs/crash", TailLines: 1})
	require.NoError(t, err)
	require.Equal(t, cluster.LogLineFailed, strings.TrimSpace(recvAll(t, logs)))

	// Lists and watches leave the tail out; GetJob keeps it.
	list, err := jobs.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme", Filter: "state = FAILED"})
	require.NoError(t, err)
	require.Len(t, list.GetJobs(), 1)
	require.EqualValues(t, 3, list.GetJobs()[0].GetStatus().GetReplicas()[0].GetLastTermination().GetExitCode())
	require.Empty(t, list.GetJobs()[0].GetStatus().GetReplicas()[0].GetLastTermination().GetLogTail())
	ctx, cancel = streamCtx(t, 30*time.Second)
	watch, err := jobs.WatchJob(ctx, &pb.WatchJobRequest{Name: "tenants/acme/jobs/crash"})
	require.NoError(t, err)
	m, err := watch.Recv()
	require.NoError(t, err)
	require.Equal(t, pb.JobState_JOB_STATE_FAILED, m.GetJob().GetStatus().GetState())
	require.Empty(t, m.GetJob().GetStatus().GetReplicas()[0].GetLastTermination().GetLogTail())
	cancel()
}

func recvAll(t *testing.T, s grpc.ServerStreamingClient[httpbody.HttpBody]) string {
	t.Helper()
	var b strings.Builder
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return b.String()
		}
		require.NoError(t, err)
		b.Write(m.GetData())
	}
}

// watchUntil receives from a watch until it has n events (or, with n < 0,
// until the stream ends) and returns them.
func watchUntil(t *testing.T, s grpc.ServerStreamingClient[pb.WatchJobResponse], n int) []*pb.WatchJobResponse {
	t.Helper()
	var got []*pb.WatchJobResponse
	for n < 0 || len(got) < n {
		m, err := s.Recv()
		if n < 0 && errors.Is(err, io.EOF) {
			return got
		}
		require.NoError(t, err, "after %d events", len(got))
		if m.GetEvent() != nil {
			got = append(got, m)
		}
	}
	return got
}

// TestWatchJobResumesWithoutLossOrRepeat: a watch cut after a few events
// and resumed with the last event id it saw delivers every event of the
// job exactly once, in order, until the job is final.
func TestWatchJobResumesWithoutLossOrRepeat(t *testing.T) {
	env := harness.Start(t, harness.Options{Cluster: true, Workers: 1})
	env.CreateTenant(t, "acme", harness.Group("ml-team", pb.Role_ROLE_EDITOR))
	jobs := env.Jobs(t, env.Token("alice", "ml-team"))
	waitTenantNamespace(t, env, "acme")

	// A chief, and a worker that fails once and is restarted: Queued,
	// Admitted, JobRunning, Restarting, ..., JobSucceeded.
	flaky := &pb.ReplicaSpec{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 1, Image: "tensorflow/tensorflow:2.16.1",
		RestartPolicy:  pb.RestartPolicy_RESTART_POLICY_ON_FAILURE,
		PodAnnotations: map[string]string{cluster.AnnotationFailAttempts: "1", cluster.AnnotationRunFor: "2s"}}
	spec := &pb.JobSpec{Replicas: []*pb.ReplicaSpec{
		{Type: pb.ReplicaType_REPLICA_TYPE_CHIEF, Count: 1, Image: "tensorflow/tensorflow:2.16.1", PodAnnotations: map[string]string{cluster.AnnotationRunFor: "6s"}},
		flaky,
	}}
	_, err := jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/acme", JobId: "resume", Job: &pb.Job{Spec: spec}})
	require.NoError(t, err)
	events, err := jobs.ListJobEvents(ctxT(t), &pb.ListJobEventsRequest{Parent: "tenants/acme/jobs/resume"})
	require.NoError(t, err)
	require.NotEmpty(t, events.GetEvents(), "the Queued event is written with the job")
	queued := events.GetEvents()[0]
	require.Equal(t, "Queued", queued.GetReason())

	// First connection: from the Queued event on, two events, then cut.
	ctx, cancel := streamCtx(t, 2*time.Minute)
	w, err := jobs.WatchJob(ctx, &pb.WatchJobRequest{Name: "tenants/acme/jobs/resume", AfterEventId: queued.GetId()})
	require.NoError(t, err)
	got := watchUntil(t, w, 2)
	cancel()
	last := got[len(got)-1].GetEvent().GetId()

	// The rest happens while nobody watches.
	harness.WaitJob(t, jobs, "tenants/acme/jobs/resume", 2*time.Minute, harness.InState(pb.JobState_JOB_STATE_SUCCEEDED))

	// Second connection: resume after the last event seen, to the end.
	ctx, cancel = streamCtx(t, 2*time.Minute)
	w, err = jobs.WatchJob(ctx, &pb.WatchJobRequest{Name: "tenants/acme/jobs/resume", AfterEventId: last})
	require.NoError(t, err)
	got = append(got, watchUntil(t, w, -1)...)
	cancel()
	final := got[len(got)-1]
	require.True(t, final.GetJob().GetStatus().GetState() == pb.JobState_JOB_STATE_SUCCEEDED, "the watch ends when the job is final: %v", final.GetJob().GetStatus())

	all, err := jobs.ListJobEvents(ctxT(t), &pb.ListJobEventsRequest{Parent: "tenants/acme/jobs/resume"})
	require.NoError(t, err)
	var want, seen []int64
	for _, e := range all.GetEvents()[1:] {
		want = append(want, e.GetId())
	}
	for _, m := range got {
		seen = append(seen, m.GetEvent().GetId())
		require.Equal(t, "tenants/acme/jobs/resume", m.GetEvent().GetJob())
	}
	require.Greater(t, len(seen), 3, "events after the cut arrived")
	require.Equal(t, want[:len(seen)], seen, "every event after Queued, once, in order")
	reasons := map[string]bool{}
	for _, m := range got {
		reasons[m.GetEvent().GetReason()] = true
	}
	require.True(t, reasons["Restarting"], "the restart is among them: %v", reasons)
}

// teamJob is a one-worker job labelled team=team.
func teamJob(team string) *pb.Job {
	j := workerJob("tensorflow/tensorflow:2.16.1", 1)
	j.Labels = map[string]string{"team": team}
	return j
}

// firstEventID is the id of the job's first event (Queued): a watch
// resumed after it sees what happened since.
func firstEventID(t *testing.T, jobs pb.JobServiceClient, name string) int64 {
	t.Helper()
	evs, err := jobs.ListJobEvents(ctxT(t), &pb.ListJobEventsRequest{Parent: name})
	require.NoError(t, err)
	return evs.GetEvents()[0].GetId()
}

// TestWatchJobsFilter: a tenant watch with a filter sends the events of the
// matching jobs only — of a job deleted since too, with its last state —
// over gRPC and REST.
func TestWatchJobsFilter(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Group("ml-team", pb.Role_ROLE_EDITOR))
	env.CreateTenant(t, "other", harness.Group("ml-team", pb.Role_ROLE_EDITOR))
	alice := env.Token("alice", "ml-team")
	jobs := env.Jobs(t, alice)
	createJob(t, jobs, "acme", "marker", teamJob("none"))
	after := firstEventID(t, jobs, "tenants/acme/jobs/marker")

	ctx, cancel := streamCtx(t, time.Minute)
	nlp, err := jobs.WatchJobs(ctx, &pb.WatchJobsRequest{Parent: "tenants/acme", Filter: "labels.team = nlp", AfterEventId: after})
	require.NoError(t, err)
	cancelled, err := jobs.WatchJobs(ctx, &pb.WatchJobsRequest{Parent: "tenants/acme", Filter: "state = CANCELLED", AfterEventId: after})
	require.NoError(t, err)
	for _, w := range []grpc.ServerStreamingClient[pb.WatchJobResponse]{nlp, cancelled} {
		md, err := w.Header()
		require.NoError(t, err)
		require.NotNil(t, md, "the watch is established before anything happens")
	}

	createJob(t, jobs, "acme", "nlp-1", teamJob("nlp"))
	createJob(t, jobs, "acme", "cv-1", teamJob("cv"))
	createJob(t, jobs, "other", "nlp-1", teamJob("nlp"))
	createJob(t, jobs, "acme", "nlp-2", teamJob("nlp"))
	_, err = jobs.CancelJob(ctxT(t), &pb.CancelJobRequest{Name: "tenants/acme/jobs/nlp-1"})
	require.NoError(t, err)
	_, err = jobs.CancelJob(ctxT(t), &pb.CancelJobRequest{Name: "tenants/acme/jobs/cv-1"})
	require.NoError(t, err)
	_, err = jobs.DeleteJob(ctxT(t), &pb.DeleteJobRequest{Name: "tenants/acme/jobs/nlp-1"})
	require.NoError(t, err)

	describe := func(ms []*pb.WatchJobResponse) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.GetJob().GetName()+" "+m.GetEvent().GetReason())
		}
		return out
	}
	require.Equal(t, []string{
		"tenants/acme/jobs/nlp-1 Queued",
		"tenants/acme/jobs/nlp-2 Queued",
		"tenants/acme/jobs/nlp-1 Cancelled",
		"tenants/acme/jobs/nlp-1 Deleted",
	}, describe(watchUntil(t, nlp, 4)))
	require.Equal(t, []string{
		"tenants/acme/jobs/nlp-1 Cancelled",
		"tenants/acme/jobs/cv-1 Cancelled",
		"tenants/acme/jobs/nlp-1 Deleted",
	}, describe(watchUntil(t, cancelled, 3)), "the deleted job is sent with its last state")

	// REST, resuming after the marker: one JSON object per line,
	// {"result": WatchJobResponse}. (The gateway answers with the first
	// message, so it is opened once there are some.)
	rest := restStream(t, ctx, env, alice, "/v1/tenants/acme/jobs:watch?filter=labels.team%3Dnlp&afterEventId="+strconv.FormatInt(after, 10))
	require.Equal(t, http.StatusOK, rest.StatusCode)
	defer rest.Body.Close()
	lines := bufio.NewScanner(rest.Body)
	var restGot []string
	for len(restGot) < 4 && lines.Scan() {
		line := lines.Text()
		require.Contains(t, line, `"result"`)
		for _, name := range []string{"nlp-1", "nlp-2", "cv-1"} {
			if strings.Contains(line, `"job":"tenants/acme/jobs/`+name+`"`) {
				restGot = append(restGot, name)
			}
		}
	}
	require.Equal(t, []string{"nlp-1", "nlp-2", "nlp-1", "nlp-1"}, restGot)
	cancel()
}

// A filtered tenant watch that asks for bookmarks learns how far the
// server read past the events its filter left out, over gRPC and REST,
// and a watch resumed after the bookmark starts there: it gets the next
// match and none of what came before.
func TestWatchJobsBookmarks(t *testing.T) {
	env := harness.Start(t, harness.Options{ServeArgs: []string{"--watch-bookmark-every", "200ms"}})
	env.CreateTenant(t, "acme", harness.Group("ml-team", pb.Role_ROLE_EDITOR))
	alice := env.Token("alice", "ml-team")
	jobs := env.Jobs(t, alice)
	createJob(t, jobs, "acme", "marker", teamJob("none"))
	after := firstEventID(t, jobs, "tenants/acme/jobs/marker")

	ctx, cancel := streamCtx(t, time.Minute)
	defer cancel()
	w, err := jobs.WatchJobs(ctx, &pb.WatchJobsRequest{Parent: "tenants/acme", Filter: "labels.team = nlp", AfterEventId: after, Bookmarks: true})
	require.NoError(t, err)
	plain, err := jobs.WatchJobs(ctx, &pb.WatchJobsRequest{Parent: "tenants/acme", Filter: "labels.team = nlp", AfterEventId: after})
	require.NoError(t, err)
	createJob(t, jobs, "acme", "cv-1", teamJob("cv"))
	createJob(t, jobs, "acme", "cv-2", teamJob("cv"))
	last := firstEventID(t, jobs, "tenants/acme/jobs/cv-2")

	// Bookmarks only: one may come between the two creates on a slow
	// machine, and the last names cv-2's event.
	m := bookmarksUntil(t, w, after, last)
	restBookmark(t, ctx, env, alice, "/v1/tenants/acme/jobs:watch?filter=labels.team%3Dnlp&bookmarks=true&afterEventId="+strconv.FormatInt(after, 10), last)

	// Resumed after the bookmark: the next match, nothing before it.
	createJob(t, jobs, "acme", "nlp-1", teamJob("nlp"))
	resumed, err := jobs.WatchJobs(ctx, &pb.WatchJobsRequest{Parent: "tenants/acme", Filter: "labels.team = nlp", AfterEventId: m.GetBookmarkEventId(), Bookmarks: true})
	require.NoError(t, err)
	m, err = resumed.Recv()
	require.NoError(t, err)
	require.Equal(t, "tenants/acme/jobs/nlp-1", m.GetJob().GetName())
	require.Equal(t, "Queued", m.GetEvent().GetReason())

	// Without asking: no bookmark, the match is the first message.
	m, err = plain.Recv()
	require.NoError(t, err)
	require.Equal(t, "tenants/acme/jobs/nlp-1", m.GetJob().GetName())
}

// A job's watch that asks for bookmarks learns, while the job is quiet, how
// far the tenant's other jobs have moved the position, and a watch of the
// job resumed from the bookmark gets the job's next event and nothing
// before it; one that did not ask gets no bookmark.
func TestWatchJobBookmarks(t *testing.T) {
	env := harness.Start(t, harness.Options{ServeArgs: []string{"--watch-bookmark-every", "200ms"}})
	env.CreateTenant(t, "acme", harness.Group("ml-team", pb.Role_ROLE_EDITOR))
	alice := env.Token("alice", "ml-team")
	jobs := env.Jobs(t, alice)
	const name = "tenants/acme/jobs/quiet"
	createJob(t, jobs, "acme", "quiet", teamJob("nlp")) // no worker: it stays QUEUED, quiet
	after := firstEventID(t, jobs, name)

	ctx, cancel := streamCtx(t, time.Minute)
	defer cancel()
	w, err := jobs.WatchJob(ctx, &pb.WatchJobRequest{Name: name, AfterEventId: after, Bookmarks: true})
	require.NoError(t, err)
	plain, err := jobs.WatchJob(ctx, &pb.WatchJobRequest{Name: name, AfterEventId: after})
	require.NoError(t, err)
	createJob(t, jobs, "acme", "other-1", teamJob("cv"))
	createJob(t, jobs, "acme", "other-2", teamJob("cv"))
	last := firstEventID(t, jobs, "tenants/acme/jobs/other-2")

	m := bookmarksUntil(t, w, after, last) // the job is quiet: bookmarks only
	restBookmark(t, ctx, env, alice, "/v1/tenants/acme/jobs/quiet:watch?bookmarks=true&afterEventId="+strconv.FormatInt(after, 10), last)

	// Resumed after the bookmark: the job's next event, nothing before it.
	_, err = jobs.CancelJob(ctxT(t), &pb.CancelJobRequest{Name: name})
	require.NoError(t, err)
	resumed, err := jobs.WatchJob(ctx, &pb.WatchJobRequest{Name: name, AfterEventId: m.GetBookmarkEventId(), Bookmarks: true})
	require.NoError(t, err)
	m, err = resumed.Recv()
	require.NoError(t, err)
	require.Equal(t, name, m.GetJob().GetName())
	require.Equal(t, "Cancelled", m.GetEvent().GetReason())
	require.Greater(t, m.GetEvent().GetId(), last)

	// Without asking: no bookmark, the cancel is the first message.
	m, err = plain.Recv()
	require.NoError(t, err)
	require.Equal(t, "Cancelled", m.GetEvent().GetReason())
}

// bookmarksUntil reads a watch that sends only bookmarks, each past after
// and at most last (one may come early on a slow machine), until the one
// at last, and returns it.
func bookmarksUntil(t *testing.T, w grpc.ServerStreamingClient[pb.WatchJobResponse], after, last int64) *pb.WatchJobResponse {
	t.Helper()
	for {
		m, err := w.Recv()
		require.NoError(t, err)
		require.Nil(t, m.GetEvent())
		require.Nil(t, m.GetJob())
		require.LessOrEqual(t, m.GetBookmarkEventId(), last)
		require.Greater(t, m.GetBookmarkEventId(), after)
		if m.GetBookmarkEventId() == last {
			return m
		}
	}
}

// restBookmark opens path, a REST watch asking for bookmarks, and reads
// until the bookmark at last: {"result": {"bookmarkEventId": "N"}}.
func restBookmark(t *testing.T, ctx context.Context, env *harness.Env, token, path string, last int64) {
	t.Helper()
	rest := restStream(t, ctx, env, token, path)
	require.Equal(t, http.StatusOK, rest.StatusCode)
	defer rest.Body.Close()
	readUntil(t, rest.Body, `{"result":{"bookmarkEventId":"`+strconv.FormatInt(last, 10)+`"}}`)
}

// TestStreamsPerCallerAreCapped: with --max-streams-per-caller 2, a third
// concurrent stream of the same caller is RESOURCE_EXHAUSTED (429 over
// REST), another caller is not affected, and closing one frees a slot.
func TestStreamsPerCallerAreCapped(t *testing.T) {
	env := harness.Start(t, harness.Options{ServeArgs: []string{"--max-streams-per-caller", "2"}})
	env.CreateTenant(t, "acme", harness.Group("ml-team", pb.Role_ROLE_EDITOR))
	alice, bob := env.Token("alice", "ml-team"), env.Token("bob", "ml-team")
	jobs := env.Jobs(t, alice)

	createJob(t, jobs, "acme", "j", workerJob("tensorflow/tensorflow:2.16.1", 1))

	// A WatchJob that is let in sends the job's current state at once; a
	// refused one ends with its status.
	open := func(ctx context.Context, c pb.JobServiceClient) error {
		s, err := c.WatchJob(ctx, &pb.WatchJobRequest{Name: "tenants/acme/jobs/j"})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	ctx1, cancel1 := streamCtx(t, time.Minute)
	require.NoError(t, open(ctx1, jobs))
	// The second over REST: the cap counts both front doors.
	ctx2, cancel2 := streamCtx(t, time.Minute)
	defer cancel2()
	rest := restStream(t, ctx2, env, alice, "/v1/tenants/acme/jobs/j:watch")
	defer rest.Body.Close()
	require.Equal(t, http.StatusOK, rest.StatusCode)
	readUntil(t, rest.Body, `"result"`)
	ctx3, cancel3 := streamCtx(t, time.Minute)
	err := open(ctx3, jobs)
	cancel3()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "at most 2")
	r := env.REST(alice).Do(t, "GET", "/v1/tenants/acme/jobs/x/logs", nil)
	require.Equal(t, http.StatusTooManyRequests, r.Status, string(r.Body))

	ctxB, cancelB := streamCtx(t, time.Minute)
	defer cancelB()
	require.NoError(t, open(ctxB, env.Jobs(t, bob)), "another caller has slots of their own")

	cancel1()
	waitFor(t, 10*time.Second, func() error {
		ctx3, cancel3 := streamCtx(t, time.Minute)
		defer cancel3()
		return open(ctx3, jobs)
	})
}

// Fair admission (issue 41): a tenant's requests beyond its seats and queue
// are refused with 429 / RESOURCE_EXHAUSTED and Retry-After, naming the
// limit, while another tenant's requests meanwhile all get through; and a
// tenant's streams beyond --tenant-streams are refused the same way.
func TestTenantLimitsAreFair(t *testing.T) {
	env := harness.Start(t, harness.Options{ServeArgs: []string{
		"--tenant-concurrency", "1", "--tenant-queue", "0", "--tenant-streams", "2", "--max-streams-per-caller", "10"}})
	env.CreateTenant(t, "acme", harness.Group("ml-team", pb.Role_ROLE_EDITOR))
	env.CreateTenant(t, "globex", harness.Group("ops", pb.Role_ROLE_EDITOR))
	alice, olga := env.Token("alice", "ml-team"), env.Token("olga", "ops")
	createJob(t, env.Jobs(t, alice), "acme", "j", workerJob("tensorflow/tensorflow:2.16.1", 1))

	// acme floods; globex calls one at a time meanwhile.
	var wg sync.WaitGroup
	var refused, ok atomic.Int64
	var sample harness.Response
	var sampleOnce sync.Once
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				r := env.REST(alice).Do(t, "GET", "/v1/tenants/acme/jobs", nil)
				switch r.Status {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusTooManyRequests:
					refused.Add(1)
					sampleOnce.Do(func() { sample = r })
				default:
					t.Errorf("acme: %d %s", r.Status, r.Body)
				}
			}
		}()
	}
	for range 20 {
		r := env.REST(olga).Do(t, "GET", "/v1/tenants/globex/jobs", nil)
		require.Equal(t, http.StatusOK, r.Status, "globex is never refused for acme's flood: %s", r.Body)
	}
	wg.Wait()
	require.Positive(t, ok.Load())
	require.Positive(t, refused.Load(), "64 callers at once past one seat and no queue")
	require.NotEmpty(t, sample.Header.Get("Retry-After"))
	require.Contains(t, string(sample.Body), `tenant \"acme\" is at its limit of 1 concurrent requests`)

	// Streams: two of acme's are let in, the third is refused; globex's is not.
	open := func(ctx context.Context, c pb.JobServiceClient, name string) error {
		s, err := c.WatchJob(ctx, &pb.WatchJobRequest{Name: name})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	for range 2 {
		ctx, cancel := streamCtx(t, time.Minute)
		defer cancel()
		require.NoError(t, open(ctx, env.Jobs(t, alice), "tenants/acme/jobs/j"))
	}
	ctx, cancel := streamCtx(t, time.Minute)
	err := open(ctx, env.Jobs(t, alice), "tenants/acme/jobs/j")
	cancel()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), `tenant "acme" has 2 watches and log streams open`)
	createJob(t, env.Jobs(t, olga), "globex", "g", workerJob("tensorflow/tensorflow:2.16.1", 1))
	ctxG, cancelG := streamCtx(t, time.Minute)
	defer cancelG()
	require.NoError(t, open(ctxG, env.Jobs(t, olga), "tenants/globex/jobs/g"), "another tenant's streams are its own")
}
