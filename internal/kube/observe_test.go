package kube

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/job"
)

var (
	t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Minute)
)

// renderedPod is worker-1 of the distributed job, attempt 2, as created.
func renderedPod(t *testing.T) *corev1.Pod {
	t.Helper()
	pod, err := RenderPod(distributedJob(), testNS, job.Worker, 1, 2, PodOptions{})
	require.NoError(t, err)
	return pod
}

func TestObservePod(t *testing.T) {
	base := job.ObservedPod{Name: "mnist-worker-1", Type: job.Worker, Index: 1, Attempt: 2}
	with := func(edit func(*job.ObservedPod)) job.ObservedPod {
		o := base
		edit(&o)
		return o
	}
	for name, tc := range map[string]struct {
		status   corev1.PodStatus
		node     string
		deleting bool
		want     job.ObservedPod
	}{
		"just created": {
			want: with(func(o *job.ObservedPod) { o.Phase = job.PodPending }),
		},
		"pending": {
			status: corev1.PodStatus{Phase: corev1.PodPending},
			want:   with(func(o *job.ObservedPod) { o.Phase = job.PodPending }),
		},
		"unschedulable": {
			status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
				Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
			}}},
			want: with(func(o *job.ObservedPod) {
				o.Phase = job.PodPending
				o.Unschedulable = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
			}),
		},
		"scheduling gated is not unschedulable": {
			status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated",
			}}},
			want: with(func(o *job.ObservedPod) { o.Phase = job.PodPending }),
		},
		"running": {
			node: "gpu-node-1",
			status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "tensorflow", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}},
			}}},
			want: with(func(o *job.ObservedPod) { o.Phase = job.PodRunning; o.Node = "gpu-node-1" }),
		},
		"succeeded": {
			node: "gpu-node-1",
			status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
				Name:  "tensorflow",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(t1)}},
			}}},
			want: with(func(o *job.ObservedPod) {
				o.Phase = job.PodSucceeded
				o.Node = "gpu-node-1"
				o.Terminated = &job.Termination{Attempt: 2, ExitCode: 0, Reason: "Completed", FinishTime: t1}
			}),
		},
		"failed": {
			node: "gpu-node-1",
			status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "sidecar", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}},
				{Name: "tensorflow", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "OOMKilled", Message: "ResourceExhausted: OOM when allocating tensor", FinishedAt: metav1.NewTime(t1),
				}}},
			}},
			want: with(func(o *job.ObservedPod) {
				o.Phase = job.PodFailed
				o.Node = "gpu-node-1"
				o.Terminated = &job.Termination{Attempt: 2, ExitCode: 137, Reason: "OOMKilled", Message: "ResourceExhausted: OOM when allocating tensor", FinishTime: t1}
			}),
		},
		"last termination state": {
			status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
				Name:                 "tensorflow",
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: metav1.NewTime(t0)}},
			}}},
			want: with(func(o *job.ObservedPod) {
				o.Phase = job.PodRunning
				o.Terminated = &job.Termination{Attempt: 2, ExitCode: 1, Reason: "Error", FinishTime: t0}
			}),
		},
		"evicted": {
			node: "gpu-node-1",
			status: corev1.PodStatus{
				Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory.",
				Conditions: []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
					{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t1)},
				},
			},
			want: with(func(o *job.ObservedPod) {
				o.Phase = job.PodFailed
				o.Node = "gpu-node-1"
				o.Terminated = &job.Termination{Attempt: 2, ExitCode: -1, Reason: "Evicted", Message: "The node was low on resource: memory.", FinishTime: t1}
			}),
		},
		"failed without a reason": {
			status: corev1.PodStatus{Phase: corev1.PodFailed},
			want: with(func(o *job.ObservedPod) {
				o.Phase = job.PodFailed
				o.Terminated = &job.Termination{Attempt: 2, ExitCode: -1, Reason: "PodFailed"}
			}),
		},
		"deleting": {
			deleting: true,
			node:     "gpu-node-1",
			status:   corev1.PodStatus{Phase: corev1.PodRunning},
			want: with(func(o *job.ObservedPod) {
				o.Phase = job.PodRunning
				o.Node = "gpu-node-1"
				o.Deleting = true
			}),
		},
		"unknown phase": {
			status: corev1.PodStatus{Phase: corev1.PodUnknown},
			want:   with(func(o *job.ObservedPod) { o.Phase = job.PodUnknown }),
		},
	} {
		t.Run(name, func(t *testing.T) {
			pod := renderedPod(t)
			pod.Spec.NodeName = tc.node
			pod.Status = tc.status
			if tc.deleting {
				pod.DeletionTimestamp = &metav1.Time{Time: t1}
			}
			got, ok := ObservePod(pod)
			require.True(t, ok)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ObservePod (-want +got):\n%s", diff)
			}
		})
	}
}

