//go:build integration

package cluster_test

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/integration/cluster"
)

// Restart crashes etcd and kube-apiserver and starts them again in place:
// the same ports, the same data (an object written before is there after),
// new processes; the components that stayed up keep working (a pod created
// after the restart is scheduled and run by kwok), and Stop still finds
// everything.
func TestRestartKeepsPortsAndData(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.StartLocal(ctx, cluster.Options{Nodes: []cluster.Node{cluster.CPUNode("solo")}})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Stop()) }()
	client := c.Client()
	_, err = client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "before"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pids := map[string]int{}
	for _, p := range c.State().Processes {
		pids[p.Name] = p.PID
	}
	ports := c.State().Ports["kube-apiserver"]

	require.NoError(t, c.Restart(ctx, "etcd", "kube-apiserver"))

	for _, p := range c.State().Processes {
		require.True(t, p.Alive(), p.Name)
		if p.Name == "etcd" || p.Name == "kube-apiserver" {
			require.NotEqual(t, pids[p.Name], p.PID, "%s is a new process", p.Name)
		} else {
			require.Equal(t, pids[p.Name], p.PID, "%s was left alone", p.Name)
		}
	}
	require.Equal(t, ports, c.State().Ports["kube-apiserver"])
	cm, err := client.CoreV1().ConfigMaps("default").Get(ctx, "before", metav1.GetOptions{})
	require.NoError(t, err, "etcd kept its data")
	require.Equal(t, "v", cm.Data["k"])

	// runs creates a pod and waits until it has run to the end.
	runs := func(name, why string) {
		t.Helper()
		_, err := client.CoreV1().Pods("default").Create(ctx, replicaPod(name), metav1.CreateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodSucceeded
		}, waitTimeout, 100*time.Millisecond, why)
	}
	runs("after", "the scheduler and kwok, left running, work with the new API server")

	// A component that exits by itself is started again by RestartExited,
	// and only that one.
	restarted, err := c.RestartExited(ctx)
	require.NoError(t, err)
	require.Empty(t, restarted, "nothing had exited")
	sched := c.State().Processes[slices.IndexFunc(c.State().Processes, func(p *cluster.Process) bool { return p.Name == "kube-scheduler" })]
	require.NoError(t, syscall.Kill(sched.PID, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !sched.Alive() }, 10*time.Second, 10*time.Millisecond)
	restarted, err = c.RestartExited(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"kube-scheduler"}, restarted)
	for _, p := range c.State().Processes {
		require.True(t, p.Alive(), p.Name)
	}
	runs("after-scheduler", "the restarted scheduler schedules")
}
