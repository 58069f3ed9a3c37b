//go:build bench || integration

package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/trainyard/trainyard/integration/cluster"
)

// profileAPIServer, when TRAINYARD_BENCH_PROFILE_DIR is set, takes a CPU
// profile of the API server for TRAINYARD_BENCH_PROFILE_SECONDS (default
// 30) starting after (from now), in the background, and writes it to
// <dir>/<name>-apiserver.pprof; the function returned waits for it. The
// local cluster must have been started with cluster.EnvProfiling=1 (the
// API server's /debug/pprof is off otherwise). For finding where a phase's
// API server time goes (`go tool pprof -top`).
func profileAPIServer(tb testing.TB, cfg *rest.Config, name string, after time.Duration) (wait func()) {
	dir := os.Getenv("TRAINYARD_BENCH_PROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	if os.Getenv(cluster.EnvProfiling) != "1" {
		tb.Fatalf("TRAINYARD_BENCH_PROFILE_DIR needs %s=1", cluster.EnvProfiling)
	}
	seconds := envInt(tb, "TRAINYARD_BENCH_PROFILE_SECONDS", 30)
	kc := kubernetes.NewForConfigOrDie(cfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(after)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+30)*time.Second)
		defer cancel()
		raw, err := kc.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(seconds)).DoRaw(ctx)
		if err != nil {
			tb.Errorf("API server profile %s: %v", name, err)
			return
		}
		if err := os.WriteFile(filepath.Join(dir, name+"-apiserver.pprof"), raw, 0o644); err != nil {
			tb.Errorf("API server profile %s: %v", name, err)
		}
	}()
	return func() { <-done }
}

// profileServe, when TRAINYARD_BENCH_PROFILE_DIR is set and serve runs
// with --pprof-addr, takes a CPU profile of serve for d (whole seconds, at
// least 1) from now, in the background, and writes it to
// <dir>/<name>-serve.pprof; the function returned waits for it. The store
// section profiles its gRPC rows this way (issue 47).
func profileServe(tb testing.TB, serve *proc, name string, d time.Duration) (wait func()) {
	dir, addr := os.Getenv("TRAINYARD_BENCH_PROFILE_DIR"), serve.flag("pprof-addr")
	if dir == "" || addr == "" {
		return func() {}
	}
	seconds := max(1, int(d.Seconds()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		u := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds)
		resp, err := http.Get(u)
		if err != nil {
			tb.Errorf("serve profile %s: %v", name, err)
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", u, resp.Status)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+"-serve.pprof"), raw, 0o644)
		}
		if err != nil {
			tb.Errorf("serve profile %s: %v", name, err)
		}
	}()
	return func() { <-done }
}
