package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	idx, err := c.kill(names)
	if err != nil {
		return err
	}
	for _, i := range idx {
		if err := c.startAgain(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// Kill crashes components of a cluster this process started (by process
// name) with SIGKILL and leaves them down: a control plane lost.
// RestartExited brings them back.
func (c *Cluster) Kill(names ...string) error {
	if c.state == nil {
		return fmt.Errorf("cluster: Kill needs a cluster this process started, not a %s one", c.Kind)
	}
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	_, err := c.kill(names)
	return err
}

// kill crashes the named components, in reverse order (clients of a
// component go before it), and returns their indexes in the state's
// processes. c.restartMu is held.
func (c *Cluster) kill(names []string) ([]int, error) {
	s := c.state
	idx := make([]int, len(names))
	for i, name := range names {
		idx[i] = slices.IndexFunc(s.Processes, func(p *Process) bool { return p.Name == name })
		if idx[i] < 0 {
			return nil, fmt.Errorf("cluster: no process %q", name)
		}
	}
	for i := len(idx) - 1; i >= 0; i-- {
		p := s.Processes[idx[i]]
		if !p.Alive() {
			continue // and its PID may be someone else's by now
		}
		_ = syscall.Kill(-p.PID, syscall.SIGKILL)
		if !p.waitGone(10 * time.Second) {
			return nil, fmt.Errorf("cluster: %s (pid %d) survived SIGKILL", p.Name, p.PID)
		}
	}
	return idx, nil
}

// RestartExited starts again, in place, every component of a cluster this
// process started that has exited by itself, and returns their names: what
// a kubelet does for a control plane's static pods, which this cluster has
// no kubelet to do. kube-scheduler, for one, exits on purpose when it finds
// its cache inconsistent with the API server — which etcd and the API
// server crashing under it can cause (the chaos suite saw it) — and counts
// on being restarted.
func (c *Cluster) RestartExited(ctx context.Context) ([]string, error) {
	if c.state == nil {
		return nil, fmt.Errorf("cluster: RestartExited needs a cluster this process started, not a %s one", c.Kind)
	}
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	if c.stopped {
		return nil, nil
	}
	var restarted []string
	for i, p := range c.state.Processes {
		if p.Alive() {
			continue
		}
		if err := c.startAgain(ctx, i); err != nil {
			return restarted, err
		}
		restarted = append(restarted, p.Name)
	}
	return restarted, nil
}

// startAgain starts the i-th recorded process again as it was started, and
// waits for its health check.
func (c *Cluster) startAgain(ctx context.Context, i int) error {
	s := c.state
	old := s.Processes[i]
	if err := waitPortsFree(ctx, c.portsOf(old.Name)); err != nil {
		return fmt.Errorf("cluster: restarting %s: %w", old.Name, err)
	}
	p, err := startProcess(old.Name, old.Binary, old.Args, componentEnv(s.Dir), s.Dir, old.Log, s.Detached)
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
	return nil
}

// portsOf is the ports the component listens on: its own, or, for etcd,
// etcd-client and etcd-peer.
func (c *Cluster) portsOf(name string) []int {
	var out []int
	for k, port := range c.state.Ports {
		if k == name || strings.HasPrefix(k, name+"-") {
			out = append(out, port)
		}
	}
	return out
}

// waitPortsFree waits until every port can be listened on again. A process
// killed with SIGKILL shows as a zombie (Alive false) once its main thread
// has exited, while its other threads, which share its listening sockets,
// may still be exiting: etcd restarted in that moment failed with "bind:
// address already in use" on its peer port (the chaos smoke, 2 runs in 15
// on 2026-12-05).
func waitPortsFree(ctx context.Context, ports []int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		busy := 0
		for _, port := range ports {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				busy = port
				break
			}
			_ = l.Close()
		}
		if busy == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("port %d still in use", busy)
		case <-time.After(50 * time.Millisecond):
		}
	}
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
