package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/trainyard/trainyard/internal/document"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// newGateway maps REST onto the gRPC services. JSON uses lowerCamelCase
// names; unknown fields in a request body are an error rather than silently
// dropped, so a misspelt field never goes unnoticed.
//
// Beyond the gateway's defaults:
//   - X-HTTP-Method-Override and the form-POST fallback are off: no client
//     of ours needs them, and they let a POST act as another method.
//   - A method a path does not serve is 405 with an Allow header (the
//     gateway's own answer is 501, "not implemented").
//   - Path parameters and query values must be UTF-8: one that is not is
//     400 naming the parameter, instead of failing to marshal (INTERNAL).
//   - 503 and 429 carry Retry-After.
//   - Bodies are read strictly and within a budget (strictJSON, yamlBody).
//   - A message larger than the gateway may send is 413 naming the limit.
func newGateway(ctx context.Context, conn *grpc.ClientConn, jsonLimits, yamlLimits document.Limits, maxMessage int) (http.Handler, error) {
	jsonpb := strictJSON{JSONPb: &runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: false},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}, limits: jsonLimits}
	rs := apiRoutes()
	opts := []runtime.ServeMuxOption{
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.HTTPBodyMarshaler{Marshaler: jsonpb}),
		runtime.WithIncomingHeaderMatcher(incomingHeader),
		runtime.WithOutgoingHeaderMatcher(outgoingHeader),
		runtime.WithErrorHandler(errorHandler(maxMessage)),
		runtime.WithRoutingErrorHandler(rs.routingErrorHandler),
		runtime.WithDisableHTTPMethodOverride(),
		runtime.WithDisablePathLengthFallback(),
		runtime.WithMarshalerOption(mimeCSV, csvMarshaler{Marshaler: jsonpb}),
		runtime.WithMiddlewares(requireUTF8, acceptCSV),
		runtime.SetQueryParameterParser(queryParser{}),
	}
	for _, ct := range yamlContentTypes {
		opts = append(opts, runtime.WithMarshalerOption(ct, yamlBody{strictJSON{JSONPb: jsonpb.JSONPb, limits: yamlLimits}}))
	}
	mux := runtime.NewServeMux(opts...)
	if err := pb.RegisterJobServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	if err := pb.RegisterTenantServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	if err := pb.RegisterAuditServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	if err := pb.RegisterUsageServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	if err := pb.RegisterWebhookServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	if err := pb.RegisterClusterServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	if err := pb.RegisterExperimentServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	return mux, nil
}

// incomingHeader forwards X-Request-Id to gRPC, besides the gateway's
// defaults (Authorization, Grpc-Metadata-*).
func incomingHeader(key string) (string, bool) {
	if strings.EqualFold(key, requestIDHeader) {
		return requestIDHeader, true
	}
	return runtime.DefaultHeaderMatcher(key)
}

// outgoingHeader answers the request id as X-Request-Id; other gRPC
// headers as the gateway does by default (Grpc-Metadata-*).
func outgoingHeader(key string) (string, bool) {
	if key == requestIDHeader {
		return "X-Request-Id", true
	}
	return runtime.MetadataHeaderPrefix + key, true
}

// retryAfter is what a client is told to wait before retrying a 503 (the
// database or the identity provider is unreachable) or a 429 (too many
// open streams): short, since both pass in seconds when they pass at all.
const retryAfter = "2"

// errorHandler answers errors as the gateway does, with Retry-After on
// 503 and 429, and 413 naming the limit for a message larger than the
// gateway may send (maxMessage).
func errorHandler(maxMessage int) runtime.ErrorHandlerFunc {
	return func(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
		if tooLargeToSend(err) {
			// The gateway's own client refused the message (finding 5): the
			// request is too large, which is no reason to retry (429).
			err = &runtime.HTTPStatusError{HTTPStatus: http.StatusRequestEntityTooLarge,
				Err: status.Error(codes.InvalidArgument, "the request is too large once decoded: at most "+strconv.Itoa(maxMessage)+" bytes as protobuf (the server's limit)")}
		}
		switch status.Code(err) {
		case codes.Unavailable, codes.ResourceExhausted:
			w.Header().Set("Retry-After", retryAfter)
		}
		runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, err)
	}
}

