package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

func testNode(name string, gpus int64, ready, cordoned bool) *corev1.Node {
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "gpu"}},
		Spec: corev1.NodeSpec{Unschedulable: cordoned,
			Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI),
				corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}},
		},
	}
}

// The nodes an agent publishes are what a cycle reads: allocatable from
// the node informer, used from the pods bound there (finished ones free),
// cordoned or not-ready nodes unschedulable; nothing before the informers
// synced.
func TestClusterNodes(t *testing.T) {
	kc := fake.NewClientset(
		testNode("n1", 8, true, false), testNode("n2", 8, true, true), testNode("n3", 4, false, false),
		testPod("a-worker-0", "n1", corev1.PodRunning, 2, "uid-a"),
		testPod("b-worker-0", "n1", corev1.PodSucceeded, 4, "uid-b"),
		testPod("other", "n2", corev1.PodRunning, 1, ""),
	)
	s, err := New(Config{ID: "s1", Store: store.New(nil), Kube: kc})
	require.NoError(t, err)
	_, ok := s.ClusterNodes()
	require.False(t, ok, "not synced: no answer")

	ctx, cancel := context.WithCancel(context.Background())
	s.factory.Start(ctx.Done())
	s.podFactory.Start(ctx.Done())
	defer func() {
		cancel() // before Shutdown, which waits for the informers to stop
		s.factory.Shutdown()
		s.podFactory.Shutdown()
	}()
	var nodes []cluster.Node
	require.Eventually(t, func() bool {
		nodes, ok = s.ClusterNodes()
		return ok && len(nodes) == 3 && !nodes[0].Used.IsZero()
	}, 10*time.Second, 5*time.Millisecond)
	byName := map[string]cluster.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	require.Equal(t, job.Vector{job.CPU: 32000, job.GPU: 8, job.Pods: 110}, byName["n1"].Allocatable)
	require.Equal(t, job.Vector{job.CPU: 1000, job.GPU: 2, job.Pods: 1}, byName["n1"].Used, "the finished pod frees its GPUs")
	require.False(t, byName["n1"].Unschedulable)
	require.Equal(t, map[string]string{"pool": "gpu"}, byName["n1"].Labels)
	require.Len(t, byName["n1"].Taints, 1)
	require.True(t, byName["n2"].Unschedulable, "cordoned")
	require.Equal(t, job.Vector{job.CPU: 1000, job.GPU: 1, job.Pods: 1}, byName["n2"].Used, "others' pods count")
	require.True(t, byName["n3"].Unschedulable, "not ready")

	capacity, usage := cluster.Sum(nodes)
	require.Equal(t, job.Vector{job.CPU: 32000, job.GPU: 8, job.Pods: 110}, capacity)
	require.Equal(t, job.Vector{job.CPU: 1000, job.GPU: 2, job.Pods: 1}, usage)
}
