package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
)

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

func TestStreamLimiterPerCaller(t *testing.T) {
	l := newStreamLimiter(2)
	ic := l.interceptor()
	info := &grpc.StreamServerInfo{FullMethod: "/trainyard.v1.JobService/WatchJobs"}
	as := func(subject string) grpc.ServerStream {
		return ctxStream{ctx: auth.WithPrincipal(context.Background(), auth.Principal{Subject: subject})}
	}
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	hold := func(any, grpc.ServerStream) error {
		started <- struct{}{}
		<-release
		return nil
	}
	done := make(chan error, 10)
	for range 2 {
		go func() { done <- ic(nil, as("alice"), info, hold) }()
		<-started
	}
	require.Equal(t, 2, l.count("alice"))

	err := ic(nil, as("alice"), info, hold)
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "at most 2")

	go func() { done <- ic(nil, as("bob"), info, hold) }()
	<-started
	go func() { done <- ic(nil, ctxStream{ctx: context.Background()}, info, hold) }()
	<-started // no principal (health): not counted

	close(release)
	for range 4 {
		require.NoError(t, <-done)
	}
	require.Zero(t, l.count("alice"))
	require.Zero(t, l.count("bob"))
	require.Empty(t, l.open)
	require.NoError(t, ic(nil, as("alice"), info, func(any, grpc.ServerStream) error { return nil }))
}

func TestReadyzHidesTheError(t *testing.T) {
	var logs strings.Builder
	s := &Server{cfg: Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Ready: []ReadyCheck{
		{Name: "postgres", Check: func(context.Context) error {
			return errors.New("dial tcp 10.0.3.7:5432: connect: connection refused (user trainyard)")
		}},
		{Name: "oidc", Check: func(context.Context) error { return nil }},
	}}}
	rec := httptest.NewRecorder()
	s.readyz(rec, httptest.NewRequest("GET", "/readyz", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	body, _ := io.ReadAll(rec.Body)
	require.Equal(t, "not ready: postgres\n", string(body))
	require.Contains(t, logs.String(), "10.0.3.7:5432", "the detail is logged")

	s.cfg.Ready[0].Check = func(context.Context) error { return nil }
	rec = httptest.NewRecorder()
	s.readyz(rec, httptest.NewRequest("GET", "/readyz", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "ok\n", rec.Body.String())
}
