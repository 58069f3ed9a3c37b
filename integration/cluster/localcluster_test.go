//go:build integration

package cluster_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/integration/cluster"
)

// localcluster up starts a detached cluster that outlives the command, a
// second up finds it, an up after a crash replaces it, and down stops
// exactly what up recorded.
func TestLocalclusterUpDown(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "localcluster")
	build := exec.Command("go", "build", "-o", bin, "./cmd/localcluster")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	runDir := t.TempDir()
	lc := func(args ...string) (stdout, stderr string, err error) {
		cmd := exec.Command(bin, append([]string{"--run-dir", runDir, "--name", "t"}, args...)...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err = cmd.Run()
		return o.String(), e.String(), err
	}
	dir := filepath.Join(runDir, "t")
	t.Cleanup(func() { _, _, _ = lc("down") })

	stdout, stderr, err := lc("up")
	require.NoError(t, err, stderr)
	kubeconfig := lastLine(stdout)
	require.Equal(t, filepath.Join(dir, "kubeconfig"), kubeconfig)
	first, err := cluster.ReadState(dir)
	require.NoError(t, err)
	requireNodesReady(t, first.BinDir, kubeconfig) // the cluster outlived `up`
	requirePodLogs(t, first.BinDir, kubeconfig)

	stdout, stderr, err = lc("up")
	require.NoError(t, err, stderr)
	require.Equal(t, kubeconfig, lastLine(stdout))
	require.Contains(t, stderr, "already up")
	again, err := cluster.ReadState(dir)
	require.NoError(t, err)
	require.Equal(t, pids(first), pids(again), "a second up must not restart anything")

	_, stderr, err = lc("status")
	require.NoError(t, err, stderr)

	// A crash: the API server dies. status says so, up replaces the whole cluster.
	api := process(t, first, "kube-apiserver")
	require.NoError(t, syscall.Kill(-api.PID, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !api.Alive() }, waitTimeout, 50*time.Millisecond)
	_, _, err = lc("status")
	require.Error(t, err, "status must fail while a component is gone")

	stdout, stderr, err = lc("up")
	require.NoError(t, err, stderr)
	require.Contains(t, stderr, "cleaning up")
	require.Equal(t, kubeconfig, lastLine(stdout))
	fresh, err := cluster.ReadState(dir)
	require.NoError(t, err)
	for _, p := range first.Processes {
		require.False(t, p.Alive(), "stale %s (pid %d) survived the restart", p.Name, p.PID)
	}
	requireNodesReady(t, fresh.BinDir, kubeconfig)

	_, stderr, err = lc("down")
	require.NoError(t, err, stderr)
	require.NotZero(t, fresh.Ports["kwok"], "kwok's port is recorded")
	for _, p := range fresh.Processes {
		require.False(t, processExists(p.PID, p.StartTicks), "%s (pid %d) survived down", p.Name, p.PID)
	}
	for name, port := range fresh.Ports {
		require.False(t, portOpen(port), "%s port %d still open after down", name, port)
	}
	require.NoDirExists(t, dir)
	_, _, err = lc("status")
	require.Error(t, err)
	_, stderr, err = lc("down")
	require.NoError(t, err, "down twice is harmless: %s", stderr)
}

func requireNodesReady(t *testing.T, binDir, kubeconfig string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, "kubectl"), "--kubeconfig", kubeconfig, "get", "nodes", "--no-headers").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, len(cluster.DefaultNodes()), strings.Count(string(out), " Ready "), string(out))
}

// requirePodLogs checks `kubectl logs` on a cluster `up` started: a failing
// pod's log ends with the failure line.
func requirePodLogs(t *testing.T, binDir, kubeconfig string) {
	t.Helper()
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(binDir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := kubectl("run", "logs-check", "--image=tensorflow/tensorflow:2.16.1", "--restart=Never",
		"--annotations="+cluster.AnnotationExitCode+"=1")
	require.NoError(t, err, out)
	require.Eventually(t, func() bool {
		out, err = kubectl("get", "pod", "logs-check", "-o", "jsonpath={.status.phase}")
		return err == nil && out == "Failed"
	}, waitTimeout, 100*time.Millisecond, "pod logs-check: %s", out)
	out, err = kubectl("logs", "logs-check", "--tail=1")
	require.NoError(t, err, out)
	require.Equal(t, cluster.LogLineFailed+"\n", out)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func pids(s *cluster.State) map[string]int {
	m := map[string]int{}
	for _, p := range s.Processes {
		m[p.Name] = p.PID
	}
	return m
}

func process(t *testing.T, s *cluster.State, name string) *cluster.Process {
	t.Helper()
	for _, p := range s.Processes {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no %s in state", name)
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

// processExists reports whether pid is the process that started at startTicks
// (field 22 of /proc/<pid>/stat) and is not a zombie.
func processExists(pid int, startTicks uint64) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := string(data[bytes.LastIndexByte(data, ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 20 || f[0] == "Z" {
		return false
	}
	return f[19] == strconv.FormatUint(startTicks, 10)
}
