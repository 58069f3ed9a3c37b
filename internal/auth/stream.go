package auth

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Open streams (watches, log follows) last as long as the client keeps
// them, far longer than one authorization decision should. A stream is
// therefore re-authorized while it is open, with the request it was opened
// with, and ended with the status a new call would get:
//
//	tenant changed (members, state: a TenantChanges wake-up) ─┐
//	every Recheck (wake-ups can be lost)                      ├─► Authorize again ─► refused: NOT_FOUND /
//	                                                          ┘                      PERMISSION_DENIED / ...
//	the caller's token expires ──────────────────────────────────► UNAUTHENTICATED
//	MaxLifetime reached ─────────────────────────────────────────► UNAVAILABLE: reopen after the last event id
//
// UNAVAILABLE is what gRPC clients and tyctl already retry, and every watch
// resumes after an event id, so the lifetime costs a client one reconnect
// and bounds how long any decision, and any connection to one server,
// lives.
//
// The guard runs beside the handler, so on its own it would leave a window:
// a watch woken by a job created just after a member was removed could read
// and send that job before the guard, woken by the tenant change, has
// decided. Handlers whose messages are ordered by the database close it
// with Recheck: called after reading what it is about to send, it reads the
// tenant again, and whatever committed before what was read (the removal)
// is in that read.

// StreamPolicy says how long an open stream keeps the access it was
// authorized with.
type StreamPolicy struct {
	// TenantChanges returns a channel that receives a value when the
	// tenant's record (members, state) changes, and a function that ends
	// the subscription. Optional: without it streams are re-authorized
	// every Recheck only.
	TenantChanges func(tenantID string) (<-chan struct{}, func())
	// Recheck is how often a stream is re-authorized without a change
	// notification, which a reconnecting listener can lose. Defaults to 1m.
	Recheck time.Duration
	// MaxLifetime ends every stream after this long with UNAVAILABLE.
	// Defaults to 30m.
	MaxLifetime time.Duration
}

func (p StreamPolicy) withDefaults() StreamPolicy {
	if p.Recheck <= 0 {
		p.Recheck = time.Minute
	}
	if p.MaxLifetime <= 0 {
		p.MaxLifetime = 30 * time.Minute
	}
	return p
}

// WithStreamPolicy sets how open streams are re-authorized and how long
// they may live. Defaults to StreamPolicy{}'s defaults.
func WithStreamPolicy(p StreamPolicy) InterceptorOption {
	return func(i *Interceptor) { i.streams = p.withDefaults() }
}

// streamEnded is the cancel cause of a stream the guard ended: the status
// the caller gets instead of the handler's own CANCELLED.
type streamEnded struct{ st *status.Status }

func (e *streamEnded) Error() string { return e.st.Err().Error() }

// endedStatus returns the status the guard ended ctx's stream with, if it did.
func endedStatus(ctx context.Context) (error, bool) {
	var e *streamEnded
	if errors.As(context.Cause(ctx), &e) {
		return e.st.Err(), true
	}
	return nil, false
}

// guard re-authorizes req for p on method until ctx ends, and ends the
// stream (cancel with a streamEnded cause) when access is lost, the token
// expires or the lifetime is over.
func (i *Interceptor) guard(ctx context.Context, end context.CancelCauseFunc, p Principal, method string, req proto.Message, tenantID string) {
	pol := i.streams
	var changes <-chan struct{}
	if pol.TenantChanges != nil && tenantID != "" {
		ch, unsubscribe := pol.TenantChanges(tenantID)
		defer unsubscribe()
		changes = ch
	}
	recheck := time.NewTicker(pol.Recheck)
	defer recheck.Stop()
	lifetime := time.NewTimer(pol.MaxLifetime)
	defer lifetime.Stop()
	var expired <-chan time.Time
	if !p.Expiry.IsZero() {
		t := time.NewTimer(time.Until(p.Expiry))
		defer t.Stop()
		expired = t.C
	}
	stop := func(st *status.Status, why string) {
		i.log.Info("stream ended", "method", method, "subject", p.Subject, "reason", why, "code", st.Code().String())
		end(&streamEnded{st: st})
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
		case <-recheck.C:
		case <-expired:
			stop(status.New(codes.Unauthenticated, msgExpired), "token expired")
			return
		case <-lifetime.C:
			stop(status.Newf(codes.Unavailable, "the stream reached its maximum lifetime of %s; open it again after the last event id received", pol.MaxLifetime), "lifetime")
			return
		}
		if _, err := i.authz.Authorize(ctx, p, method, req); err != nil {
			if ctx.Err() != nil {
				return
			}
			stop(status.Convert(err), "access re-checked: "+status.Convert(err).Message())
			return
		}
	}
}

// Recheck authorizes the stream of ctx again, now, with the request it was
// opened with, and ends the stream as the guard would when access is gone;
// it returns the status the caller gets. Outside a guarded stream, or
// before its request was authorized, it returns nil.
func Recheck(ctx context.Context) error {
	c, _ := ctx.Value(recheckKey{}).(*recheck)
	if c == nil {
		return nil
	}
	return c.run(ctx)
}

type recheckKey struct{}

// recheck is a guarded stream's synchronous re-authorization.
type recheck struct {
	i      *Interceptor
	p      Principal
	method string
	end    context.CancelCauseFunc

	mu  sync.Mutex
	req proto.Message // set once the first message is authorized
}

func (c *recheck) setRequest(m proto.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.req = m
}

func (c *recheck) run(ctx context.Context) error {
	c.mu.Lock()
	req := c.req
	c.mu.Unlock()
	if req == nil {
		return nil
	}
	var st *status.Status
	if !c.p.Expiry.IsZero() && !time.Now().Before(c.p.Expiry) {
		st = status.New(codes.Unauthenticated, msgExpired)
	} else if _, err := c.i.authz.Authorize(ctx, c.p, c.method, req); err != nil {
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		st = status.Convert(err)
	}
	if st == nil {
		return nil
	}
	c.i.log.Info("stream ended", "method", c.method, "subject", c.p.Subject, "reason", "access re-checked before sending: "+st.Message(), "code", st.Code().String())
	c.end(&streamEnded{st: st})
	return st.Err()
}

const msgExpired = "authentication required: the bearer token expired while the stream was open; open it again with a new token"