// A pod marked deleted without a grace period, and without finalizers,
// is a delete cut short between the API server's two writes: DeletedAt
// says since when. A graceful deletion (the kubelet's to end) or one that
// waits for finalizers is not.
func TestObservePodDeletedWithoutGrace(t *testing.T) {
	for name, tc := range map[string]struct {
		grace      *int64
		finalizers []string
		want       time.Time
	}{
		"no grace period left":          {grace: new(int64(0)), want: t1},
		"graceful, the kubelet ends it": {grace: new(int64(30))},
		"no grace period, finalizers":   {grace: new(int64(0)), finalizers: []string{"example.com/keep"}},
		"no grace period recorded":      {},
	} {
		t.Run(name, func(t *testing.T) {
			pod := renderedPod(t)
			pod.Status.Phase = corev1.PodFailed
			pod.DeletionTimestamp = &metav1.Time{Time: t1}
			pod.DeletionGracePeriodSeconds = tc.grace
			pod.Finalizers = tc.finalizers
			got, ok := ObservePod(pod)
			require.True(t, ok)
			require.True(t, got.Deleting)
			require.Equal(t, tc.want, got.DeletedAt)
		})
	}
}

func TestObservePodIgnoresOthers(t *testing.T) {
	tb, _ := RenderTensorBoard(distributedJob(), testNS, PodOptions{})
	_, ok := ObservePod(tb)
	require.False(t, ok, "TensorBoard pod")

	for name, edit := range map[string]func(*corev1.Pod){
		"foreign":          func(p *corev1.Pod) { p.Labels[LabelManagedBy] = "helm" },
		"bad type":         func(p *corev1.Pod) { p.Labels[LabelReplicaType] = "master" },
		"bad index":        func(p *corev1.Pod) { p.Labels[LabelReplicaIndex] = "one" },
		"negative index":   func(p *corev1.Pod) { p.Labels[LabelReplicaIndex] = "-1" },
		"missing attempt":  func(p *corev1.Pod) { delete(p.Labels, LabelAttempt) },
		"no labels at all": func(p *corev1.Pod) { p.Labels = nil },
	} {
		t.Run(name, func(t *testing.T) {
			pod := renderedPod(t)
			edit(pod)
			_, ok := ObservePod(pod)
			require.False(t, ok)
		})
	}
}

func TestJobKeyOf(t *testing.T) {
	j := distributedJob()
	pod := renderedPod(t)
	tb, tbSvc := RenderTensorBoard(j, testNS, PodOptions{})
	for _, obj := range []metav1.Object{pod, RenderEndpointSlice(testNS, []*corev1.Pod{pod}), tb, tbSvc} {
		tenantID, uid, ok := JobKeyOf(obj)
		require.True(t, ok, obj.GetName())
		require.Equal(t, "vision", tenantID)
		require.Equal(t, j.UID, uid)
	}

	tn, err := RenderTenant(visionTenant(), TenantOptions{})
	require.NoError(t, err)
	for _, obj := range []metav1.Object{tn.ServiceAccount, tn.ReplicaService} {
		_, _, ok := JobKeyOf(obj)
		require.False(t, ok, "tenant objects belong to no job: %s", obj.GetName())
	}

	foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelTenant: "vision", LabelJobUID: "u"}}}
	_, _, ok := JobKeyOf(foreign)
	require.False(t, ok, "not managed by Trainyard")
}
