package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func withDetails(t *testing.T, st *status.Status, details ...*errdetails.BadRequest) error {
	t.Helper()
	for _, d := range details {
		var err error
		st, err = st.WithDetails(d)
		require.NoError(t, err)
	}
	return st.Err()
}

func TestRenderBadRequest(t *testing.T) {
	err := withDetails(t, status.New(codes.InvalidArgument, "spec.replicas[1].image: is required (and more, see details)"),
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "spec.replicas[1].image", Description: "is required"},
			{Field: "spec.runPolicy.backoffLimit", Description: "101 is out of range 0..100"},
		}})
	var out bytes.Buffer
	(&app{}).renderError(&out, err)
	require.Equal(t, "tyctl: InvalidArgument: spec.replicas[1].image: is required (and more, see details)\n"+
		"  spec.replicas[1].image: is required\n"+
		"  spec.runPolicy.backoffLimit: 101 is out of range 0..100\n", out.String())
}

func TestRenderPreconditionFailure(t *testing.T) {
	st, err := status.New(codes.FailedPrecondition, "the job needs more than tenant \"ml\"'s whole quota: 10 GPUs (quota 8)").
		WithDetails(&errdetails.PreconditionFailure{Violations: []*errdetails.PreconditionFailure_Violation{
			{Type: "QUOTA", Subject: "tenants/ml", Description: "10 GPUs (quota 8)"},
		}})
	require.NoError(t, err)
	var out bytes.Buffer
	(&app{}).renderError(&out, st.Err())
	require.Equal(t, "tyctl: FailedPrecondition: the job needs more than tenant \"ml\"'s whole quota: 10 GPUs (quota 8)\n"+
		"  QUOTA tenants/ml: 10 GPUs (quota 8)\n", out.String())
}

func TestRenderHints(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  settings
		err  error
		hint string
	}{
		{"no token", settings{}, status.Error(codes.Unauthenticated, "missing bearer token"),
			"hint: no token was sent: pass one with --token-file FILE, --token or TYCTL_TOKEN\n"},
		{"refused token", settings{token: "t0ken-value", tokenSource: "$TYCTL_TOKEN"}, status.Error(codes.Unauthenticated, "token expired"),
			"hint: the server refused the token from $TYCTL_TOKEN; it may have expired: get a fresh one\n"},
		{"not a member", settings{tenant: "ml"}, status.Error(codes.PermissionDenied, "no role in tenant"),
			"hint: your subject or groups need a role in tenant \"ml\" (chosen by --tenant or TYCTL_TENANT)\n"},
		{"plaintext server", settings{server: "localhost:9090"},
			status.Error(codes.Unavailable, "connection error: desc = \"transport: authentication handshake failed: tls: first record does not look like a TLS handshake\""),
			"hint: the server at localhost:9090 speaks plaintext: add --insecure (loopback addresses only)\n"},
		{"nothing listening", settings{server: "localhost:9090"},
			status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:9090: connect: connection refused\""),
			"hint: is Trainyard running at localhost:9090? set --server or TYCTL_SERVER\n"},
		{"not found: no hint", settings{}, status.Error(codes.NotFound, `job "x" not found`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			var out bytes.Buffer
			(&app{cfg: &cfg}).renderError(&out, tc.err)
			lines := bytes.SplitAfter(out.Bytes(), []byte("\n"))
			require.Equal(t, fmt.Sprintf("tyctl: %s: %s\n", status.Code(tc.err), status.Convert(tc.err).Message()), string(lines[0]))
			require.Equal(t, tc.hint, string(bytes.Join(lines[1:], nil)))
			require.NotContains(t, out.String(), "t0ken-value")
		})
	}
}

func TestExitCodes(t *testing.T) {
	var stderr bytes.Buffer
	a := &app{stderr: &stderr}
	ctx := context.Background()
	require.Equal(t, 0, a.exitCode(ctx, nil))
	require.Equal(t, 1, a.exitCode(ctx, fmt.Errorf("watch: %w", exitStatus(1))))
	require.Empty(t, stderr.String(), "an exit status says nothing more")
	require.Equal(t, 1, a.exitCode(ctx, errors.New("no tenant: pass --tenant or set TYCTL_TENANT")))
	require.Equal(t, "tyctl: no tenant: pass --tenant or set TYCTL_TENANT\n", stderr.String())

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.Equal(t, 130, a.exitCode(cancelled, status.Error(codes.Canceled, "context canceled")))
}

func TestRenderRetriesExhausted(t *testing.T) {
	// What grpc-go returns once the retry policy gives up.
	err := fmt.Errorf("max retries exhausted: failed after 4 attempts: %w",
		status.Error(codes.Unavailable, "this server has no Kubernetes cluster configured to keep secret values"))
	var out bytes.Buffer
	(&app{}).renderError(&out, err)
	require.Equal(t, "tyctl: Unavailable: this server has no Kubernetes cluster configured to keep secret values (after 4 attempts)\n", out.String())
}
