package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is one component the cluster started. Each runs in its own session
// (so its own process group, with PGID == PID) and is recorded with the start
// time the kernel gave it, so that a PID reused by an unrelated process after
// a crash is never signalled.
type Process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// StartTicks is field 22 of /proc/<pid>/stat (start time in clock ticks
	// since boot): PID plus start time identifies a process for its lifetime.
	StartTicks uint64 `json:"startTicks"`
	Log        string `json:"log"`
	Binary     string `json:"binary"`
	// Args are the flags it was started with, so that Restart runs it
	// again exactly so (same ports, same data).
	Args []string `json:"args"`

	exited chan struct{} // closed when this process (the one that started it) reaped it
}

// startProcess runs bin with args in dir, stdout and stderr appended to logPath.
// With detach the component survives this process (localcluster up);
// otherwise the kernel kills it when this process dies (Pdeathsig), so a
// test binary killed by a timeout leaves nothing behind.
func startProcess(name, bin string, args, env []string, dir, logPath string, detach bool) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "# %s %s\n", bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if !detach {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, PID: cmd.Process.Pid, Log: logPath, Binary: bin, Args: args, exited: make(chan struct{})}
	p.StartTicks, _ = startTicks(p.PID)
	go func() {
		_ = cmd.Wait() // reap, so that a dead child is not a zombie that looks alive
		close(p.exited)
	}()
	return p, nil
}

// Alive reports whether the recorded process still runs (a zombie does not count).
func (p *Process) Alive() bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return false
		default:
		}
	}
	ticks, state, err := procStat(p.PID)
	if err != nil {
		return false
	}
	if p.StartTicks != 0 && ticks != p.StartTicks {
		return false // PID reused by another process
	}
	return state != "Z" && state != "X"
}

// Stop sends SIGTERM to the process group, waits up to grace, then SIGKILL,
// and returns once the process is gone (or an error if it is still there).
func (p *Process) Stop(grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	if p.waitGone(grace) {
		return nil
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	if p.waitGone(10 * time.Second) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) survived SIGKILL", p.Name, p.PID)
}

func (p *Process) waitGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !p.Alive() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LogTail returns the last n lines of the component's log.
func (p *Process) LogTail(n int) string {
	data, err := os.ReadFile(p.Log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func startTicks(pid int) (uint64, error) {
	ticks, _, err := procStat(pid)
	return ticks, err
}

// procStat reads the start time and state of pid from /proc/<pid>/stat.
func procStat(pid int) (ticks uint64, state string, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", err
	}
	// The command name (field 2) may hold spaces and parentheses: split after its last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, "", errors.New("malformed stat")
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state); start time is field 22.
	if len(fields) < 20 {
		return 0, "", errors.New("short stat")
	}
	ticks, err = strconv.ParseUint(fields[19], 10, 64)
	return ticks, fields[0], err
}
