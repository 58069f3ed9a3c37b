//go:build integration

package worker

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/scheduler"
)

func gpuNode(name string, gpus int64) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"gpu": "a100"}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// The agent as the worker process wires it: nodes from the scheduler's
// informers (on the fake clientset), heartbeats into Postgres, the sweep
// on the scheduler lease (OnLead). The default cluster gets capacity,
// usage and nodes; a new node is published; an agent that stops is
// UNREACHABLE once its last heartbeat is older than the timeout, and
// READY again when it reports.
func TestClusterAgentHeartbeatAndSweep(t *testing.T) {
	b := setup(t)
	_, err := b.kube.CoreV1().Nodes().Create(b.ctx, gpuNode("n1", 8), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = b.kube.CoreV1().Pods("ty-acme").Create(b.ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "someone-else", Namespace: "ty-acme"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	var sch *scheduler.Scheduler
	agent, err := NewClusterAgent(ClusterAgentConfig{
		Agent: "w1", Store: b.store, Nodes: func() ([]cluster.Node, bool) { return sch.ClusterNodes() },
		Heartbeat: 20 * time.Millisecond, Timeout: time.Minute, Registry: prometheus.NewRegistry(), Logger: log,
	})
	require.NoError(t, err)
	sch, err = scheduler.New(scheduler.Config{ID: "w1", Store: b.store, Kube: b.kube, LeaseTTL: time.Hour, Period: time.Hour,
		OnLead: agent.Sweep, Logger: log})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { _ = sch.Run(ctx) })
	runAgent := func() context.CancelFunc {
		actx, stop := context.WithCancel(ctx)
		wg.Go(func() { _ = agent.Run(actx) })
		return stop
	}
	stopAgent := runAgent()

	require.Eventually(t, func() bool {
		c, err := b.store.ClusterGet(b.ctx, cluster.Default)
		return err == nil && c.Nodes == 1 && c.Usage[job.GPU] == 2
	}, 10*time.Second, 10*time.Millisecond)
	c, err := b.store.ClusterGet(b.ctx, cluster.Default)
	require.NoError(t, err)
	require.Equal(t, job.Vector{job.GPU: 8, job.Pods: 110}, c.Capacity)
	require.Equal(t, job.Vector{job.GPU: 2, job.Pods: 1}, c.Usage, "others' pods count")
	require.Equal(t, "w1", c.Agent)
	require.Equal(t, b.clock.Now(), c.HeartbeatTime.UTC())
	require.Equal(t, cluster.Ready, c.State())
	ready, err := b.store.ClusterNodesReady(b.ctx)
	require.NoError(t, err)
	require.Len(t, ready, 1)
	require.Equal(t, []cluster.Node{{Name: "n1", Labels: map[string]string{"gpu": "a100"},
		Allocatable: job.Vector{job.GPU: 8, job.Pods: 110}, Used: job.Vector{job.GPU: 2, job.Pods: 1}}}, ready[0].Nodes)

	// A node joins: published with the next heartbeat.
	_, err = b.kube.CoreV1().Nodes().Create(b.ctx, gpuNode("n2", 4), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ready, err := b.store.ClusterNodesReady(b.ctx)
		return err == nil && len(ready) == 1 && len(ready[0].Nodes) == 2
	}, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(agent.state.WithLabelValues(cluster.Default, string(cluster.Ready))) == 1
	}, 10*time.Second, 10*time.Millisecond, "the leader exports each cluster's state")

	// The agent stops; a minute and more passes: UNREACHABLE, and its nodes
	// leave the scheduling picture.
	stopAgent()
	b.clock.Advance(61 * time.Second)
	require.Eventually(t, func() bool {
		c, err := b.store.ClusterGet(b.ctx, cluster.Default)
		return err == nil && c.State() == cluster.Unreachable
	}, 10*time.Second, 10*time.Millisecond)
	ready, err = b.store.ClusterNodesReady(b.ctx)
	require.NoError(t, err)
	require.Empty(t, ready)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(agent.heartbeatAge.WithLabelValues(cluster.Default)) > 0
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1.0, testutil.ToFloat64(agent.transitions.WithLabelValues(cluster.Default, string(cluster.Unreachable))))

	// It reports again: READY at the next sweep.
	runAgent()
	require.Eventually(t, func() bool {
		c, err := b.store.ClusterGet(b.ctx, cluster.Default)
		return err == nil && c.State() == cluster.Ready
	}, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(agent.transitions.WithLabelValues(cluster.Default, string(cluster.Ready))) == 1
	}, 10*time.Second, 10*time.Millisecond)
	ready, err = b.store.ClusterNodesReady(b.ctx)
	require.NoError(t, err)
	require.Len(t, ready, 1)
}

// An agent for a cluster nobody registered writes nothing and says so;
// once registered, its first heartbeat publishes the nodes.
func TestClusterAgentUnregistered(t *testing.T) {
	b := setup(t)
	nodes := []cluster.Node{{Name: "n1", Allocatable: job.Vector{job.GPU: 8}}}
	agent, err := NewClusterAgent(ClusterAgentConfig{Cluster: "eu-1", Agent: "w1", Store: b.store,
		Nodes: func() ([]cluster.Node, bool) { return nodes, true }})
	require.NoError(t, err)
	require.ErrorContains(t, agent.beat(b.ctx), "tyctl clusters register eu-1")
	_, err = b.store.ClusterCreate(b.ctx, cluster.Cluster{Name: "eu-1"})
	require.NoError(t, err)
	require.NoError(t, agent.beat(b.ctx))
	c, err := b.store.ClusterGet(b.ctx, "eu-1")
	require.NoError(t, err)
	require.Equal(t, job.Vector{job.GPU: 8}, c.Capacity)
	_, err = b.store.ClusterSweep(b.ctx, time.Minute)
	require.NoError(t, err)
	ready, err := b.store.ClusterNodesReady(b.ctx)
	require.NoError(t, err)
	require.Len(t, ready, 1)
	require.Equal(t, "eu-1", ready[0].Cluster)
	require.Equal(t, nodes, ready[0].Nodes)

	_, err = NewClusterAgent(ClusterAgentConfig{Cluster: "EU", Agent: "w1", Store: b.store, Nodes: func() ([]cluster.Node, bool) { return nil, false }})
	require.ErrorContains(t, err, "cluster name")
	_, err = NewClusterAgent(ClusterAgentConfig{Agent: "w1", Store: b.store, Nodes: func() ([]cluster.Node, bool) { return nil, false },
		Heartbeat: time.Minute, Timeout: time.Minute})
	require.ErrorContains(t, err, "longer than the heartbeat")
}
