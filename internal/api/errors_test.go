package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
		require.Equal(t, want, status.Code(toStatus(ctx, log, "/m", err)), err.Error())
	}
	require.NoError(t, toStatus(ctx, log, "/m", nil))

	leak := errors.New(`ERROR: duplicate key value violates unique constraint "jobs_pkey" (SQLSTATE 23505) at store.go:123`)
	st := status.Convert(toStatus(ctx, log, "/trainyard.v1.JobService/CreateJob", leak))
	require.Equal(t, codes.Internal, st.Code())
	require.NotContains(t, st.Message(), "SQLSTATE")
	require.NotContains(t, st.Message(), "store.go")
	// The id in the message is the one logged beside the real error.
	id := strings.TrimSuffix(strings.TrimPrefix(st.Message(), "internal error (id "), ")")
	require.Len(t, id, 12)
	require.Contains(t, logs.String(), "error_id="+id)
	require.Contains(t, logs.String(), "SQLSTATE 23505")

	down := fmt.Errorf("%w: tenant \"a\": dial tcp 10.0.3.7:5432: connect: connection refused", store.ErrUnavailable)
	st = status.Convert(toStatus(ctx, log, "/trainyard.v1.JobService/GetJob", down))
	require.Equal(t, codes.Unavailable, st.Code(), "clients and retry policies retry an outage")
	require.NotContains(t, st.Message(), "10.0.3.7")
	require.Contains(t, logs.String(), "10.0.3.7")
}
