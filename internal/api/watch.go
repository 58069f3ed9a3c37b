package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// WatchJob streams a job's events, each with the job's state at the time it
// is sent (log tails left out, as in every watch message). It follows the
// job by uid, so a job created later under the same name is never mixed in.
// It ends once the job is final and its events have been sent.
func (s *JobServer) WatchJob(req *pb.WatchJobRequest, stream grpc.ServerStreamingServer[pb.WatchJobResponse]) (err error) {
	ctx, stall := context.WithCancelCause(stream.Context())
	defer stall(nil)
	// The opening reads are bounded as each poll is (follow).
	opening := time.AfterFunc(s.pollTimeout, func() { stall(errPollStalled) })
	defer func() { opening.Stop(); err = s.stalled(ctx, err) }()
	tenantID, name, err := parseJob("name", req.GetName())
	if err != nil {
		return err
	}
	if req.GetAfterEventId() < 0 {
		return invalid(violation("afterEventId", "must not be negative"))
	}
	// Subscribe before the first read, so nothing written after it is
	// only noticed at the next tick.
	wake, unsubscribe := s.wakeups.Subscribe(tenantID)
	defer unsubscribe()
	j, err := s.store.JobGet(ctx, tenantID, name)
	if err != nil {
		return err
	}
	cursor := req.GetAfterEventId()
	if cursor == 0 {
		// Start from now: the current state, then what happens next.
		if cursor, err = s.store.EventLastID(ctx, tenantID); err != nil {
			return err
		}
	}
	if err := watchEstablished(stream); err != nil {
		return err
	}
	if req.GetAfterEventId() == 0 {
		cur := jobSummaryToPB(j)
		if err := s.withQueue(ctx, tenantID, cur); err != nil {
			return err
		}
		if err := stream.Send(&pb.WatchJobResponse{Job: cur}); err != nil {
			return err
		}
	}
	checkResume := s.resumeCheck(tenantID, req.GetAfterEventId())
	// sent is the position the client knows (its last event or bookmark),
	// sentAt when it got it.
	sent, sentAt := cursor, s.now()
	opening.Stop()
	return s.follow(ctx, stall, wake, func() (bool, error) {
		// A bookmark's position is read before the job's events: every
		// event of the job at or below it has committed by then, so the
		// read below sees it, and once that read is sent the client has
		// all of them.
		var mark int64
		if req.GetBookmarks() && s.now().Sub(sentAt) >= s.bookmarkEvery {
			if mark, err = s.store.EventLastID(ctx, tenantID); err != nil {
				return false, err
			}
		}
		for {
			events, err := s.store.EventListByJob(ctx, tenantID, j.UID, cursor, maxPageSize)
			if err != nil {
				return false, err
			}
			if err := checkResume(ctx); err != nil {
				return false, err
			}
			if len(events) == 0 {
				break
			}
			jobs, err := s.store.JobGetMany(ctx, tenantID, []string{j.UID})
			if err != nil {
				return false, err
			}
			if len(jobs) == 1 {
				j = jobs[0] // else purged meanwhile: keep the last known
			}
			cur := jobSummaryToPB(j)
			if err := s.withQueue(ctx, tenantID, cur); err != nil {
				return false, err
			}
			if err := auth.Recheck(ctx); err != nil {
				return false, err
			}
			for _, e := range events {
				if err := stream.Send(&pb.WatchJobResponse{Event: eventToPB(e), Job: cur}); err != nil {
					return false, err
				}
				cursor = e.ID
			}
			sent, sentAt = cursor, s.now()
			// A final job: read once more, for events committed between the
			// two reads, and end when there are none.
			if len(events) < maxPageSize && !j.Status.State.Final() {
				return false, nil
			}
		}
		if j.Status.State.Final() {
			return true, nil
		}
		if mark > cursor && mark > sent {
			// The tenant's other jobs moved the position: a client that
			// resumes from it reads less, and stays within what event
			// retention keeps while this job is quiet. Whoever lost access
			// gets the end a new call would instead.
			if err := auth.Recheck(ctx); err != nil {
				return false, err
			}
			if err := stream.Send(&pb.WatchJobResponse{BookmarkEventId: mark}); err != nil {
				return false, err
			}
			cursor, sent, sentAt = mark, mark, s.now()
		}
		return false, nil
	})
}

