package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/resname"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func newJobsLogsCmd(a *app) *cobra.Command {
	var (
		replica string
		follow  bool
		tail    int32
	)
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Print a replica's log (the chief's, else worker-0's)",
		Long: `Print a replica's log as it streams from the server. While the pod runs
the log comes from Kubernetes (-f keeps following it); once the pod is gone,
the tail Trainyard kept is printed.`,
		Example: `  tyctl jobs logs mnist-1 --replica worker-1 -f --tail 100`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Job, args[0])
			if err != nil {
				return err
			}
			c, err := a.jobClient()
			if err != nil {
				return err
			}
			stream, err := c.GetJobLogs(cmd.Context(), &pb.GetJobLogsRequest{Name: name, Replica: replica, Follow: follow, TailLines: tail})
			if err != nil {
				return err
			}
			for {
				chunk, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				if _, err := a.stdout.Write(chunk.GetData()); err != nil {
					return err
				}
			}
		},
	}
	cmd.Flags().StringVar(&replica, "replica", "", "replica as <type>-<index>, e.g. worker-0, ps-1, chief-0")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep streaming while the pod runs")
	cmd.Flags().Int32Var(&tail, "tail", 0, "only the last N lines; 0 for all")
	return cmd
}

func newJobsWatchCmd(a *app) *cobra.Command {
	var (
		after  int64
		filter string
	)
	cmd := &cobra.Command{
		Use:   "watch [NAME]",
		Short: "Print a job's events as they happen; exit when it ends",
		Long: `Print events as they happen, one line each (one JSON document per line
with -o json).

With NAME, the first line is the job's current state and tyctl exits when the
job has ended: exit code 0 if it SUCCEEDED, 1 if it FAILED or was CANCELLED.
Without NAME, every job of the tenant matching --filter is watched until
interrupted.

A dropped connection is resumed after the last event seen; --after-event
resumes an earlier watch the same way (event ids are in the -o json output
and in 'tyctl jobs events'). When the server no longer keeps the events after
that point (event retention), a watch of NAME goes on from the job's current
state and says so on stderr; a tenant-wide watch fails with OUT_OF_RANGE
('tyctl jobs list --watch' lists again instead).`,
		Example: `  tyctl jobs watch mnist-1 && echo trained`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if after < 0 {
				return errors.New("--after-event must not be negative")
			}
			c, err := a.jobClient()
			if err != nil {
				return err
			}
			if len(args) == 0 {
				parent, err := a.tenantParent()
				if err != nil {
					return err
				}
				return a.watchTenant(cmd.Context(), c, parent, filter, after)
			}
			if filter != "" {
				return errors.New("--filter applies to a tenant-wide watch, without NAME")
			}
			name, err := a.childName(resname.Job, args[0])
			if err != nil {
				return err
			}
			return a.watchJob(cmd.Context(), c, name, after)
		},
	}
	cmd.Flags().Int64Var(&after, "after-event", 0, "resume after this event id")
	cmd.Flags().StringVar(&filter, "filter", "", "without NAME: which jobs, as in 'jobs list --filter'")
	return cmd
}

