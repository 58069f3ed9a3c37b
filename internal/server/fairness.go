package server

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/fairq"
)

// Fairness bounds each tenant's share of the server (package fairq): no
// tenant's flood of requests delays another's. Unary calls and streams
// (watches, log follows) count apart, since a stream holds its seat for
// as long as it is open. Platform admins have a lane of their own, so an
// operator can always reach a server that tenants keep busy; calls without
// a caller (health, reflection) are not counted at all.
type Fairness struct {
	// Unary bounds each tenant's unary calls: seats, a queue, the longest
	// wait. Calls that name no tenant (ListTenants) count to their caller
	// as a tenant of their own.
	Unary fairq.Limits
	// Streams is how many streams each tenant may hold open; beyond it a
	// new one is refused at once.
	Streams int
	// Admin bounds the platform admins' calls, all of them together.
	Admin fairq.Limits
}

// DefaultFairness are the limits serve starts with (its --tenant-* flags).
var DefaultFairness = Fairness{
	Unary:   fairq.Limits{Concurrency: 8, Queue: 256, Wait: 10 * time.Second},
	Streams: 256,
	Admin:   fairq.Limits{Concurrency: 32, Queue: 256, Wait: 10 * time.Second},
}

// fairness holds the admitters of one server.
type fairness struct {
	unary, streams, admin *fairq.Admitter
}

func newFairness(f Fairness) *fairness {
	return &fairness{
		unary:   fairq.New(f.Unary),
		streams: fairq.New(fairq.Limits{Concurrency: f.Streams}),
		admin:   fairq.New(f.Admin),
	}
}

// adminLane is the admin admitter's one key: admins share their lane.
const adminLane = "platform admins"

// acquire takes the seat the call needs, or returns the status refusing
// it. ok is false for calls that are not counted.
func (f *fairness) acquire(ctx context.Context, stream bool) (release func(), err error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Cluster != "" {
		// Uncounted: no caller (health, reflection), or a remote
		// cluster's agent, whose calls are that cluster's whole work
		// (bounded by its own --concurrency), not a tenant's.
		return func() {}, nil
	}
	adm, key := f.unary, ""
	if a, ok := auth.AccessFrom(ctx); ok && a.TenantID != "" {
		key = "tenant " + strconv.Quote(a.TenantID)
	} else {
		key = "caller " + strconv.Quote(p.Subject)
	}
	switch {
	case p.PlatformAdmin:
		adm, key = f.admin, adminLane
	case stream:
		adm = f.streams
	}
	release, err = adm.Acquire(ctx, key, p.Subject)
	if err == nil {
		return release, nil
	}
	var rej *fairq.Rejected
	if errors.As(err, &rej) {
		// Retry-After for gRPC clients; the gateway sets the HTTP header
		// for RESOURCE_EXHAUSTED itself.
		_ = grpc.SetHeader(ctx, metadata.Pairs("retry-after", retryAfter))
		if stream {
			return nil, status.Errorf(codes.ResourceExhausted,
				"%s has %d watches and log streams open, its most at a time; close one and retry", rej.Lane, rej.Limits.Concurrency)
		}
		return nil, status.Error(codes.ResourceExhausted, rej.Error())
	}
	return nil, status.FromContextError(err).Err()
}

func (f *fairness) unaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		release, err := f.acquire(ctx, false)
		if err != nil {
			return nil, err
		}
		defer release()
		return h(ctx, req)
	}
}

// streamInterceptor counts a stream from its first message on: a stream's
// tenant is known once auth has authorized that message (auth's stream
// wrapper, outside this one), not when the interceptor runs. A stream
// refused its seat fails that RecvMsg, so the handler returns the refusal.
func (f *fairness) streamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		fs := &fairStream{ServerStream: ss, f: f}
		defer fs.release()
		return h(srv, fs)
	}
}

type fairStream struct {
	grpc.ServerStream
	f *fairness

	mu    sync.Mutex
	tried bool
	done  func()
}

func (s *fairStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tried {
		return nil
	}
	s.tried = true
	release, err := s.f.acquire(s.ServerStream.Context(), true) // never waits: streams have no queue
	if err != nil {
		return err
	}
	s.done = release
	return nil
}

func (s *fairStream) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		s.done()
		s.done = nil
	}
}