// WatchJobs streams the events of every job of a tenant that matches the
// filter, each with its job as it is when sent (log tails left out), and,
// when asked, bookmarks: the position the stream has read to, once the
// events the filter left out have moved it and nothing was sent for
// bookmarkEvery (checked at each poll). The
// jobs of a batch of events are read in one query, by uid: events of a job
// that was deleted since still arrive, with the job as it was last; if even
// its row is gone (purged), with only its name and uid, whatever the filter.
func (s *JobServer) WatchJobs(req *pb.WatchJobsRequest, stream grpc.ServerStreamingServer[pb.WatchJobResponse]) (err error) {
	ctx, stall := context.WithCancelCause(stream.Context())
	defer stall(nil)
	// The opening reads are bounded as each poll is (follow).
	opening := time.AfterFunc(s.pollTimeout, func() { stall(errPollStalled) })
	defer func() { opening.Stop(); err = s.stalled(ctx, err) }()
	tenantID, err := parseTenant("parent", req.GetParent())
	if err != nil {
		return err
	}
	f, err := parseJobFilter("filter", req.GetFilter())
	if err != nil {
		return err
	}
	cursor := req.GetAfterEventId()
	if cursor < 0 {
		return invalid(violation("afterEventId", "must not be negative"))
	}
	wake, unsubscribe := s.wakeups.Subscribe(tenantID)
	defer unsubscribe()
	if cursor == 0 {
		if cursor, err = s.store.EventLastID(ctx, tenantID); err != nil {
			return err
		}
	}
	if err := watchEstablished(stream); err != nil {
		return err
	}
	checkResume := s.resumeCheck(tenantID, req.GetAfterEventId())
	// sent is the position the client knows (the last event or bookmark
	// it got), sentAt when it got it.
	sent, sentAt := cursor, s.now()
	opening.Stop()
	return s.follow(ctx, stall, wake, func() (bool, error) {
		// What the notification that woke this poll announced must be in
		// what it reads: a read that started after the notification
		// arrived. Streams woken by the same one share a read.
		since := s.wakeups.Last(tenantID)
		for {
			t, err := s.tails.read(ctx, tenantID, cursor, maxPageSize, since)
			if err != nil {
				return false, err
			}
			if err := checkResume(ctx); err != nil {
				return false, err
			}
			if len(t.events) == 0 {
				break
			}
			var msgs []*pb.WatchJobResponse
			for _, e := range t.events {
				if msg, ok := watchMessage(tenantID, e, t.jobs, f); ok {
					applyQueue(t.queue, t.queueAt, msg.GetJob())
					msgs = append(msgs, msg)
				}
			}
			if len(msgs) > 0 {
				// Whoever lost access before these events committed must
				// not see them: re-check against the tenant as read after
				// them (auth.Recheck).
				if err := auth.Recheck(auth.WithTenantRecord(ctx, tenantID, t.tenant, t.tenantGone)); err != nil {
					return false, err
				}
			}
			for _, msg := range msgs {
				if err := stream.Send(msg); err != nil {
					return false, err
				}
			}
			cursor = t.events[len(t.events)-1].ID
			if len(msgs) > 0 {
				sent, sentAt = msgs[len(msgs)-1].GetEvent().GetId(), s.now()
			}
			if len(t.events) < maxPageSize {
				break
			}
		}
		if req.GetBookmarks() && cursor > sent && s.now().Sub(sentAt) >= s.bookmarkEvery {
			// A position says that events happened: whoever lost access
			// before them gets the end a new call would, not a bookmark
			// (one tenant read, at most every bookmarkEvery).
			if err := auth.Recheck(ctx); err != nil {
				return false, err
			}
			if err := stream.Send(&pb.WatchJobResponse{BookmarkEventId: cursor}); err != nil {
				return false, err
			}
			sent, sentAt = cursor, s.now()
		}
		return false, nil
	})
}

// resumeCheck returns what a watch resumed after position after checks
// after its first read (resumable), and nothing after that; nothing at
// all for a watch that starts now (after 0).
func (s *JobServer) resumeCheck(tenantID string, after int64) func(context.Context) error {
	pending := after > 0
	return func(ctx context.Context) error {
		if !pending {
			return nil
		}
		pending = false
		return s.resumable(ctx, tenantID, after)
	}
}

