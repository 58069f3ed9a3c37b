package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/store"
)

// Handlers return either a gRPC status (already user-facing) or an internal
// error. ErrorInterceptor turns internal errors into statuses in one place:
// store sentinels keep their (safe) text under the matching code; anything
// else becomes INTERNAL with a neutral message and an id that is logged with
// the real error, so SQL or stack text never reaches a caller.

// FieldViolation is one problem with one request field.
type FieldViolation struct {
	Field       string
	Description string
}

func violation(field, description string) FieldViolation {
	return FieldViolation{Field: field, Description: description}
}

// invalid returns INVALID_ARGUMENT with a google.rpc.BadRequest detail
// listing every violation.
func invalid(vs ...FieldViolation) error {
	msg := "invalid request"
	if len(vs) > 0 {
		msg = vs[0].Field + ": " + vs[0].Description
		if len(vs) > 1 {
			msg += " (and more, see details)"
		}
	}
	st := status.New(codes.InvalidArgument, msg)
	br := &errdetails.BadRequest{}
	for _, v := range vs {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{
			Field: v.Field, Description: v.Description,
		})
	}
	if withDetails, err := st.WithDetails(br); err == nil {
		st = withDetails
	}
	return st.Err()
}

// toStatus maps an error from a handler to the status the caller sees.
func toStatus(ctx context.Context, log *slog.Logger, method string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codes.Internal
	switch {
	case errors.Is(err, store.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, store.ErrAlreadyExists):
		code = codes.AlreadyExists
	case errors.Is(err, store.ErrFailedPrecondition):
		code = codes.FailedPrecondition
	case errors.Is(err, store.ErrConflict):
		code = codes.Aborted
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	if code != codes.Internal {
		return status.Error(code, err.Error())
	}
	id := errorID()
	log.ErrorContext(ctx, "internal error", "method", method, "error_id", id, "error", err)
	return status.Errorf(codes.Internal, "internal error (id %s)", id)
}

func errorID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ErrorInterceptors returns the unary and stream interceptors that apply
// toStatus to every handler's error.
func ErrorInterceptors(log *slog.Logger) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		return resp, toStatus(ctx, log, info.FullMethod, err)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return toStatus(ss.Context(), log, info.FullMethod, h(srv, ss))
	}
	return unary, stream
}
