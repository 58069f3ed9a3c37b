package auth

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/grpctest"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// mutableTenants is a TenantSource whose tenants a test changes.
type mutableTenants struct {
	mu sync.Mutex
	m  map[string]tenant.Tenant
}

func (f *mutableTenants) TenantGet(_ context.Context, id string) (tenant.Tenant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.m[id]
	if !ok {
		return tenant.Tenant{}, fmt.Errorf("%w: %s", ErrTenantNotFound, id)
	}
	return t, nil
}

func (f *mutableTenants) setMembers(id string, ms ...tenant.Member) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.m[id]
	t.Members = ms
	f.m[id] = t
}

// holdingJobs answers WatchJobs with one message, then holds the stream
// open as a watch does, until the client or the guard ends it. On each
// value of more it sends another message, after Recheck as watches do.
type holdingJobs struct {
	pb.UnimplementedJobServiceServer
	more <-chan struct{}
}

func (h holdingJobs) WatchJobs(req *pb.WatchJobsRequest, stream grpc.ServerStreamingServer[pb.WatchJobResponse]) error {
	ctx := stream.Context()
	if err := stream.Send(&pb.WatchJobResponse{Job: &pb.Job{Name: req.GetParent() + "/jobs/j"}}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-h.more:
			if err := Recheck(ctx); err != nil {
				return err
			}
			if err := stream.Send(&pb.WatchJobResponse{Job: &pb.Job{Name: req.GetParent() + "/jobs/later"}}); err != nil {
				return err
			}
		}
	}
}

type streamWorld struct {
	tenants *mutableTenants
	changes chan struct{}
	more    chan struct{}
	jobs    pb.JobServiceClient
}

func newStreamWorld(t *testing.T, authn Authenticator, pol StreamPolicy) *streamWorld {
	t.Helper()
	w := &streamWorld{
		tenants: &mutableTenants{m: map[string]tenant.Tenant{
			"alpha": {ID: "alpha", State: tenant.Active, Members: []tenant.Member{{Subject: "vera", Role: tenant.RoleViewer}}},
		}},
		changes: make(chan struct{}, 1),
		more:    make(chan struct{}),
	}
	pol.TenantChanges = func(id string) (<-chan struct{}, func()) {
		require.Equal(t, "alpha", id)
		return w.changes, func() {}
	}
	ic := NewInterceptor(authn, NewAuthorizer(w.tenants), WithLogger(discardLogger()), WithStreamPolicy(pol))
	srv := grpc.NewServer(grpc.ChainStreamInterceptor(ic.Stream()))
	pb.RegisterJobServiceServer(srv, holdingJobs{more: w.more})
	w.jobs = pb.NewJobServiceClient(grpctest.Serve(t, srv))
	return w
}

// open starts a watch as vera and waits for its first message.
func (w *streamWorld) open(t *testing.T) grpc.ServerStreamingClient[pb.WatchJobResponse] {
	t.Helper()
	ctx, cancel := context.WithTimeout(withAuth("Bearer tok-vera"), 10*time.Second)
	t.Cleanup(cancel)
	stream, err := w.jobs.WatchJobs(ctx, &pb.WatchJobsRequest{Parent: "tenants/alpha"})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err)
	return stream
}

// ended waits for the stream's end and returns its status.
func ended(t *testing.T, stream grpc.ServerStreamingClient[pb.WatchJobResponse]) *status.Status {
	t.Helper()
	_, err := stream.Recv()
	require.Error(t, err)
	return status.Convert(err)
}

// A viewer removed from the tenant loses an open watch as soon as the
// tenant changes, with the NOT_FOUND a new call would get.
func TestStreamEndsWhenAccessIsRevoked(t *testing.T) {
	w := newStreamWorld(t, testTokens, StreamPolicy{Recheck: time.Hour})
	stream := w.open(t)

	w.changes <- struct{}{} // a change that keeps vera's access
	require.Eventually(t, func() bool { return len(w.changes) == 0 }, 5*time.Second, 5*time.Millisecond)
	w.tenants.setMembers("alpha")
	w.changes <- struct{}{}
	st := ended(t, stream)
	require.Equal(t, codes.NotFound, st.Code(), st.Message())
	require.Equal(t, `tenant "alpha" not found`, st.Message())
}

// A handler about to send what was written after a member's removal
// re-checks first, so the removed member never sees it, whether or not the
// guard has heard of the change yet.
func TestRecheckBeforeSending(t *testing.T) {
	w := newStreamWorld(t, testTokens, StreamPolicy{Recheck: time.Hour})
	stream := w.open(t)
	w.more <- struct{}{}
	m, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, "tenants/alpha/jobs/later", m.GetJob().GetName())

	w.tenants.setMembers("alpha") // no notification: the guard does not know
	w.more <- struct{}{}
	st := ended(t, stream)
	require.Equal(t, codes.NotFound, st.Code(), st.Message())
	require.Equal(t, `tenant "alpha" not found`, st.Message())
}

func TestRecheckOutsideAStream(t *testing.T) {
	require.NoError(t, Recheck(context.Background()))
}

// Without a notification (lost while a listener reconnected), the periodic
// re-check ends it.
func TestStreamRecheckWithoutNotification(t *testing.T) {
	w := newStreamWorld(t, testTokens, StreamPolicy{Recheck: 50 * time.Millisecond})
	stream := w.open(t)
	w.tenants.setMembers("alpha")
	require.Equal(t, codes.NotFound, ended(t, stream).Code())
}

func TestStreamEndsWhenTheTokenExpires(t *testing.T) {
	authn := fakeAuthn{"tok-vera": {Subject: "vera", Expiry: time.Now().Add(300 * time.Millisecond)}}
	w := newStreamWorld(t, authn, StreamPolicy{})
	began := time.Now()
	stream := w.open(t)
	st := ended(t, stream)
	require.Equal(t, codes.Unauthenticated, st.Code(), st.Message())
	require.Contains(t, st.Message(), "expired")
	require.Less(t, time.Since(began), 5*time.Second)
}

func TestStreamMaxLifetime(t *testing.T) {
	w := newStreamWorld(t, testTokens, StreamPolicy{MaxLifetime: 200 * time.Millisecond})
	stream := w.open(t)
	st := ended(t, stream)
	require.Equal(t, codes.Unavailable, st.Code(), "clients resume an UNAVAILABLE watch: %s", st.Message())
	require.Contains(t, st.Message(), "maximum lifetime")
}

// A stream the client ends is not reported as anything else.
func TestStreamClientCancelIsCancel(t *testing.T) {
	w := newStreamWorld(t, testTokens, StreamPolicy{})
	ctx, cancel := context.WithCancel(withAuth("Bearer tok-vera"))
	stream, err := w.jobs.WatchJobs(ctx, &pb.WatchJobsRequest{Parent: "tenants/alpha"})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err)
	cancel()
	_, err = stream.Recv()
	require.Equal(t, codes.Canceled, status.Code(err))
}
