package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

func TestInformerEventsQueueOwnedJobs(t *testing.T) {
	f := newFixture(t, tenant.Active)
	key := f.submit(t, spec(replica(job.Worker, 1, job.RestartNever)))
	f.queued()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: testNS, Labels: map[string]string{
		kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: "acme", kube.LabelJobUID: key.UID,
	}}}
	f.w.enqueueOwner(cache.DeletedFinalStateUnknown{Key: testNS + "/x", Obj: pod}, 0)
	require.Equal(t, []store.JobKey{key}, f.queued())

	other := pod.DeepCopy()
	other.Labels[kube.LabelJobUID] = "00000000-0000-0000-0000-000000000002"
	f.w.enqueueOwner(other, 0)
	require.Empty(t, f.queued(), "not owned: ignored")

	// Updates that change nothing Plan reads are not queued; a pod the
	// worker created appearing in the cache, or its node being chosen,
	// waits podEventLazy; what Plan acts on or users wait for,
	// podEventBatch.
	fresh := pod.DeepCopy()
	fresh.Labels[kube.LabelComponent] = kube.ComponentReplica
	fresh.Labels[kube.LabelReplicaType] = "worker"
	fresh.Labels[kube.LabelReplicaIndex] = "0"
	fresh.Labels[kube.LabelAttempt] = "0"
	fresh.ResourceVersion = "1"
	fresh.Status.Phase = corev1.PodPending
	delay := func(old, cur any) time.Duration {
		d, ok := podEventDelay(old, cur)
		if !ok {
			return -1
		}
		return d
	}
	require.Equal(t, podEventLazy, delay(nil, fresh), "a fresh pod appears")
	touched := fresh.DeepCopy()
	touched.ResourceVersion = "2"
	touched.Annotations = map[string]string{"x": "y"}
	require.Equal(t, time.Duration(-1), delay(fresh, touched), "an annotation: no pass")
	bound := touched.DeepCopy()
	bound.Spec.NodeName = "node-1"
	require.Equal(t, podEventLazy, delay(touched, bound), "a node chosen")
	running := bound.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	require.Equal(t, podEventBatch, delay(bound, running), "running")
	require.Equal(t, podEventBatch, delay(nil, running), "a running pod appears (a restarted worker's first list)")
	require.Equal(t, podEventBatch, delay(nil, nil), "a pod gone")
	stuck := fresh.DeepCopy()
	stuck.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.ContainerName, State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}
	require.Equal(t, podEventBatch, delay(fresh, stuck), "stuck")
	tb := pod.DeepCopy()
	tb.Labels[kube.LabelComponent] = kube.ComponentTensorBoard
	tb2 := tb.DeepCopy()
	tb2.Status.Phase = corev1.PodRunning
	require.Equal(t, time.Duration(-1), delay(tb, tb2), "not a replica: only labels and deletion count")

	// Pod events wait podEventBatch; those that come meanwhile join them:
	// one timer, one pass for the lot.
	for range 5 {
		f.w.enqueueOwner(running, podEventBatch)
	}
	require.Equal(t, 1, f.batched(), "one timer for the lot")
	require.Empty(t, f.queued(), "not before the batch is over")
	f.waitBatches(t)
	require.Equal(t, []store.JobKey{key}, f.queued(), "once")
	f.w.enqueueOwner(running, podEventBatch)
	f.waitBatches(t)
	require.Equal(t, []store.JobKey{key}, f.queued(), "a later event starts a new batch")

	// A lazy event's pass is brought forward by one that must not wait,
	// and runs once: its timer is moved, not doubled.
	began := time.Now()
	f.w.enqueueOwner(fresh, podEventLazy)
	f.w.enqueueOwner(bound, podEventLazy)
	require.Equal(t, 1, f.batched())
	require.False(t, f.due(key).Before(began.Add(podEventLazy)), "a lazy event waits podEventLazy")
	require.Empty(t, f.queued())
	f.w.enqueueOwner(running, podEventBatch)
	require.Equal(t, 1, f.batched())
	require.True(t, f.due(key).Before(began.Add(podEventLazy)), "brought forward")
	f.waitBatches(t)
	require.Less(t, time.Since(began), podEventLazy, "brought forward")
	require.Equal(t, []store.JobKey{key}, f.queued(), "the lazy timer was moved: one pass")
}

// queued takes every key from the worker's queue, without reconciling.
func (f *fixture) queued() []store.JobKey {
	var out []store.JobKey
	for f.w.queue.Len() > 0 {
		k, _ := f.w.queue.Get()
		f.w.queue.Done(k)
		f.w.queue.Forget(k)
		out = append(out, k)
	}
	return out
}

// batched is how many jobs' pod events wait for their pass.
func (f *fixture) batched() int {
	f.w.batches.mu.Lock()
	defer f.w.batches.mu.Unlock()
	return len(f.w.batches.m)
}

// due is when k's batched pass is queued.
func (f *fixture) due(k store.JobKey) time.Time {
	f.w.batches.mu.Lock()
	defer f.w.batches.mu.Unlock()
	if b := f.w.batches.m[k]; b != nil {
		return b.due
	}
	return time.Time{}
}

// waitBatches waits until every batch's timer has queued its job (the
// timer removes its batch and then queues the job).
func (f *fixture) waitBatches(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		return f.batched() == 0 && f.w.queue.Len() > 0
	}, 5*time.Second, time.Millisecond, "the batch never ended")
}
