package server

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errServerTimeout is the cause of a call's context ending at the server's
// RequestTimeout rather than at the caller's own deadline.
var errServerTimeout = errors.New("the server's request timeout")

// timeoutInterceptor bounds every unary call by max, within the caller's
// own deadline when it is sooner (issue 41, finding 3: a stalled database
// hung calls for ever). A call that the server's bound ended is UNAVAILABLE
// (503 with Retry-After): the server could not answer in time, which is
// worth retrying; one the caller's deadline ended stays DEADLINE_EXCEEDED.
// Streams are bounded by their own rules (the auth guard's lifetime, the
// watch's poll timeout).
func timeoutInterceptor(max time.Duration) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		tctx, cancel := context.WithTimeoutCause(ctx, max, errServerTimeout)
		defer cancel()
		resp, err := h(tctx, req)
		if err != nil && errors.Is(context.Cause(tctx), errServerTimeout) && ctx.Err() == nil {
			return nil, status.Errorf(codes.Unavailable, "the server could not answer within %s (the database may be slow or unreachable); retry shortly", max)
		}
		return resp, err
	}
}
