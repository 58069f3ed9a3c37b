package api

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube/kubeerr"
	"github.com/trainyard/trainyard/internal/store"
)

// Handlers return either a gRPC status (already user-facing) or an internal
// error, which Code classifies: store sentinels keep their (safe) text
// under the matching code, except ErrUnavailable (a database that cannot
// be reached or cannot serve now), which the server answers UNAVAILABLE
// with a neutral message, so that clients and gRPC retry policies retry; a
// serialization failure is ErrConflict, ABORTED (retry the request).
// Anything else becomes INTERNAL with a neutral message and an id that is
// logged with the real error, so SQL or stack text never reaches a caller.

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

// Code is the one mapping of the errors handlers return to gRPC codes:
// a status keeps its code; store sentinels and context errors map to
// theirs; anything else is INTERNAL. The server's error interceptor
// (internal/server) applies it to every handler's error and masks what
// must not leave (UNAVAILABLE's and INTERNAL's text); batches name their
// items under the code of the first (batchStatus).
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	switch {
	case errors.Is(err, store.ErrUnavailable):
		return codes.Unavailable
	case errors.Is(err, store.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, store.ErrAlreadyExists):
		return codes.AlreadyExists
	case errors.Is(err, store.ErrFailedPrecondition):
		return codes.FailedPrecondition
	case errors.Is(err, store.ErrConflict):
		return codes.Aborted
	case errors.As(err, new(*kubeerr.NoClusterError)):
		return codes.FailedPrecondition
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

// CheckRequest is the text boundary check of one request (boundary.go):
// nil, or INVALID_ARGUMENT listing the strings that cannot be stored. The
// server runs it on every request before the handler.
func CheckRequest(req any) error { return checkText(req) }
