package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/grpctest"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// bearerIsSubject authenticates "Bearer <subject>".
type bearerIsSubject struct{}

func (bearerIsSubject) Authenticate(_ context.Context, token string) (auth.Principal, error) {
	return auth.Principal{Subject: token}, nil
}

// members is the authorizer's view of tenant "a", changed by the test
// without any notification.
type members struct {
	mu sync.Mutex
	m  []tenant.Member
}

func (s *members) TenantGet(_ context.Context, id string) (tenant.Tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != "a" {
		return tenant.Tenant{}, fmt.Errorf("%w: %q", auth.ErrTenantNotFound, id)
	}
	return tenant.Tenant{ID: "a", State: tenant.Active, Members: s.m}, nil
}

func (s *members) set(m ...tenant.Member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m = m
}

// A bookmark is a position, and a position says that events happened: a
// watcher who lost access gets the end a new call would get instead, even
// when the guard has not noticed (no change notification, no recheck due),
// as for the events themselves.
func TestWatchJobsBookmarkRechecksAccess(t *testing.T) {
	ev := func(id int64, uid string) job.Event {
		return job.Event{ID: id, Tenant: "a", Job: "j-" + uid, JobUID: uid, Reason: "Queued"}
	}
	open := func(t *testing.T, revoke bool) []string {
		st := newFakeStore()
		st.jobs = []job.Job{
			{Tenant: "a", Name: "j-nlp", UID: "nlp", Labels: map[string]string{"team": "nlp"}},
			{Tenant: "a", Name: "j-cv", UID: "cv", Labels: map[string]string{"team": "cv"}},
		}
		st.events = []job.Event{ev(1, "cv"), ev(2, "nlp"), ev(3, "cv"), ev(4, "cv")}
		vera := tenant.Member{Subject: "vera", Role: tenant.RoleViewer}
		// The record read with the events (the event's own recheck): vera
		// was a member then.
		st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active, Members: []tenant.Member{vera}}
		src := &members{m: []tenant.Member{vera}}
		ic := auth.NewInterceptor(bearerIsSubject{}, auth.NewAuthorizer(src),
			auth.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
			auth.WithStreamPolicy(auth.StreamPolicy{Recheck: time.Hour}))
		srv := grpc.NewServer(grpc.ChainStreamInterceptor(ic.Stream()))
		pb.RegisterJobServiceServer(srv, NewJobServer(Deps{Store: st, WatchPoll: 5 * time.Millisecond, WatchBookmark: 300 * time.Millisecond}))
		conn := grpctest.Serve(t, srv)

		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer vera"), 10*time.Second)
		t.Cleanup(cancel)
		stream, err := pb.NewJobServiceClient(conn).WatchJobs(ctx, &pb.WatchJobsRequest{
			Parent: "tenants/a", Filter: "labels.team = nlp", AfterEventId: 1, Bookmarks: true})
		require.NoError(t, err)
		m, err := stream.Recv()
		require.NoError(t, err)
		got := []string{fmt.Sprintf("event %d", m.GetEvent().GetId())}
		if revoke {
			src.set() // vera is no member any more; nobody tells the guard
		}
		m, err = stream.Recv()
		if err != nil {
			return append(got, status.Code(err).String())
		}
		return append(got, fmt.Sprintf("bookmark %d", m.GetBookmarkEventId()))
	}
	require.Equal(t, []string{"event 2", "bookmark 4"}, open(t, false))
	require.Equal(t, []string{"event 2", codes.NotFound.String()}, open(t, true))
}