// watchJob follows one job until it is final. The server ends the stream
// once the job is final and its events are sent; any other end is a
// disconnect, resumed after the last event or bookmark seen (bookmarks
// keep a quiet job's position within what event retention keeps).
func (a *app) watchJob(ctx context.Context, c pb.JobServiceClient, name string, after int64) error {
	r := resumer{cursor: after}
	var last pb.JobState
	for {
		stream, err := c.WatchJob(ctx, &pb.WatchJobRequest{Name: name, AfterEventId: r.cursor, Bookmarks: true})
		if err == nil {
			err = a.drain(stream, &r, func(m *pb.WatchJobResponse) {
				if e := m.GetEvent(); e != nil {
					// A batch of events all carry the job as it is now; the event says what it was then.
					last = e.GetState()
				} else {
					last = m.GetJob().GetStatus().GetState()
				}
			})
		}
		if errors.Is(err, io.EOF) {
			if !finalState(last) {
				// Resumed after the end (--after-event on a finished job): ask.
				callCtx, cancel := context.WithTimeout(ctx, a.flags.timeout)
				j, gerr := c.GetJob(callCtx, &pb.GetJobRequest{Name: name})
				cancel()
				if gerr != nil {
					return gerr
				}
				if last = j.GetStatus().GetState(); finalState(last) {
					if perr := a.printWatch(&pb.WatchJobResponse{Job: j}); perr != nil {
						return perr
					}
				}
			}
			if finalState(last) {
				if last == pb.JobState_JOB_STATE_SUCCEEDED {
					return nil
				}
				return exitStatus(1)
			}
			err = status.Error(codes.Unavailable, "the watch ended before the job did")
		}
		if status.Code(err) == codes.OutOfRange && r.cursor > 0 {
			// The server no longer keeps the events after the cursor (event
			// retention, a long outage). A fresh watch starts with the job as
			// it is now, which is what the exit code depends on; only the
			// events in between are lost, and the user is told so.
			fmt.Fprintf(a.stderr, "tyctl: the events after %d are no longer kept (%s); following the job from its current state\n",
				r.cursor, status.Convert(err).Message())
			r.cursor = 0
			continue
		}
		if werr := r.wait(ctx, a.stderr, err); werr != nil {
			return werr
		}
	}
}

// watchTenant follows a tenant's jobs until interrupted, which is its
// normal end: exit code 0. It asks for bookmarks, so that a filter that
// rarely matches resumes from where the server read to, not from its
// last match; they move the cursor and are not printed.
func (a *app) watchTenant(ctx context.Context, c pb.JobServiceClient, parent, filter string, after int64) error {
	r := resumer{cursor: after}
	for {
		stream, err := c.WatchJobs(ctx, &pb.WatchJobsRequest{Parent: parent, Filter: filter, AfterEventId: r.cursor, Bookmarks: true})
		if err == nil {
			err = a.drain(stream, &r, func(*pb.WatchJobResponse) {})
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, io.EOF) {
			err = status.Error(codes.Unavailable, "the server ended the watch")
		}
		if werr := r.wait(ctx, a.stderr, err); werr != nil {
			return werr
		}
	}
}

// drain prints a watch stream's messages until it ends, and returns how.
func (a *app) drain(stream grpc.ServerStreamingClient[pb.WatchJobResponse], r *resumer, seen func(*pb.WatchJobResponse)) error {
	for {
		m, err := stream.Recv()
		if err != nil {
			return err
		}
		r.received(m)
		if m.GetEvent() == nil && m.GetJob() == nil {
			continue // a bookmark
		}
		seen(m)
		if err := a.printWatch(m); err != nil {
			return err
		}
	}
}

func (a *app) printWatch(m *pb.WatchJobResponse) error {
	switch a.flags.output {
	case outJSON:
		b, err := marshalJSON(m, false)
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(b)
		return err
	case outYAML:
		b, err := marshalYAML(m)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "---\n%s", b)
		return err
	}
	writeWatchLine(a.stdout, m)
	return nil
}

// resumer remembers where a watch got to and paces reconnects: a few tries
// with growing pauses, counted afresh whenever a message arrives.
type resumer struct {
	cursor   int64
	failures int
}

const maxWatchRetries = 5

func (r *resumer) received(m *pb.WatchJobResponse) {
	r.failures = 0
	if e := m.GetEvent(); e != nil {
		r.cursor = e.GetId()
	} else if b := m.GetBookmarkEventId(); b > r.cursor {
		r.cursor = b
	}
}

// wait decides whether err is worth a reconnect and, if so, sleeps first.
// It returns err itself when not.
func (r *resumer) wait(ctx context.Context, stderr io.Writer, err error) error {
	if ctx.Err() != nil || status.Code(err) != codes.Unavailable || r.failures >= maxWatchRetries {
		return err
	}
	r.failures++
	pause := time.Duration(1<<(r.failures-1)) * 500 * time.Millisecond
	fmt.Fprintf(stderr, "tyctl: watch interrupted (%s); resuming after event %d in %s\n", status.Convert(err).Message(), r.cursor, pause)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pause):
		return nil
	}
}
