package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/auth"
)

// The error interceptor runs right before the handlers. It checks every
// request (Config.CheckRequest: the text boundary), puts the caller's
// audit.Actor in the context, so that the changes the handler makes are
// recorded (streams change nothing), and turns every handler's error into
// the status the caller sees, classified by Config.ErrorCode (api.Code,
// the one mapping):
//
//   - a status passes as it is: it is already meant for callers;
//   - UNAVAILABLE (the database cannot be reached or cannot serve now) gets
//     a neutral message and an id, the real error (which names the
//     database's address) is logged: clients and retry policies retry;
//   - INTERNAL gets a neutral message and an id that is logged beside the
//     real error, so SQL or stack text never reaches a caller;
//   - any other code keeps the error's text, which the store writes for
//     callers ("job \"x\" does not exist").

// toStatus maps an error from a handler to the status the caller sees.
func toStatus(ctx context.Context, log *slog.Logger, code func(error) codes.Code, method string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch c := code(err); c {
	case codes.Unavailable:
		id := errorID()
		log.WarnContext(ctx, "database unavailable", "method", method, "error_id", id, "error", err)
		return status.Errorf(codes.Unavailable, "the database is unavailable; retry shortly (id %s)", id)
	case codes.Internal, codes.Unknown:
		id := errorID()
		log.ErrorContext(ctx, "internal error", "method", method, "error_id", id, "error", err)
		return status.Errorf(codes.Internal, "internal error (id %s)", id)
	default:
		return status.Error(c, err.Error())
	}
}

func errorID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// errorInterceptors returns the unary and stream interceptors described
// above. check may be nil.
func errorInterceptors(log *slog.Logger, code func(error) codes.Code, check func(any) error) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	if check == nil {
		check = func(any) error { return nil }
	}
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := check(req); err != nil {
			return nil, err
		}
		resp, err := h(withActor(ctx), req)
		return resp, toStatus(ctx, log, code, info.FullMethod, err)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return toStatus(ss.Context(), log, code, info.FullMethod, h(srv, checkedStream{ss, check}))
	}
	return unary, stream
}

// checkedStream applies the request check to every message received.
type checkedStream struct {
	grpc.ServerStream
	check func(any) error
}

func (s checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.check(m)
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
