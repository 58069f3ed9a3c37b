package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/fairq"
)

func callerIn(tenantID, subject string, admin bool) context.Context {
	ctx := auth.WithPrincipal(context.Background(), auth.Principal{Subject: subject, PlatformAdmin: admin})
	if tenantID != "" {
		ctx = auth.WithAccess(ctx, auth.Access{TenantID: tenantID})
	}
	return ctx
}

func TestFairnessLanes(t *testing.T) {
	f := newFairness(Fairness{
		Unary:   fairq.Limits{Concurrency: 1},
		Streams: 1,
		Admin:   fairq.Limits{Concurrency: 1},
	})
	unary := f.unaryInterceptor()
	hold := make(chan struct{})
	held := make(chan struct{}, 4)
	blocking := func(ctx context.Context, _ any) (any, error) { held <- struct{}{}; <-hold; return "done", nil }
	quick := func(ctx context.Context, _ any) (any, error) { return "done", nil }

	// vision's one seat is taken.
	errc := make(chan error, 1)
	go func() { _, err := unary(callerIn("vision", "alice", false), nil, nil, blocking); errc <- err }()
	<-held

	_, err := unary(callerIn("vision", "bob", false), nil, nil, quick)
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), `tenant "vision" is at its limit of 1 concurrent requests`)

	for name, ctx := range map[string]context.Context{
		"another tenant":             callerIn("speech", "carol", false),
		"a call naming no tenant":    callerIn("", "bob", false),
		"a platform admin in vision": callerIn("vision", "root", true),
		"a call without a principal": context.Background(),
	} {
		out, err := unary(ctx, nil, nil, quick)
		require.NoError(t, err, name)
		require.Equal(t, "done", out, name)
	}

	close(hold)
	require.NoError(t, <-errc)
	_, err = unary(callerIn("vision", "bob", false), nil, nil, quick)
	require.NoError(t, err, "the seat is free again")
}

type testStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s testStream) Context() context.Context { return s.ctx }
func (s testStream) RecvMsg(any) error        { return nil }

func TestFairnessStreamsCountApart(t *testing.T) {
	f := newFairness(Fairness{Unary: fairq.Limits{Concurrency: 1}, Streams: 1, Admin: fairq.Limits{Concurrency: 1}})
	stream := f.streamInterceptor()
	hold := make(chan struct{})
	held := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- stream(nil, testStream{ctx: callerIn("vision", "alice", false)}, nil, func(_ any, ss grpc.ServerStream) error {
			if err := ss.RecvMsg(nil); err != nil {
				return err
			}
			held <- struct{}{}
			<-hold
			return nil
		})
	}()
	<-held
	err := stream(nil, testStream{ctx: callerIn("vision", "alice", false)}, nil, func(_ any, ss grpc.ServerStream) error { return ss.RecvMsg(nil) })
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "watches and log streams open")

	// A unary call of the tenant still has its seat.
	_, err = f.unaryInterceptor()(callerIn("vision", "alice", false), nil, nil, func(context.Context, any) (any, error) { return nil, nil })
	require.NoError(t, err)
	close(hold)
	require.NoError(t, <-errc)
}

func TestFairnessWaitEndsWithTheCall(t *testing.T) {
	f := newFairness(Fairness{Unary: fairq.Limits{Concurrency: 1, Queue: 1}, Streams: 1, Admin: fairq.Limits{Concurrency: 1}})
	unary := f.unaryInterceptor()
	hold := make(chan struct{})
	defer close(hold)
	held := make(chan struct{}, 1)
	go func() {
		_, _ = unary(callerIn("vision", "alice", false), nil, nil, func(context.Context, any) (any, error) { held <- struct{}{}; <-hold; return nil, nil })
	}()
	<-held
	ctx, cancel := context.WithTimeout(callerIn("vision", "bob", false), 20*time.Millisecond)
	defer cancel()
	_, err := unary(ctx, nil, nil, func(context.Context, any) (any, error) { return nil, nil })
	require.Equal(t, codes.DeadlineExceeded, status.Code(err))
}
