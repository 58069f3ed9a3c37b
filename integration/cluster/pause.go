package cluster

import (
	"fmt"
	"syscall"
)

// Pause stops a component of a cluster this process started (by its
// process name: "kube-scheduler", "kwok", ...) with SIGSTOP: it keeps its
// state and connections and does nothing until resume sends SIGCONT.
// Tests use it to hold kube-scheduler while they set up what it will find
// when it wakes. Resume is safe to call more than once.
func (c *Cluster) Pause(name string) (resume func(), err error) {
	if c.state == nil {
		return nil, fmt.Errorf("cluster: %s is not a process of this cluster (attached cluster)", name)
	}
	for _, p := range c.state.Processes {
		if p.Name != name || !p.Alive() {
			continue
		}
		if err := syscall.Kill(p.PID, syscall.SIGSTOP); err != nil {
			return nil, fmt.Errorf("cluster: pause %s: %w", name, err)
		}
		return func() { _ = syscall.Kill(p.PID, syscall.SIGCONT) }, nil
	}
	return nil, fmt.Errorf("cluster: no running process %q", name)
}
