package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Restart crashes components of a cluster this process started (by process
// name: "etcd", "kube-apiserver", ...) with SIGKILL, then starts each again
// with the binary, flags, ports, data and log it had, in the order given,
// waiting for each to answer its health check before starting the next.
// It returns once all are healthy. The chaos suite restarts etcd and
// kube-apiserver this way; the other components, and Trainyard, reconnect
// by themselves.
//
// A crash, not a graceful stop, because that is the harder case for
// clients: watches end without a goodbye and requests in flight fail.
// etcd keeps its data (it runs with --unsafe-no-fsync, which loses writes
// only when the machine, not the process, dies).
func (c *Cluster) Restart(ctx context.Context, names ...string) error {
	if c.state == nil {
		return fmt.Errorf("cluster: Restart needs a cluster this process started, not a %s one", c.Kind)
	}
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	s := c.state
	idx := make([]int, len(names))
	for i, name := range names {
		idx[i] = slices.IndexFunc(s.Processes, func(p *Process) bool { return p.Name == name })
		if idx[i] < 0 {
			return fmt.Errorf("cluster: no process %q", name)
		}
	}
	// Stop in reverse order: clients of a component go before it.
	for i := len(idx) - 1; i >= 0; i-- {
		p := s.Processes[idx[i]]
		_ = syscall.Kill(-p.PID, syscall.SIGKILL)
		if !p.waitGone(10 * time.Second) {
			return fmt.Errorf("cluster: %s (pid %d) survived SIGKILL", p.Name, p.PID)
		}
	}
	env := componentEnv(s.Dir)
	for _, i := range idx {
		old := s.Processes[i]
		p, err := startProcess(old.Name, old.Binary, old.Args, env, s.Dir, old.Log, s.Detached)
		if err != nil {
			return err
		}
		s.Processes[i] = p
		if err := s.save(); err != nil {
			return err
		}
		if err := c.waitHealthy(ctx, p); err != nil {
			return fmt.Errorf("cluster: restarting %s: %w\n%s", p.Name, err, p.LogTail(15))
		}
	}
	return nil
}

// waitHealthy waits for a restarted component's health check: what
// StartLocal waits for when it starts it. Only p must stay alive meanwhile:
// the components restarted after it are still down.
func (c *Cluster) waitHealthy(ctx context.Context, p *Process) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var check func() bool
	switch port := c.state.Ports[p.Name]; p.Name {
	case "etcd":
		url := "http://127.0.0.1:" + strconv.Itoa(c.state.Ports["etcd-client"]) + "/health"
		check = func() bool { return httpOK(url) }
	case "kube-apiserver":
		check = func() bool {
			body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err == nil && strings.TrimSpace(string(body)) == "ok"
		}
	case "kube-controller-manager", "kube-scheduler":
		check = func() bool { return httpOK("https://127.0.0.1:" + strconv.Itoa(port) + "/healthz") }
	default:
		check = func() bool { return portOpen(port) }
	}
	dead := false
	err := waitFor(ctx, p.Name, nil, func() bool {
		dead = !p.Alive()
		return dead || check()
	})
	if dead {
		return errors.New("it exited")
	}
	return err
}
