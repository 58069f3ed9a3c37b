package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// syncBuffer is a bytes.Buffer safe to read while tyctl writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestJobsTensorBoardServesThroughTrainyard(t *testing.T) {
	f := startFake(t)
	f.jobs.jobs = []*pb.Job{
		{Name: "tenants/ml/jobs/board", Spec: &pb.JobSpec{Tensorboard: &pb.TensorBoard{Enabled: true}}},
		{Name: "tenants/ml/jobs/plain", Spec: &pb.JobSpec{}},
	}
	// Trainyard's REST side: records what tyctl's local proxy sends.
	var mu sync.Mutex
	var got []*http.Request
	rest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Clone(context.Background()))
		mu.Unlock()
		_, _ = io.WriteString(w, "tensorboard page "+r.URL.RequestURI())
	}))
	t.Cleanup(rest.Close)
	env := map[string]string{envToken: testToken, envTenant: "ml", envHTTP: rest.URL, envConfig: filepath.Join(t.TempDir(), "c.yaml")}

	r := f.tyctl(t, env, "jobs", "tensorboard", "board", "--url")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, rest.URL+"/v1/tenants/ml/jobs/board/tensorboard/\n", r.stdout)

	r = f.tyctl(t, env, "jobs", "tensorboard", "plain", "--no-browser")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "job plain has no TensorBoard")

	// Serve until cancelled; the test plays the browser.
	var stdout, stderr syncBuffer
	a := newApp(strings.NewReader(""), &stdout, &stderr, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	opened := make(chan string, 1)
	a.openURL = func(u string) error { opened <- u; return nil }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--server", f.addr, "--insecure", "jobs", "tensorboard", "board"}, a)
	}()
	var local string
	select {
	case local = <-opened:
	case <-time.After(20 * time.Second):
		t.Fatalf("no browser opened; stderr: %s", stderr.String())
	}
	require.Regexp(t, regexp.MustCompile(`^http://127\.0\.0\.1:\d+/$`), local)
	require.Contains(t, stderr.String(), "TensorBoard of job board: "+local)

	resp, err := http.Get(local + "data/runs?tag=loss")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "tensorboard page /v1/tenants/ml/jobs/board/tensorboard/data/runs?tag=loss", string(body))
	mu.Lock()
	require.Equal(t, "Bearer "+testToken, got[len(got)-1].Header.Get("Authorization"), "tyctl adds the token the browser cannot")
	mu.Unlock()
	require.NotContains(t, stdout.String()+stderr.String(), testToken)

	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code, "serving until interrupted is success, as jobs watch without NAME")
	case <-time.After(10 * time.Second):
		t.Fatal("tyctl did not stop")
	}
}

func TestRESTBaseFromServer(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	for server, want := range map[string]string{
		"localhost:9090":             "https://localhost:8080",
		"trainyard.example.com:443":  "https://trainyard.example.com:443",
		"dns:///ty.example.com:8443": "https://ty.example.com:8443",
	} {
		got, err := restBase("", none, settings{server: server})
		require.NoError(t, err)
		require.Equal(t, want, got, server)
	}
	got, err := restBase("", none, settings{server: "127.0.0.1:9090", insecure: true})
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8080", got)
	_, err = restBase("ftp://x", none, settings{server: "a:1"})
	require.Error(t, err)
}
