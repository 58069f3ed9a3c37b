package prometheus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options configure Start.
type Options struct {
	// Targets are host:port pairs scraped at /metrics (an Exporter's Target).
	Targets []string
	// ScrapeInterval defaults to 1s.
	ScrapeInterval time.Duration
	// Dir holds the config, the TSDB and the log; a temporary directory
	// (removed by Stop) when empty.
	Dir string
	// Progress receives build.sh's output (a first build takes minutes).
	Progress io.Writer
}

// Server is a running Prometheus.
type Server struct {
	// URL is its base URL, http://127.0.0.1:<port>.
	URL string
	// LogPath is its log file.
	LogPath string
	cmd     *exec.Cmd
	dir     string
	tmp     bool
	done    chan error
}

// Start builds Prometheus if needed, writes a config that scrapes
// Targets every ScrapeInterval (honor_labels: true, so the exporter's pod
// and namespace labels stay as they are, as with the dcgm-exporter's
// ServiceMonitor), starts it on a free 127.0.0.1 port and returns once it
// is ready. Stop stops it.
func Start(ctx context.Context, o Options) (*Server, error) {
	bin, err := EnsureBinary(ctx, o.Progress)
	if err != nil {
		return nil, err
	}
	if o.ScrapeInterval <= 0 {
		o.ScrapeInterval = time.Second
	}
	s := &Server{dir: o.Dir, done: make(chan error, 1)}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "trainyard-prometheus-*"); err != nil {
			return nil, err
		}
		s.tmp = true
	}
	cfg := filepath.Join(s.dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config(o)), 0o644); err != nil {
		return nil, s.cleanup(err)
	}
	port, err := freePort()
	if err != nil {
		return nil, s.cleanup(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s.URL = "http://" + addr
	s.LogPath = filepath.Join(s.dir, "prometheus.log")
	logf, err := os.Create(s.LogPath)
	if err != nil {
		return nil, s.cleanup(err)
	}
	defer logf.Close()
	s.cmd = exec.Command(bin,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(s.dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return nil, s.cleanup(fmt.Errorf("starting prometheus: %w", err))
	}
	go func() { s.done <- s.cmd.Wait() }()
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func config(o Options) string {
	iv := o.ScrapeInterval.String()
	targets := make([]string, len(o.Targets))
	for i, t := range o.Targets {
		targets[i] = strconv.Quote(t)
	}
	return "global:\n" +
		"  scrape_interval: " + iv + "\n" +
		"  scrape_timeout: " + iv + "\n" +
		"  evaluation_interval: " + iv + "\n" +
		"scrape_configs:\n" +
		"  - job_name: dcgm\n" +
		"    honor_labels: true\n" +
		"    static_configs:\n" +
		"      - targets: [" + strings.Join(targets, ", ") + "]\n"
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("prometheus exited before it was ready (%v); log %s:\n%s", err, s.LogPath, s.Log())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus not ready at %s after %s; log %s:\n%s", s.URL, limit, s.LogPath, s.Log())
		}
	}
}

// Log is the server's log so far (its last 8 KiB).
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.LogPath)
	return string(b[max(len(b)-8<<10, 0):])
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and removes a
// temporary directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	}
	_ = s.cleanup(nil)
}

func (s *Server) cleanup(err error) error {
	if s.tmp {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}
