package api

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/store"
)

func TestInvalidListsEveryViolation(t *testing.T) {
	err := invalid(violation("a", "is wrong"), violation("b.c", "is worse"))
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, "a: is wrong (and more, see details)", status.Convert(err).Message())
	br := badRequest(t, err)
	require.Len(t, br.GetFieldViolations(), 2)
	require.Equal(t, "b.c", br.GetFieldViolations()[1].GetField())
}

// Code is the one mapping from handler errors to codes (issue 40): the
// server's interceptor and batchStatus both use it.
func TestCode(t *testing.T) {
	for err, want := range map[error]codes.Code{
		nil: codes.OK,
		fmt.Errorf("job %q: %w", "x", store.ErrNotFound):              codes.NotFound,
		fmt.Errorf("%w: job x exists", store.ErrAlreadyExists):        codes.AlreadyExists,
		fmt.Errorf("%w: job is RUNNING", store.ErrFailedPrecondition): codes.FailedPrecondition,
		store.ErrConflict: codes.Aborted,
		fmt.Errorf("%w: connect: 55000", store.ErrUnavailable): codes.Unavailable,
		context.Canceled:                           codes.Canceled,
		context.DeadlineExceeded:                   codes.DeadlineExceeded,
		status.Error(codes.PermissionDenied, "no"): codes.PermissionDenied,
		errors.New("SQLSTATE 42P01"):               codes.Internal,
	} {
		require.Equal(t, want, Code(err), "%v", err)
	}
}