// resumable refuses a watch resumed from a position that event retention
// has passed for the tenant (store.EventHorizon): events after it may be
// gone, and a watch that sent the rest would lose them silently. Every
// read that finds events checks this itself, in the same statement
// (store.EventsExpiredError, turned into this error by follow); this
// check, after a resumed
// watch's first read, covers a position after which nothing is left.
// Retention deletes and raises the horizon in one transaction, so a
// horizon read afterwards at or below the position means that read saw
// everything after it. Kubernetes answers such a watch 410 Gone; clients
// list again and watch from the list's watchAfterEventId.
func (s *JobServer) resumable(ctx context.Context, tenantID string, after int64) error {
	h, err := s.store.EventHorizon(ctx, tenantID)
	if err != nil {
		return err
	}
	if after < h {
		return expiredPosition(h, after)
	}
	return nil
}

// expiredPosition is the OUT_OF_RANGE of a watch whose position retention
// has passed.
func expiredPosition(horizon, after int64) error {
	return outOfRange(violation("afterEventId", fmt.Sprintf(
		"events up to position %d were deleted by event retention, so a watch from %d could miss some; "+
			"list the jobs again and watch from the list's watchAfterEventId", horizon, after)))
}

// watchEstablished sends the response headers as soon as a watch has its
// starting point: a gRPC client that has them (ClientStream.Header) knows
// every event from then on will reach it, and one that was refused (too
// many streams, not found) gets its status instead, without waiting for an
// event. The REST gateway still answers only with the first message.
func watchEstablished(stream grpc.ServerStream) error {
	return stream.SendHeader(metadata.MD{})
}

// watchMessage is what WatchJobs sends for e, if anything: the event with its
// job when the job, in the state the event recorded, matches f; with only
// the job's name and uid when the job is gone (its row purged), since
// nothing is known to filter on.
func watchMessage(tenantID string, e job.Event, jobs map[string]job.Job, f jobFilter) (*pb.WatchJobResponse, bool) {
	j, ok := jobs[e.JobUID]
	if !ok {
		return &pb.WatchJobResponse{Event: eventToPB(e), Job: &pb.Job{Name: jobName(tenantID, e.Job), Uid: e.JobUID}}, true
	}
	// A state filter applies to the state the event recorded, not to the
	// job's state when the batch is read: which events a watch sends must
	// not depend on how fast it reads (a job cancelled just after it was
	// submitted would otherwise let its Queued event through a
	// "state = CANCELLED" filter). Labels and creator never change.
	at := j
	if e.State != "" {
		at.Status.State = e.State
	}
	if !f.matches(at) {
		return nil, false
	}
	return &pb.WatchJobResponse{Event: eventToPB(e), Job: jobSummaryToPB(j)}, true
}

// errPollStalled ends a watch whose poll of the database took longer than
// pollTimeout: a database that accepts connections but answers nothing
// (issue 41, finding 3) must end the watch UNAVAILABLE, which clients
// reopen, rather than hold it for ever.
var errPollStalled = errors.New("the database did not answer in time")

// stalled turns err into UNAVAILABLE when the watch's database reads were
// cut off by the poll timeout (errPollStalled).
func (s *JobServer) stalled(ctx context.Context, err error) error {
	if err == nil || !errors.Is(context.Cause(ctx), errPollStalled) {
		return err
	}
	s.log.WarnContext(ctx, "watch ended: a read of the database took too long", "timeout", s.pollTimeout, "error", err)
	return status.Errorf(codes.Unavailable, "the database did not answer within %s; reopen the watch after the last event id", s.pollTimeout)
}

// follow calls poll until it reports done, waking when events of the
// watched tenant were written (wake) and at least every pollEvery. A poll
// that takes longer than pollTimeout is cancelled through stall (which
// must cancel the ctx poll uses) and the watch ends UNAVAILABLE.
func (s *JobServer) follow(ctx context.Context, stall context.CancelCauseFunc, wake <-chan struct{}, poll func() (done bool, err error)) error {
	t := time.NewTicker(s.pollEvery)
	defer t.Stop()
	for {
		watchdog := time.AfterFunc(s.pollTimeout, func() { stall(errPollStalled) })
		done, err := poll()
		watchdog.Stop()
		if errors.Is(context.Cause(ctx), errPollStalled) {
			return s.stalled(ctx, err)
		}
		if expired := (*store.EventsExpiredError)(nil); errors.As(err, &expired) {
			return expiredPosition(expired.Horizon, expired.After)
		}
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-wake:
		case <-t.C:
		}
	}
}
