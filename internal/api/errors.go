package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// Handlers return either a gRPC status (already user-facing) or an internal
// error. ErrorInterceptors turn internal errors into statuses in one place:
// store sentinels keep their (safe) text under the matching code, except
// ErrUnavailable (a database that cannot be reached or cannot serve now),
// which is UNAVAILABLE with a neutral message, so that clients and gRPC
// retry policies retry; a serialization failure is ErrConflict, ABORTED
// (retry the request). Anything else becomes INTERNAL with a neutral
// message and an id that is logged with the real error, so SQL or stack
// text never reaches a caller.

func violation(field, description string) job.FieldViolation {
	return job.FieldViolation{Field: field, Description: description}
}

// maxViolations bounds the details of one error: a request of a million
// bad items (under the size limit, a list of exit codes can be that) gets
// the first ones and a count, not a response larger than the request.
const maxViolations = 100

// invalid returns INVALID_ARGUMENT with a google.rpc.BadRequest detail
// listing every violation (the first maxViolations of them).
func invalid(vs ...job.FieldViolation) error {
	return withViolations(codes.InvalidArgument, vs...)
}

// outOfRange returns OUT_OF_RANGE with the violation as its BadRequest
// detail: a well-formed position the server can no longer serve from.
func outOfRange(v job.FieldViolation) error {
	return withViolations(codes.OutOfRange, v)
}

func withViolations(code codes.Code, vs ...job.FieldViolation) error {
	msg := "invalid request"
	if len(vs) > 0 {
		msg = vs[0].Field + ": " + vs[0].Description
		if len(vs) > 1 {
			msg += " (and more, see details)"
		}
	}
	st := status.New(code, msg)
	br := &errdetails.BadRequest{}
	for i, v := range vs {
		if i == maxViolations {
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{
				Field: v.Field, Description: fmt.Sprintf("and %d more problems not listed", len(vs)-maxViolations),
			})
			break
		}
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
	if errors.Is(err, store.ErrUnavailable) {
		// The store's text names the database's address: log it only.
		id := errorID()
		log.WarnContext(ctx, "database unavailable", "method", method, "error_id", id, "error", err)
		return status.Errorf(codes.Unavailable, "the database is unavailable; retry shortly (id %s)", id)
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

// ErrorInterceptors returns the unary and stream interceptors that run
// right before the handlers: they check every request at the text boundary
// (checkText), put the caller's audit.Actor in the context, so that the
// changes the handler makes are recorded (streams change nothing), and
// apply toStatus to every handler's error.
func ErrorInterceptors(log *slog.Logger) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := checkText(req); err != nil {
			return nil, err
		}
		resp, err := h(withActor(ctx), req)
		return resp, toStatus(ctx, log, info.FullMethod, err)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return toStatus(ss.Context(), log, info.FullMethod, h(srv, textCheckedStream{ss}))
	}
	return unary, stream
}

// textCheckedStream applies checkText to every message received.
type textCheckedStream struct{ grpc.ServerStream }

func (s textCheckedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return checkText(m)
}

// withActor adds the audit.Actor of an authenticated call: the principal,
// and where the call came from (audit.Request, set by the server).
func withActor(ctx context.Context) context.Context {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return ctx
	}
	r, _ := audit.RequestFrom(ctx)
	return audit.WithActor(ctx, audit.Actor{Subject: p.Subject, Groups: p.Groups, Issuer: p.Issuer, Request: r})
}
