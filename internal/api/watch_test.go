package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store/storetest"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestListJobsAndWatchLeaveLogTailsOut(t *testing.T) {
	j := withTail(job.Job{Tenant: "a", Name: "j", UID: "u1"})
	require.Equal(t, "Traceback\nboom\n", jobToPB(j).GetStatus().GetReplicas()[0].GetLastTermination().GetLogTail())
	sum := jobSummaryToPB(j)
	require.Empty(t, sum.GetStatus().GetReplicas()[0].GetLastTermination().GetLogTail())
	require.EqualValues(t, 1, sum.GetStatus().GetReplicas()[0].GetLastTermination().GetExitCode(), "the rest stays")
	require.NotEmpty(t, j.Status.Replicas[0].LastTermination.LogTail, "the job itself is untouched")

	st := newFakeStore()
	st.jobs = []job.Job{j}
	resp, err := NewJobServer(Deps{Store: st}).ListJobs(context.Background(), &pb.ListJobsRequest{Parent: "tenants/a"})
	require.NoError(t, err)
	require.Empty(t, resp.GetJobs()[0].GetStatus().GetReplicas()[0].GetLastTermination().GetLogTail())
	got, err := NewJobServer(Deps{Store: st}).GetJob(context.Background(), &pb.GetJobRequest{Name: "tenants/a/jobs/j"})
	require.NoError(t, err)
	require.NotEmpty(t, got.GetStatus().GetReplicas()[0].GetLastTermination().GetLogTail(), "GetJob keeps it")
}

// ListJobs hands on the store's position for a watch to follow the list
// from.
func TestListJobsCarriesWatchAfterEventID(t *testing.T) {
	st := newFakeStore()
	st.watchAfter = 42 << 20
	resp, err := NewJobServer(Deps{Store: st}).ListJobs(context.Background(), &pb.ListJobsRequest{Parent: "tenants/a"})
	require.NoError(t, err)
	require.EqualValues(t, 42<<20, resp.GetWatchAfterEventId())
}

