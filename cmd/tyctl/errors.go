package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// exitStatus ends tyctl with a code and nothing more to say: jobs watch
// uses it for a job that failed or was cancelled.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exitCode prints err, if there is one worth printing, and picks the code:
// 0 success, 1 any error, 130 interrupted.
func (a *app) exitCode(ctx context.Context, err error) int {
	var es exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &es):
		return int(es)
	case ctx.Err() != nil:
		return 130
	}
	a.renderError(a.stderr, err)
	return 1
}

// renderError prints an error for a human: the gRPC code and message, then
// each field violation (google.rpc.BadRequest) and failed precondition on a
// line of its own, then a hint when one helps.
func (a *app) renderError(w io.Writer, err error) {
	st, attempts := serverStatus(err)
	if st == nil {
		fmt.Fprintf(w, "tyctl: %v\n", err)
		return
	}
	fmt.Fprintf(w, "tyctl: %s: %s%s\n", st.Code(), st.Message(), attempts)
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				fmt.Fprintf(w, "  %s: %s\n", v.GetField(), v.GetDescription())
			}
		case *errdetails.PreconditionFailure:
			for _, v := range d.GetViolations() {
				fmt.Fprintf(w, "  %s %s: %s\n", v.GetType(), v.GetSubject(), v.GetDescription())
			}
		}
	}
	if h := a.hint(st); h != "" {
		fmt.Fprintf(w, "hint: %s\n", h)
	}
}

// serverStatus is the status the server (or the transport) returned. gRPC
// wraps it once retries give up ("max retries exhausted: failed after 4
// attempts: rpc error: code = ..."); that becomes a short note instead.
func serverStatus(err error) (st *status.Status, attempts string) {
	var inner interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &inner) {
		return nil, ""
	}
	st = inner.GRPCStatus()
	if m := retriesExhausted.FindStringSubmatch(err.Error()); m != nil {
		attempts = " (after " + m[1] + " attempts)"
	}
	return st, attempts
}

var retriesExhausted = regexp.MustCompile(`^max retries exhausted: failed after (\d+) attempts`)

// hint says what to try next for the errors people run into first.
func (a *app) hint(st *status.Status) string {
	var s settings
	if a.cfg != nil {
		s = *a.cfg
	}
	msg := st.Message()
	switch st.Code() {
	case codes.Unauthenticated:
		if s.token == "" {
			return "no token was sent: pass one with --token-file FILE, --token or " + envToken
		}
		return "the server refused the token from " + s.tokenSource + "; it may have expired: get a fresh one"
	case codes.PermissionDenied:
		if s.tenant != "" {
			return fmt.Sprintf("your subject or groups need a role in tenant %q (chosen by --tenant or %s)", s.tenant, envTenant)
		}
		return "your subject or groups need a role in the tenant, or platform admin for tenant writes"
	case codes.Unavailable:
		switch {
		case strings.Contains(msg, "first record does not look like a TLS handshake"):
			return fmt.Sprintf("the server at %s speaks plaintext: add --insecure (loopback addresses only)", s.server)
		case strings.Contains(msg, "certificate signed by unknown authority"):
			return "the server's certificate is not trusted: pass its CA with --ca-file"
		case strings.Contains(msg, "connection refused"), strings.Contains(msg, "no such host"):
			return fmt.Sprintf("is Trainyard running at %s? set --server or %s", s.server, envServer)
		}
	case codes.DeadlineExceeded:
		return "the request took longer than --timeout"
	case codes.OutOfRange:
		if strings.Contains(msg, "afterEventId") {
			return "the server no longer keeps events that old: 'tyctl jobs list --watch' lists the jobs as they are and follows from there"
		}
	}
	return ""
}