// tooLargeToSend reports grpc-go's refusal to send a message over the
// client's limit ("trying to send message larger than max").
func tooLargeToSend(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "trying to send message larger than max")
}

func (rs routes) routingErrorHandler(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, code int) {
	if code != http.StatusMethodNotAllowed {
		runtime.DefaultRoutingErrorHandler(ctx, mux, m, w, r, code)
		return
	}
	path := r.URL.EscapedPath()
	allow := strings.Join(rs.allowed(path), ", ")
	w.Header().Set("Allow", allow)
	err := status.Errorf(codes.Unimplemented, "method %s is not allowed on %s; allowed: %s", r.Method, path, allow)
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, &runtime.HTTPStatusError{HTTPStatus: http.StatusMethodNotAllowed, Err: err})
}

// requireUTF8 refuses path parameters and query parameters that are not
// UTF-8 (a %ff in a job id): protobuf strings must be, and the gateway
// would otherwise fail to marshal the request, an INTERNAL error with the
// library's words.
func requireUTF8(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, pathParams map[string]string) {
		var vs []*errdetails.BadRequest_FieldViolation
		for _, k := range slices.Sorted(maps.Keys(pathParams)) {
			if !utf8.ValidString(pathParams[k]) {
				vs = append(vs, &errdetails.BadRequest_FieldViolation{Field: k, Description: "path parameter is not valid UTF-8"})
			}
		}
		q := r.URL.Query()
		for _, k := range slices.Sorted(maps.Keys(q)) {
			field := k
			if !utf8.ValidString(k) {
				field = strconv.Quote(k)
			}
			for _, v := range q[k] {
				if !utf8.ValidString(k) || !utf8.ValidString(v) {
					vs = append(vs, &errdetails.BadRequest_FieldViolation{Field: field, Description: "query parameter is not valid UTF-8"})
					break
				}
			}
		}
		if len(vs) == 0 {
			next(w, r, pathParams)
			return
		}
		st := status.New(codes.InvalidArgument, vs[0].Field+": "+vs[0].Description)
		if d, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: vs}); err == nil {
			st = d
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := protojson.Marshal(st.Proto())
		_, _ = w.Write(b)
	}
}

// gatewayMessageLimit is the largest message the gateway sends its gRPC
// server. A REST body of at most maxBody bytes can grow when it becomes
// protobuf: "-1," (3 bytes of JSON) is a 10-byte varint. Under this limit
// every body the size check let through reaches validation, which answers
// 400 naming the field, rather than the gateway's client refusing it as
// RESOURCE_EXHAUSTED (429, an invitation to retry).
func gatewayMessageLimit(maxBody int) int { return 4*maxBody + 1<<20 }

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
		if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
			// Finding 7: a compressed body read as plain text would fail
			// with a confusing message, or worse, succeed.
			writeStatus(w, http.StatusUnsupportedMediaType, status.New(codes.InvalidArgument,
				"Content-Encoding "+strconv.Quote(ce)+" is not supported: send the body uncompressed (identity)"))
			return
		}
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

// writeStatus answers st as the gateway would, under httpStatus.
func writeStatus(w http.ResponseWriter, httpStatus int, st *status.Status) {
	w.Header().Set("Content-Type", "application/json")
	if httpStatus == http.StatusServiceUnavailable || httpStatus == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(httpStatus)
	b, _ := protojson.Marshal(st.Proto())
	_, _ = w.Write(b)
}

// authenticateFirst refuses a REST request without a valid token before
// its body is read (finding 1): the gateway can only authenticate by
// calling gRPC with the body decoded. The gRPC server authenticates again
// and authorizes.
func authenticateFirst(authn func(*http.Request) error, next http.Handler) http.Handler {
	if authn == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := authn(r); err != nil {
			st := status.Convert(err)
			writeStatus(w, runtime.HTTPStatusFromCode(st.Code()), st)
			return
		}
		next.ServeHTTP(w, r)
	})
}