// WatchJobs reads the jobs of a batch of events in one query, matches
// events to jobs by uid (a name is reused after a delete), and sends the
// events of deleted and purged jobs instead of dropping them.
func TestWatchJobsBatchesByUID(t *testing.T) {
	st := newFakeStore()
	old := job.Job{Tenant: "a", Name: "train", UID: "u-old", Labels: map[string]string{"team": "nlp"}, Status: job.Status{State: job.Failed}}
	cur := job.Job{Tenant: "a", Name: "train", UID: "u-new", Labels: map[string]string{"team": "nlp"}, Status: job.Status{State: job.Running}}
	other := job.Job{Tenant: "a", Name: "eval", UID: "u-other", Labels: map[string]string{"team": "cv"}, Status: job.Status{State: job.Running}}
	st.jobs = []job.Job{withTail(old), cur, other}
	st.deleted["u-old"] = true
	ev := func(id int64, name, uid, reason string) job.Event {
		return job.Event{ID: id, Tenant: "a", Job: name, JobUID: uid, Reason: reason}
	}
	st.events = []job.Event{
		ev(1, "train", "u-old", "Failed"),
		ev(2, "train", "u-old", "Deleted"),
		ev(3, "train", "u-new", "Queued"),
		ev(4, "eval", "u-other", "Queued"),
		ev(5, "gone", "u-purged", "Deleted"),
		{ID: 6, Tenant: "b", Job: "x", JobUID: "u-b", Reason: "Queued"},
	}
	srv := NewJobServer(Deps{Store: st, WatchPoll: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	stream := &fakeStream[pb.WatchJobResponse]{ctx: ctx}
	done := make(chan error, 1)
	go func() {
		done <- srv.WatchJobs(&pb.WatchJobsRequest{Parent: "tenants/a", Filter: "labels.team = nlp"}, stream)
	}()
	require.Eventually(t, func() bool { return len(stream.got()) == 4 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	require.Equal(t, codes.Canceled, status.Code(<-done))

	var got []string
	for _, m := range stream.got() {
		got = append(got, fmt.Sprintf("%d %s %s %s", m.GetEvent().GetId(), m.GetEvent().GetReason(), m.GetJob().GetName(), m.GetJob().GetUid()))
		for _, r := range m.GetJob().GetStatus().GetReplicas() {
			require.Empty(t, r.GetLastTermination().GetLogTail())
		}
	}
	require.Equal(t, []string{
		"1 Failed tenants/a/jobs/train u-old",
		"2 Deleted tenants/a/jobs/train u-old",
		"3 Queued tenants/a/jobs/train u-new",
		"5 Deleted tenants/a/jobs/gone u-purged",
	}, got)
	require.Equal(t, 1, st.count("JobGetMany"), "one query for the jobs of the batch")
	require.Zero(t, st.count("JobGet"))
}

// A watcher is woken by its own tenant's events, not by another's.
func TestWatchJobWakesOnItsTenantOnly(t *testing.T) {
	st := newFakeStore()
	st.jobs = []job.Job{{Tenant: "a", Name: "j", UID: "u1", Status: job.Status{State: job.Running}}}
	src := &storetest.Notifications{}
	srv := NewJobServer(Deps{Store: st, Events: src, WatchPoll: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := &fakeStream[pb.WatchJobResponse]{ctx: ctx}
	done := make(chan error, 1)
	go func() { done <- srv.WatchJob(&pb.WatchJobRequest{Name: "tenants/a/jobs/j"}, stream) }()
	require.Eventually(t, func() bool { return len(stream.got()) == 1 && src.Open() == 1 }, 5*time.Second, time.Millisecond)

	// The notifications are handled in order: once tenant a's has been,
	// tenant b's have been too. Nobody listened for b's (Last stays zero
	// for a tenant without subscribers), and the store's Wakeups test shows
	// that a notification wakes only its tenant's subscribers.
	for range 20 {
		src.Notify("b")
	}
	src.Notify("a")
	require.Eventually(t, func() bool { return !srv.wakeups.Last("a").IsZero() }, 5*time.Second, time.Millisecond)
	require.True(t, srv.wakeups.Last("b").IsZero(), "the watch of a job of tenant a listens to tenant a only")

	st.mu.Lock()
	st.events = append(st.events, job.Event{ID: 7, Tenant: "a", Job: "j", JobUID: "u1", Reason: "Succeeded", State: job.Succeeded})
	st.jobs[0].Status.State = job.Succeeded
	st.mu.Unlock()
	src.Notify("a")
	require.NoError(t, <-done, "the job is final: the watch ends")
	got := stream.got()
	require.Len(t, got, 2)
	require.EqualValues(t, 7, got[1].GetEvent().GetId())
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, got[1].GetJob().GetStatus().GetState())
}

// A state filter matches the state each event recorded, not the job's
// state when the watch reads the batch: a job cancelled right after it was
// submitted does not let its Queued event through "state = CANCELLED".
func TestWatchMessageFiltersOnTheEventsState(t *testing.T) {
	f, err := parseJobFilter("filter", "state = CANCELLED")
	require.NoError(t, err)
	j := job.Job{Tenant: "a", Name: "j", UID: "u1", Status: job.Status{State: job.Cancelled}}
	jobs := map[string]job.Job{"u1": j}
	_, ok := watchMessage("a", job.Event{JobUID: "u1", Job: "j", Reason: "Queued", State: job.Queued}, jobs, f)
	require.False(t, ok, "queued when it happened")
	msg, ok := watchMessage("a", job.Event{JobUID: "u1", Job: "j", Reason: "Cancelled", State: job.Cancelled}, jobs, f)
	require.True(t, ok)
	require.Equal(t, pb.JobState_JOB_STATE_CANCELLED, msg.GetJob().GetStatus().GetState(), "sent with the job as it is")
}

// A watch resumed from a position that event retention has passed is
// refused with OUT_OF_RANGE naming afterEventId, before it sends anything:
// the events after it may be gone. From the horizon on, or starting now,
// it is served.
func TestWatchResumedBehindRetentionIsOutOfRange(t *testing.T) {
	st := newFakeStore()
	st.jobs = []job.Job{{Tenant: "a", Name: "j", UID: "u1", Status: job.Status{State: job.Running}}}
	st.events = []job.Event{{ID: 7, Tenant: "a", Job: "j", JobUID: "u1", Reason: "Queued"}}
	st.horizon = 5
	srv := NewJobServer(Deps{Store: st, WatchPoll: time.Hour})

	watches := map[string]func(after int64, stream *fakeStream[pb.WatchJobResponse]) error{
		"WatchJobs": func(after int64, stream *fakeStream[pb.WatchJobResponse]) error {
			return srv.WatchJobs(&pb.WatchJobsRequest{Parent: "tenants/a", AfterEventId: after}, stream)
		},
		"WatchJob": func(after int64, stream *fakeStream[pb.WatchJobResponse]) error {
			return srv.WatchJob(&pb.WatchJobRequest{Name: "tenants/a/jobs/j", AfterEventId: after}, stream)
		},
	}
	for name, watch := range watches {
		t.Run(name, func(t *testing.T) {
			stream := &fakeStream[pb.WatchJobResponse]{ctx: context.Background()}
			err := watch(4, stream)
			require.Equal(t, codes.OutOfRange, status.Code(err), "%v", err)
			require.Contains(t, status.Convert(err).Message(), "afterEventId: events up to position 5 were deleted")
			require.Equal(t, "afterEventId", badRequest(t, err).GetFieldViolations()[0].GetField())
			require.Empty(t, stream.got(), "nothing sent from a position that may have lost events")

			for _, after := range []int64{5, 0} {
				ctx, cancel := context.WithCancel(context.Background())
				stream := &fakeStream[pb.WatchJobResponse]{ctx: ctx}
				done := make(chan error, 1)
				go func() { done <- watch(after, stream) }()
				if after > 0 {
					require.Eventually(t, func() bool { return len(stream.got()) == 1 }, 5*time.Second, 5*time.Millisecond,
						"from the horizon itself nothing is missing")
					require.EqualValues(t, 7, stream.got()[0].GetEvent().GetId())
				}
				cancel()
				require.Equal(t, codes.Canceled, status.Code(<-done), "after %d", after)
			}
		})
	}
}

// A watch that is already streaming ends with OUT_OF_RANGE too when
// retention deletes events it has not read yet (a read stalled past the
// retention age): the store's read meets the horizon above its cursor, and
// nothing after the gap is sent.
func TestWatchThatFallsBehindRetentionIsOutOfRange(t *testing.T) {
	for _, name := range []string{"WatchJobs", "WatchJob"} {
		t.Run(name, func(t *testing.T) {
			st := newFakeStore()
			st.jobs = []job.Job{{Tenant: "a", Name: "j", UID: "u1", Status: job.Status{State: job.Running}}}
			st.events = []job.Event{{ID: 7, Tenant: "a", Job: "j", JobUID: "u1", Reason: "Queued"}}
			srv := NewJobServer(Deps{Store: st, WatchPoll: 5 * time.Millisecond})
			stream := &fakeStream[pb.WatchJobResponse]{ctx: context.Background()}
			done := make(chan error, 1)
			go func() {
				if name == "WatchJobs" {
					done <- srv.WatchJobs(&pb.WatchJobsRequest{Parent: "tenants/a", AfterEventId: 6}, stream)
				} else {
					done <- srv.WatchJob(&pb.WatchJobRequest{Name: "tenants/a/jobs/j", AfterEventId: 6}, stream)
				}
			}()
			require.Eventually(t, func() bool { return len(stream.got()) == 1 }, 5*time.Second, time.Millisecond)

			st.mu.Lock()
			st.horizon = 8 // event 8 went before the stream read it
			st.events = append(st.events, job.Event{ID: 9, Tenant: "a", Job: "j", JobUID: "u1", Reason: "Running"})
			st.mu.Unlock()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the stream went on past the gap")
			}
			require.Equal(t, codes.OutOfRange, status.Code(err), "%v", err)
			require.Contains(t, status.Convert(err).Message(), "afterEventId: events up to position 8 were deleted")
			require.Len(t, stream.got(), 1, "nothing after the gap")
		})
	}
}

// A tenant watch that asked for bookmarks sends its read position once the
// events its filter left out moved it past the last message and nothing
// was sent for WatchBookmark; one that did not ask, or whose last message
// is its position already, gets none.
func TestWatchJobsBookmarks(t *testing.T) {
	ev := func(id int64, uid string) job.Event {
		return job.Event{ID: id, Tenant: "a", Job: "j-" + uid, JobUID: uid, Reason: "Queued"}
	}
	nlp := job.Job{Tenant: "a", Name: "j-nlp", UID: "nlp", Labels: map[string]string{"team": "nlp"}}
	cv := job.Job{Tenant: "a", Name: "j-cv", UID: "cv", Labels: map[string]string{"team": "cv"}}
	// Each watch resumes after event 1 (one that starts now would begin
	// after the fake's last event).
	resumed := func(t *testing.T, events []job.Event, bookmarks bool, every time.Duration) *fakeStream[pb.WatchJobResponse] {
		st := newFakeStore()
		st.jobs = []job.Job{nlp, cv}
		st.events = events
		srv := NewJobServer(Deps{Store: st, WatchPoll: 5 * time.Millisecond, WatchBookmark: every})
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		stream := &fakeStream[pb.WatchJobResponse]{ctx: ctx}
		go func() {
			_ = srv.WatchJobs(&pb.WatchJobsRequest{Parent: "tenants/a", Filter: "labels.team = nlp", AfterEventId: 1, Bookmarks: bookmarks}, stream)
		}()
		return stream
	}
	got := func(s *fakeStream[pb.WatchJobResponse]) []string { return watchSent(t, s) }
	filtered := []job.Event{ev(1, "cv"), ev(2, "nlp"), ev(3, "cv"), ev(4, "cv")}

	s := resumed(t, filtered, true, time.Nanosecond)
	require.Eventually(t, func() bool { return len(s.got()) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{"event 2", "bookmark 4"}, got(s))
	require.Never(t, func() bool { return len(s.got()) > 2 }, 50*time.Millisecond, 5*time.Millisecond, "one bookmark per position")

	s = resumed(t, filtered, false, time.Nanosecond)
	require.Eventually(t, func() bool { return len(s.got()) == 1 }, 5*time.Second, time.Millisecond)
	require.Never(t, func() bool { return len(s.got()) > 1 }, 50*time.Millisecond, 5*time.Millisecond, "not asked for")
	require.Equal(t, []string{"event 2"}, got(s))

	s = resumed(t, filtered, true, time.Hour)
	require.Eventually(t, func() bool { return len(s.got()) == 1 }, 5*time.Second, time.Millisecond)
	require.Never(t, func() bool { return len(s.got()) > 1 }, 50*time.Millisecond, 5*time.Millisecond, "sent a moment ago")

	s = resumed(t, []job.Event{ev(1, "cv"), ev(2, "nlp"), ev(3, "nlp")}, true, time.Nanosecond)
	require.Eventually(t, func() bool { return len(s.got()) == 2 }, 5*time.Second, time.Millisecond)
	require.Never(t, func() bool { return len(s.got()) > 2 }, 50*time.Millisecond, 5*time.Millisecond, "the last event is the position")
	require.Equal(t, []string{"event 2", "event 3"}, got(s))
}

// A job's watch that asked for bookmarks sends one, after the job's own
// events, once the tenant's position has moved past what it sent and
// nothing was sent for WatchBookmark; one that did not ask never does.
func TestWatchJobBookmarks(t *testing.T) {
	quiet := job.Job{Tenant: "a", Name: "quiet", UID: "q", Status: job.Status{State: job.Queued}}
	events := []job.Event{
		{ID: 1, Tenant: "a", Job: "quiet", JobUID: "q", Reason: "Queued"},
		{ID: 2, Tenant: "a", Job: "quiet", JobUID: "q", Reason: "Waiting"},
	}
	watch := func(t *testing.T, bookmarks bool, every time.Duration) *fakeStream[pb.WatchJobResponse] {
		st := newFakeStore()
		st.jobs = []job.Job{quiet}
		st.events = events
		st.lastID = 7 // the tenant's other jobs' events, 3 to 7
		srv := NewJobServer(Deps{Store: st, WatchPoll: 5 * time.Millisecond, WatchBookmark: every})
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		stream := &fakeStream[pb.WatchJobResponse]{ctx: ctx}
		go func() {
			_ = srv.WatchJob(&pb.WatchJobRequest{Name: "tenants/a/jobs/quiet", AfterEventId: 1, Bookmarks: bookmarks}, stream)
		}()
		return stream
	}
	got := func(s *fakeStream[pb.WatchJobResponse]) []string { return watchSent(t, s) }

	s := watch(t, true, time.Nanosecond)
	require.Eventually(t, func() bool { return len(s.got()) == 2 }, 5*time.Second, time.Millisecond)
	require.Never(t, func() bool { return len(s.got()) > 2 }, 50*time.Millisecond, 5*time.Millisecond, "one bookmark per position")
	require.Equal(t, []string{"event 2", "bookmark 7"}, got(s))

	s = watch(t, false, time.Nanosecond)
	require.Eventually(t, func() bool { return len(s.got()) == 1 }, 5*time.Second, time.Millisecond)
	require.Never(t, func() bool { return len(s.got()) > 1 }, 50*time.Millisecond, 5*time.Millisecond, "not asked for")

	s = watch(t, true, time.Hour)
	require.Eventually(t, func() bool { return len(s.got()) == 1 }, 5*time.Second, time.Millisecond)
	require.Never(t, func() bool { return len(s.got()) > 1 }, 50*time.Millisecond, 5*time.Millisecond, "an event was sent a moment ago")
}

// watchSent is what a watch sent, as "event N" and "bookmark N" (a bookmark
// carries no job).
func watchSent(t *testing.T, s *fakeStream[pb.WatchJobResponse]) []string {
	var out []string
	for _, m := range s.got() {
		if m.GetEvent() != nil {
			out = append(out, fmt.Sprintf("event %d", m.GetEvent().GetId()))
		} else {
			require.Nil(t, m.GetJob(), "a bookmark carries no job")
			out = append(out, fmt.Sprintf("bookmark %d", m.GetBookmarkEventId()))
		}
	}
	return out
}

// stallingStore answers nothing to a watch's poll, as a database behind a
// stalled connection does, until the poll's context ends.
type stallingStore struct{ *fakeStore }

func (s stallingStore) EventListByJob(ctx context.Context, _, _ string, _ int64, _ int) ([]job.Event, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("store: events: %w", ctx.Err())
}

// Issue 41, finding 3: a watch whose database stops answering ends
// UNAVAILABLE (clients reopen it) after WatchPollTimeout, not never.
func TestWatchEndsUnavailableWhenTheDatabaseStalls(t *testing.T) {
	st := newFakeStore()
	st.jobs = []job.Job{{Tenant: "a", Name: "j", UID: "u1", Status: job.Status{State: job.Running}}}
	srv := NewJobServer(Deps{Store: stallingStore{st}, WatchPoll: time.Hour, WatchPollTimeout: 50 * time.Millisecond})
	stream := &fakeStream[pb.WatchJobResponse]{ctx: context.Background()}
	err := srv.WatchJob(&pb.WatchJobRequest{Name: "tenants/a/jobs/j"}, stream)
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "reopen the watch")
}

// stallingOpen answers nothing to a watch's opening read.
type stallingOpen struct{ *fakeStore }

func (s stallingOpen) JobGet(ctx context.Context, _, _ string) (job.Job, error) {
	<-ctx.Done()
	return job.Job{}, fmt.Errorf("store: job: %w", ctx.Err())
}

// The opening reads of a watch are bounded too; a healthy watch outlives
// the bound (the opening timer stops once it follows).
func TestWatchOpeningReadsAreBounded(t *testing.T) {
	st := newFakeStore()
	st.jobs = []job.Job{{Tenant: "a", Name: "j", UID: "u1", Status: job.Status{State: job.Running}}}
	srv := NewJobServer(Deps{Store: stallingOpen{st}, WatchPoll: time.Hour, WatchPollTimeout: 50 * time.Millisecond})
	err := srv.WatchJob(&pb.WatchJobRequest{Name: "tenants/a/jobs/j"}, &fakeStream[pb.WatchJobResponse]{ctx: context.Background()})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)

	srv = NewJobServer(Deps{Store: st, WatchPoll: 10 * time.Millisecond, WatchPollTimeout: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = srv.WatchJob(&pb.WatchJobRequest{Name: "tenants/a/jobs/j"}, &fakeStream[pb.WatchJobResponse]{ctx: ctx})
	require.Equal(t, codes.DeadlineExceeded, status.Code(err), "the watch ran until its caller's deadline: %v", err)
}
