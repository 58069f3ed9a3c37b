package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trainyard/trainyard/internal/api"
	"github.com/trainyard/trainyard/internal/store"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestToStatusMasksInternalErrors(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx := context.Background()
	for err, want := range map[error]codes.Code{
		fmt.Errorf("job %q: %w", "x", store.ErrNotFound):              codes.NotFound,
		fmt.Errorf("%w: job x exists", store.ErrAlreadyExists):        codes.AlreadyExists,
		fmt.Errorf("%w: job is RUNNING", store.ErrFailedPrecondition): codes.FailedPrecondition,
		store.ErrConflict: codes.Aborted,
		context.Canceled:  codes.Canceled,
		status.Error(codes.PermissionDenied, "no"): codes.PermissionDenied,
	} {
		require.Equal(t, want, status.Code(toStatus(ctx, log, api.Code, "/m", err)), err.Error())
	}
	require.NoError(t, toStatus(ctx, log, api.Code, "/m", nil))

	leak := errors.New(`ERROR: duplicate key value violates unique constraint "jobs_pkey" (SQLSTATE 23505) at store.go:123`)
	st := status.Convert(toStatus(ctx, log, api.Code, "/trainyard.v1.JobService/CreateJob", leak))
	require.Equal(t, codes.Internal, st.Code())
	require.NotContains(t, st.Message(), "SQLSTATE")
	require.NotContains(t, st.Message(), "store.go")
	// The id in the message is the one logged beside the real error.
	id := strings.TrimSuffix(strings.TrimPrefix(st.Message(), "internal error (id "), ")")
	require.Len(t, id, 12)
	require.Contains(t, logs.String(), "error_id="+id)
	require.Contains(t, logs.String(), "SQLSTATE 23505")

	down := fmt.Errorf("%w: tenant \"a\": dial tcp 10.0.3.7:5432: connect: connection refused", store.ErrUnavailable)
	st = status.Convert(toStatus(ctx, log, api.Code, "/trainyard.v1.JobService/GetJob", down))
	require.Equal(t, codes.Unavailable, st.Code(), "clients and retry policies retry an outage")
	require.NotContains(t, st.Message(), "10.0.3.7")
	require.Contains(t, logs.String(), "10.0.3.7")
}

// The interceptor refuses before the handler runs, for unary calls and for
// streams.
func TestErrorInterceptorsCheckRequests(t *testing.T) {
	unary, stream := errorInterceptors(slog.Default(), api.Code, api.CheckRequest)
	called := false
	_, err := unary(context.Background(), &pb.GetTenantRequest{Name: "tenants/t"}, &grpc.UnaryServerInfo{FullMethod: "/x/y"},
		func(context.Context, any) (any, error) { called = true; return nil, nil })
	require.NoError(t, err)
	require.True(t, called)
	called = false
	_, err = unary(context.Background(), &pb.ListJobsRequest{Parent: "tenants/t", Filter: "\x00"}, &grpc.UnaryServerInfo{FullMethod: "/x/y"},
		func(context.Context, any) (any, error) { called = true; return nil, nil })
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.False(t, called)

	ss := recvStream{req: &pb.WatchJobsRequest{Parent: "tenants/t", Filter: "a\x00"}}
	err = stream(nil, ss, &grpc.StreamServerInfo{FullMethod: "/x/y"}, func(_ any, s grpc.ServerStream) error {
		return s.RecvMsg(&pb.WatchJobsRequest{})
	})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.True(t, strings.HasPrefix(status.Convert(err).Message(), "filter:"))
}

// recvStream is a server stream whose one message is req.
type recvStream struct {
	grpc.ServerStream
	req proto.Message
}

func (s recvStream) Context() context.Context { return context.Background() }

func (s recvStream) RecvMsg(m any) error {
	proto.Merge(m.(proto.Message), s.req)
	return nil
}
