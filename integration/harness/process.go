package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a trainyard binary the test started. Its output goes to a log
// file in the test's temp dir and to memory, so a test can wait for a line
// and a failing test prints the tail.
type Process struct {
	Name    string
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error

	mu    sync.Mutex
	lines []string
	grew  chan struct{}
}

// StartProcess runs bin with args. The process is killed when the test ends
// (and by the kernel if the test binary dies first).
func StartProcess(t testing.TB, name, bin string, args ...string) *Process {
	t.Helper()
	return StartProcessEnv(t, name, os.Environ(), bin, args...)
}

// StartProcessEnv is StartProcess with env instead of the test's own
// environment (a remote agent must not inherit DATABASE_URL).
func StartProcessEnv(t testing.TB, name string, env []string, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{
		Name:    name,
		LogPath: filepath.Join(t.TempDir(), name+".log"),
		done:    make(chan struct{}),
		grew:    make(chan struct{}),
	}
	logFile, err := os.Create(p.LogPath)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	r, w := io.Pipe()
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout = w
	p.cmd.Stderr = w
	p.cmd.Env = append(slices.Clone(env), "TRAINYARD_LOG_FORMAT=text")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			p.mu.Lock()
			p.lines = append(p.lines, line)
			close(p.grew)
			p.grew = make(chan struct{})
			p.mu.Unlock()
		}
		logFile.Close()
	}()
	go func() {
		p.err = p.cmd.Wait()
		w.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- last lines of %s (%s) ---\n%s", name, p.LogPath, p.Tail(40))
		}
	})
	return p
}

// WaitFor waits for a log line matching re and returns its submatches.
func (p *Process) WaitFor(t testing.TB, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.After(timeout)
	seen := 0
	for {
		p.mu.Lock()
		lines, grew := p.lines[seen:], p.grew
		seen = len(p.lines)
		p.mu.Unlock()
		for _, l := range lines {
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		}
		select {
		case <-grew:
		case <-p.done:
			t.Fatalf("%s exited (%v) before logging %q:\n%s", p.Name, p.err, re, p.Tail(40))
		case <-deadline:
			t.Fatalf("%s did not log %q within %s:\n%s", p.Name, re, timeout, p.Tail(40))
		}
	}
}

// Logs returns everything the process printed so far.
func (p *Process) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// Tail returns the last n lines.
func (p *Process) Tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	from := max(0, len(p.lines)-n)
	return strings.Join(p.lines[from:], "\n")
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL to the process group and waits for it: a crash.
func (p *Process) Kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// Stop asks the process to shut down (SIGTERM) and waits up to 15 s, then kills it.
func (p *Process) Stop() error {
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(15 * time.Second):
		p.Kill()
		return fmt.Errorf("%s did not stop within 15s", p.Name)
	}
}

// Pause stops the process group with SIGSTOP: it keeps its connections
// and state and does nothing (a GC pause, a frozen VM) until Resume.
func (p *Process) Pause() { p.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume() { p.signal(syscall.SIGCONT) }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *Process) signal(sig syscall.Signal) {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// run executes bin to completion and returns its combined output.
func run(ctx context.Context, bin string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
