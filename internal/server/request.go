package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"regexp"
	"strings"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/trainyard/trainyard/internal/audit"
)

// Every call gets an audit.Request: its id and the client's address, for
// the log lines of the call and the audit record of any change it makes.
//
// The id is the client's x-request-id (X-Request-Id over REST) when it sent
// a sensible one, so that a client can find its request in our logs; else a
// new one. Either way it is sent back in the x-request-id header.
//
// The address is the gRPC peer's, except on the gateway's own in-memory
// server, where the peer is the gateway: there it is the last address of
// the x-forwarded-for the gateway sets, which is the HTTP client it
// served (earlier entries were sent by the client and prove nothing).

const requestIDHeader = "x-request-id"

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func requestOf(ctx context.Context, viaGateway bool) audit.Request {
	md, _ := metadata.FromIncomingContext(ctx)
	r := audit.Request{}
	if ids := md.Get(requestIDHeader); len(ids) == 1 && requestIDPattern.MatchString(ids[0]) {
		r.ID = ids[0]
	} else {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		r.ID = hex.EncodeToString(b)
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		r.Address = p.Addr.String()
	}
	if viaGateway {
		if xff := md.Get("x-forwarded-for"); len(xff) > 0 {
			hops := strings.Split(xff[len(xff)-1], ",")
			if ip := strings.TrimSpace(hops[len(hops)-1]); net.ParseIP(ip) != nil {
				r.Address = ip
			}
		}
	}
	return r
}

// requestInterceptors put the audit.Request in the context of every call
// and answer with its id.
func requestInterceptors(viaGateway bool) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	unary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		r := requestOf(ctx, viaGateway)
		_ = grpc.SetHeader(ctx, metadata.Pairs(requestIDHeader, r.ID))
		return h(audit.WithRequest(ctx, r), req)
	}
	stream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		r := requestOf(ss.Context(), viaGateway)
		_ = ss.SetHeader(metadata.Pairs(requestIDHeader, r.ID))
		w := middleware.WrapServerStream(ss)
		w.WrappedContext = audit.WithRequest(ss.Context(), r)
		return h(srv, w)
	}
	return unary, stream
}
