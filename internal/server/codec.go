package server

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// grpc-go answers a request message it cannot decode with INTERNAL and
// its library's words ("grpc: error unmarshalling request: proto: cannot
// parse invalid wire-format data"), and streaming handlers log it at
// ERROR: a client's mistake reported as our fault (issue 41, finding 4).
// The code is fixed inside grpc-go, after the codec returns, so the codec
// cannot change it. Instead requestCodec decodes, and when decoding fails
// it leaves the message empty, returns no error, and notes the failure
// beside the message; decodeErrorInterceptors, the first thing every call
// passes after recovery, answer a noted message INVALID_ARGUMENT with a
// plain reason before anything (authorization, handler) sees it.

// recursionLimit bounds the nesting of a request message. The deepest
// legitimate one, a TFJob's google.protobuf.Struct, nests two message
// levels per JSON level, and package document allows 64 JSON levels.
const recursionLimit = 200

// decodeFailures maps a message the codec could not decode to the reason.
var decodeFailures sync.Map // proto.Message → string

type requestCodec struct{ encoding.CodecV2 }

func newRequestCodec() requestCodec {
	return requestCodec{encoding.GetCodecV2(grpcproto.Name)}
}

func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	if err := (proto.UnmarshalOptions{RecursionLimit: recursionLimit}).Unmarshal(buf.ReadOnlyData(), m); err != nil {
		proto.Reset(m)
		decodeFailures.Store(m, decodeReason(err))
	}
	return nil
}

// decodeReason says in plain words why a message could not be decoded.
func decodeReason(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "invalid UTF-8"):
		return "the request message is not valid: a string field is not valid UTF-8"
	case strings.Contains(msg, "recursion"):
		return fmt.Sprintf("the request message is nested more than %d levels deep (the server's limit)", recursionLimit)
	}
	return "the request message is not valid protobuf for this method"
}

// decodeFailed reports, once, whether m is a message the codec could not
// decode, and the status to answer.
func decodeFailed(m any) error {
	if reason, ok := decodeFailures.LoadAndDelete(m); ok {
		return status.Error(codes.InvalidArgument, reason.(string))
	}
	return nil
}

func decodeErrorInterceptors() (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	unary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := decodeFailed(req); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, decodeCheckedStream{ss})
	}
	return unary, stream
}

type decodeCheckedStream struct{ grpc.ServerStream }

func (s decodeCheckedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return decodeFailed(m)
}
