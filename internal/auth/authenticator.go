package auth

import (
	"context"
	"errors"
)

// Authenticator turns a raw bearer token into a Principal.
//
// Implementations return an error that errors.Is ErrUnauthenticated when
// the token is not acceptable for any reason, and ErrUnavailable when they
// cannot decide right now (the issuer is unreachable). The error text is
// safe to log but is never sent to the caller; it never contains the token.
type Authenticator interface {
	Authenticate(ctx context.Context, rawToken string) (Principal, error)
}

var (
	// ErrUnauthenticated is the one error for every rejected token. Callers
	// see only its generic text; the precise reason is wrapped for the log.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrUnavailable means the token could not be checked right now, e.g.
	// OIDC discovery has not succeeded yet or the JWKS cannot be fetched.
	ErrUnavailable = errors.New("authentication temporarily unavailable")
)

// reasonError carries a sentinel (what callers may learn) and a reason
// (what the log gets).
type reasonError struct {
	kind   error
	reason string
	cause  error
}

func (e *reasonError) Error() string {
	if e.cause != nil {
		return e.kind.Error() + ": " + e.reason + ": " + e.cause.Error()
	}
	return e.kind.Error() + ": " + e.reason
}

// Is matches the kind only. There is deliberately no Unwrap: a cause may
// itself hold the other sentinel (FirstOf joins several), and an error must
// never be both unauthenticated and unavailable.
func (e *reasonError) Is(target error) bool { return target == e.kind }

func unauthenticated(reason string, cause error) error {
	return &reasonError{kind: ErrUnauthenticated, reason: reason, cause: cause}
}

func unavailable(reason string, cause error) error {
	return &reasonError{kind: ErrUnavailable, reason: reason, cause: cause}
}

// FirstOf tries each authenticator in order and returns the first success.
// It exists so dev tokens and OIDC can be on together: a dev token is
// matched locally, anything else falls through to OIDC. If none accepts
// the token the result is ErrUnavailable when any of them was unavailable,
// else ErrUnauthenticated with every reason.
func FirstOf(authenticators ...Authenticator) Authenticator {
	return firstOf(authenticators)
}

type firstOf []Authenticator

func (f firstOf) Authenticate(ctx context.Context, raw string) (Principal, error) {
	var errs []error
	unavail := false
	for _, a := range f {
		p, err := a.Authenticate(ctx, raw)
		if err == nil {
			return p, nil
		}
		unavail = unavail || errors.Is(err, ErrUnavailable)
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return Principal{}, unauthenticated("no authenticator configured", nil)
	}
	if unavail {
		return Principal{}, unavailable("no authenticator accepted the token", errors.Join(errs...))
	}
	return Principal{}, unauthenticated("no authenticator accepted the token", errors.Join(errs...))
}
