package api

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// GetJobLogs streams a replica's log from Kubernetes while its pod exists,
// and the tail the worker kept in Postgres once it is gone.
func (s *JobServer) GetJobLogs(req *pb.GetJobLogsRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	tenantID, name, err := parseJob("name", req.GetName())
	if err != nil {
		return err
	}
	if req.GetTailLines() < 0 {
		return invalid(violation("tailLines", "must not be negative"))
	}
	j, err := s.store.JobGet(ctx, tenantID, name)
	if err != nil {
		return err
	}
	rep, err := pickReplica(j, req.GetReplica())
	if err != nil {
		return err
	}
	send := func(b []byte) error {
		return stream.Send(&httpbody.HttpBody{ContentType: "text/plain; charset=utf-8", Data: b})
	}
	if s.kube != nil && rep.Pod != "" {
		rc, err := s.kube.PodLogs(ctx, s.nsPrefix+tenantID, rep.Pod, req.GetFollow(), int64(req.GetTailLines()))
		switch {
		case err == nil:
			defer rc.Close()
			return copyChunks(rc, send)
		case !errors.Is(err, ErrPodGone):
			return status.Errorf(codes.Unavailable, "reading the log of %s: %v", rep.Pod, err)
		}
	}
	if rep.LastTermination == nil || rep.LastTermination.LogTail == "" {
		return status.Errorf(codes.NotFound, "no log is available for %s: its pod is gone and no tail was kept", job.ReplicaName(rep.Type, rep.Index))
	}
	return send([]byte(tailLines(rep.LastTermination.LogTail, int(req.GetTailLines()))))
}

// pickReplica finds the replica a logs request names; by default the chief,
// else worker 0.
func pickReplica(j job.Job, want string) (job.ReplicaStatus, error) {
	if want == "" {
		for _, r := range j.Status.Replicas {
			if r.Type == job.Chief {
				return r, nil
			}
		}
		want = job.ReplicaName(job.Worker, 0)
	}
	t, idx, err := job.ParseReplicaName(want)
	if err != nil {
		return job.ReplicaStatus{}, invalid(violation("replica", "must look like worker-0, chief-0, ps-1 or evaluator-0"))
	}
	for _, r := range j.Status.Replicas {
		if r.Type == t && r.Index == idx {
			return r, nil
		}
	}
	for _, r := range j.Spec.Replicas {
		if r.Type == t && idx < r.Count {
			// Declared but not started yet.
			return job.ReplicaStatus{Type: t, Index: idx}, nil
		}
	}
	return job.ReplicaStatus{}, status.Errorf(codes.NotFound, "job %s has no replica %s", quote(j.Name), quote(want))
}

func copyChunks(r io.Reader, send func([]byte) error) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if serr := send(append([]byte(nil), buf[:n]...)); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return status.Errorf(codes.Unavailable, "log stream ended: %v", err)
		}
	}
}

func tailLines(s string, n int) string {
	if n <= 0 {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// WatchJob streams a job's events, each with the job's state at the time it
// is sent. It ends once the job is final and its events have been sent.
func (s *JobServer) WatchJob(req *pb.WatchJobRequest, stream grpc.ServerStreamingServer[pb.WatchJobResponse]) error {
	ctx := stream.Context()
	tenantID, name, err := parseJob("name", req.GetName())
	if err != nil {
		return err
	}
	if req.GetAfterEventId() < 0 {
		return invalid(violation("afterEventId", "must not be negative"))
	}
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
		if err := stream.Send(&pb.WatchJobResponse{Job: jobToPB(j)}); err != nil {
			return err
		}
	}
	return s.follow(ctx, func() (bool, error) {
		events, err := s.store.EventList(ctx, tenantID, name, cursor, maxPageSize)
		if err != nil {
			return false, err
		}
		if len(events) == 0 {
			return j.Status.State.Final(), nil
		}
		if j, err = s.store.JobGet(ctx, tenantID, name); err != nil {
			return false, err
		}
		for _, e := range events {
			if err := stream.Send(&pb.WatchJobResponse{Event: eventToPB(e), Job: jobToPB(j)}); err != nil {
				return false, err
			}
			cursor = e.ID
		}
		return false, nil
	})
}

// WatchJobs streams the events of every job of a tenant matching the filter.
func (s *JobServer) WatchJobs(req *pb.WatchJobsRequest, stream grpc.ServerStreamingServer[pb.WatchJobResponse]) error {
	ctx := stream.Context()
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
	if cursor == 0 {
		if cursor, err = s.store.EventLastID(ctx, tenantID); err != nil {
			return err
		}
	}
	return s.follow(ctx, func() (bool, error) {
		events, err := s.store.EventListTenant(ctx, tenantID, cursor, maxPageSize)
		if err != nil {
			return false, err
		}
		jobs := map[string]job.Job{}
		for _, e := range events {
			cursor = e.ID
			j, seen := jobs[e.Job]
			if !seen {
				j, err = s.store.JobGet(ctx, tenantID, e.Job)
				if errors.Is(err, store.ErrNotFound) {
					continue // deleted since
				}
				if err != nil {
					return false, err
				}
				jobs[e.Job] = j
			}
			if !f.matches(j) {
				continue
			}
			if err := stream.Send(&pb.WatchJobResponse{Event: eventToPB(e), Job: jobToPB(j)}); err != nil {
				return false, err
			}
		}
		return false, nil
	})
}

// follow calls poll until it reports done, waking on event notifications and
// at least every pollEvery.
func (s *JobServer) follow(ctx context.Context, poll func() (done bool, err error)) error {
	var wake <-chan string
	if s.events != nil {
		ch, cancel := s.events.Subscribe(store.ChannelEvents)
		defer cancel()
		wake = ch
	}
	t := time.NewTicker(s.pollEvery)
	defer t.Stop()
	for {
		done, err := poll()
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

func (f jobFilter) matches(j job.Job) bool {
	if len(f.States) > 0 {
		ok := false
		for _, s := range f.States {
			ok = ok || s == j.Status.State
		}
		if !ok {
			return false
		}
	}
	for k, v := range f.LabelEquals {
		if j.Labels[k] != v {
			return false
		}
	}
	for _, k := range f.LabelExists {
		if _, ok := j.Labels[k]; !ok {
			return false
		}
	}
	return true
}
