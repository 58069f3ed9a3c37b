package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
)

func testPod(name, node string, phase corev1.PodPhase, gpus int64, jobUID string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("1")},
		}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
	if jobUID != "" {
		p.Labels = map[string]string{kube.LabelManagedBy: kube.ManagedByValue, kube.LabelJobUID: jobUID, kube.LabelReplicaType: "worker"}
	}
	return p
}

// The usage follows pods event by event, and says when capacity was freed.
func TestUsageFollowsPods(t *testing.T) {
	u := newUsage()
	wakes := 0
	h := u.handler(func() { wakes++ })
	gpu := func(n int64) job.Vector { return job.Vector{job.CPU: 1000 * n, job.GPU: 4 * n, job.Pods: n} }

	pending := testPod("a-worker-0", "", corev1.PodPending, 4, "uid-a")
	h.OnAdd(pending, false)
	require.True(t, u.nodeUsed("n1").IsZero(), "not bound: nothing")
	bound := testPod("a-worker-0", "n1", corev1.PodRunning, 4, "uid-a")
	h.OnUpdate(pending, bound)
	other := testPod("someone-else", "n1", corev1.PodRunning, 4, "")
	h.OnAdd(other, false)
	require.Equal(t, gpu(2), u.nodeUsed("n1"))
	onNodes, placed := u.job("uid-a")
	require.Equal(t, map[string]job.Vector{"n1": gpu(1)}, onNodes)
	require.Equal(t, map[string]int32{"worker": 1}, placed)
	require.Zero(t, wakes, "taking capacity wakes nobody")

	// The job's pod succeeds: its room is free, the replica stays placed.
	done := testPod("a-worker-0", "n1", corev1.PodSucceeded, 4, "uid-a")
	h.OnUpdate(bound, done)
	require.Equal(t, gpu(1), u.nodeUsed("n1"))
	onNodes, placed = u.job("uid-a")
	require.Empty(t, onNodes)
	require.Equal(t, map[string]int32{"worker": 1}, placed)
	require.Equal(t, 1, wakes)

	// Deleted, also through a tombstone: nothing left.
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a-worker-0", Obj: done})
	h.OnDelete(other)
	require.True(t, u.nodeUsed("n1").IsZero())
	onNodes, placed = u.job("uid-a")
	require.Nil(t, onNodes)
	require.Nil(t, placed)
	require.Equal(t, 2, wakes, "the other pod's delete freed capacity; the finished pod's did not")
	require.Empty(t, u.pods)
	require.Empty(t, u.jobs)
}
