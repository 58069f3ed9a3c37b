package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// stateFile is the record of a running cluster inside its state directory.
// Start writes it as each component starts, Stop and `localcluster down`
// read it to stop exactly what was started.
const stateFile = "state.json"

// State is what a state directory records about its cluster.
type State struct {
	Dir        string         `json:"dir"`
	BinDir     string         `json:"binDir"`
	Kubeconfig string         `json:"kubeconfig"`
	Server     string         `json:"server"`
	Ports      map[string]int `json:"ports"`
	Processes  []*Process     `json:"processes"`
	Detached   bool           `json:"detached"`
	// Owner is the PID of the process that ran Start.
	Owner   int       `json:"owner"`
	Started time.Time `json:"started"`
	// Ready is set once Start saw the whole cluster ready.
	Ready bool `json:"ready"`
}

func (s *State) save() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.Dir, stateFile))
}

// ReadState loads the state recorded in dir. It returns an error wrapping
// os.ErrNotExist when dir holds no cluster.
func ReadState(dir string) (*State, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return &s, nil
}

// Alive lists the recorded processes that still run.
func (s *State) Alive() []*Process {
	var out []*Process
	for _, p := range s.Processes {
		if p.Alive() {
			out = append(out, p)
		}
	}
	return out
}

// stop stops the recorded processes, last started first, and reports any
// that would not die.
func (s *State) stop() error {
	var errs []error
	for i := len(s.Processes) - 1; i >= 0; i-- {
		if err := s.Processes[i].Stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StopDir stops the cluster recorded in dir, exactly the processes it
// recorded, checks they are gone and their ports closed, and removes dir
// unless keep. A dir without state is removed and is not an error.
func StopDir(dir string, keep bool) error {
	s, err := ReadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		if keep {
			return nil
		}
		return os.RemoveAll(dir)
	}
	if err != nil {
		return err
	}
	if err := s.stop(); err != nil {
		return err
	}
	if err := s.checkPortsClosed(); err != nil {
		return err
	}
	if keep {
		return nil
	}
	return os.RemoveAll(dir)
}

// checkPortsClosed waits briefly for every recorded port to refuse connections.
func (s *State) checkPortsClosed() error {
	deadline := time.Now().Add(10 * time.Second)
	for name, port := range s.Ports {
		for portOpen(port) {
			if time.Now().After(deadline) {
				return fmt.Errorf("port %d (%s) still accepts connections after stop", port, name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

func portOpen(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// FreePorts returns n distinct ports free on 127.0.0.1 now, below the
// kernel's ephemeral range when there is room there. A port from the
// ephemeral range (what ":0" gives) can be taken meanwhile as the source
// port of any outgoing connection on the machine, and a component that
// restarts on its recorded port (Restart) could not listen then. (The
// chaos suite's etcd restart that failed with "bind: address already in
// use" had another cause: waitPortsFree.) A port can still be taken by
// another listener
// between here and the component's bind; Start then fails with the
// component's log naming the port.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	lo, _ := ephemeralPorts()
	const first = 10000
	if lo-first >= 100*n {
		for _, i := range rand.Perm(lo - first) {
			if len(ports) == n {
				return ports, nil
			}
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(first+i))
			if err != nil {
				continue // taken
			}
			ls = append(ls, l)
			ports = append(ports, first+i)
		}
	}
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralPorts is the kernel's range of source ports for outgoing
// connections (Linux's default when it cannot be read).
func ephemeralPorts() (lo, hi int) {
	lo, hi = 32768, 60999
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	var a, b int
	if _, err := fmt.Sscan(string(data), &a, &b); err == nil && a > 0 && a <= b {
		return a, b
	}
	return lo, hi
}

// lockDir takes an exclusive lock on dir+".lock" so two `localcluster up`
// runs on the same name do not race. The returned func releases it.
func lockDir(dir string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
