package server

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
)

// streamLimiter caps the server-streaming calls each caller has open. The
// caller is the authenticated subject, so it runs after authentication;
// calls without a principal (health, reflection, which need no token) are
// not counted. The count is per server process: behind a load balancer a
// caller may hold that many on every replica.
type streamLimiter struct {
	max int

	mu   sync.Mutex
	open map[string]int
}

func newStreamLimiter(max int) *streamLimiter {
	return &streamLimiter{max: max, open: map[string]int{}}
}

func (l *streamLimiter) acquire(subject string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[subject] >= l.max {
		return false
	}
	l.open[subject]++
	return true
}

func (l *streamLimiter) release(subject string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[subject]--; l.open[subject] <= 0 {
		delete(l.open, subject)
	}
}

func (l *streamLimiter) count(subject string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[subject]
}

func (l *streamLimiter) interceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		p, ok := auth.PrincipalFrom(ss.Context())
		if !ok {
			return h(srv, ss)
		}
		if !l.acquire(p.Subject) {
			return status.Errorf(codes.ResourceExhausted,
				"too many open streams: at most %d watches and log streams per caller at a time; close one and retry", l.max)
		}
		defer l.release(p.Subject)
		return h(srv, ss)
	}
}
