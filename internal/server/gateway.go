package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// newGateway maps REST onto the gRPC services. JSON uses lowerCamelCase
// names; unknown fields in a request body are an error rather than silently
// dropped, so a misspelt field never goes unnoticed.
func newGateway(ctx context.Context, conn *grpc.ClientConn) (http.Handler, error) {
	jsonpb := &runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: false},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.HTTPBodyMarshaler{Marshaler: jsonpb}),
		runtime.WithErrorHandler(runtime.DefaultHTTPErrorHandler),
	)
	if err := pb.RegisterJobServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	if err := pb.RegisterTenantServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	return mux, nil
}

// readTimeout bounds reading a whole request, body included.
const readTimeout = 30 * time.Second

// limitBody answers 413 to a body over max bytes before the gateway reads
// it. The body is read here in full (it is small by then) so the limit holds
// for chunked requests too. This happens before authentication, which the
// gateway can only do by calling gRPC with the body decoded; the memory an
// unauthenticated client can pin is max per open request, for at most
// readTimeout.
//
// ReadTimeout does not cut the response: net/http lifts the read deadline
// once the request is read (TestStreamOutlivesReadTimeout checks it), so
// log streams and watches over REST last as long as the client stays.
func limitBody(max int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			if r.ContentLength > int64(max) {
				tooLarge(w, max)
				return
			}
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(max)))
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				tooLarge(w, max)
				return
			}
			if err != nil {
				http.Error(w, `{"code":3,"message":"could not read the request body"}`, http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		next.ServeHTTP(w, r)
	})
}

func tooLarge(w http.ResponseWriter, max int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	// Code 8 is RESOURCE_EXHAUSTED, what a gRPC client gets for the same request.
	_, _ = w.Write([]byte(`{"code":8,"message":"request body is larger than ` + strconv.Itoa(max) + ` bytes"}`))
}
