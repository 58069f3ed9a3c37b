//go:build integration

package cluster_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/trainyard/trainyard/integration/cluster"
)

// A pod without annotations is scheduled by the real scheduler onto a kwok
// node, runs with kubelet-shaped statuses, and completes with exit code 0.
func TestPodDefaultLifecycle(t *testing.T) {
	ns := newNamespace(t)
	pods := watchPods(t, ns)
	createPod(t, ns, replicaPod("worker-0"))

	done := pods.await(t, "worker-0", "terminal", terminal)
	require.Equal(t, corev1.PodSucceeded, done.Status.Phase, describe(done))

	// Scheduled by kube-scheduler onto a simulated node: a CPU or GPU one
	// (GPU nodes are not tainted; which wins depends on what other tests
	// left running), never a tainted spot node.
	require.True(t, strings.HasPrefix(done.Spec.NodeName, "kwok-cpu-") || strings.HasPrefix(done.Spec.NodeName, "kwok-gpu-"),
		"node %q", done.Spec.NodeName)
	sched := condition(done, corev1.PodScheduled)
	require.NotNil(t, sched)
	require.Equal(t, corev1.ConditionTrue, sched.Status)
	node, err := tc.Client().CoreV1().Nodes().Get(context.Background(), done.Spec.NodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "fake", node.Annotations[cluster.KwokNodeAnnotation])

	// It was Running and Ready on the way, like under a kubelet.
	running := pods.firstRunning("worker-0")
	require.NotNil(t, running, "pod never seen Running")
	require.Equal(t, corev1.ConditionTrue, condition(running, corev1.PodReady).Status)
	require.Equal(t, corev1.ConditionTrue, condition(running, corev1.ContainersReady).Status)
	require.Equal(t, corev1.ConditionTrue, condition(running, corev1.PodInitialized).Status)
	require.Len(t, running.Status.ContainerStatuses, 1)
	rs := running.Status.ContainerStatuses[0]
	require.NotNil(t, rs.State.Running)
	require.False(t, rs.State.Running.StartedAt.IsZero())
	require.True(t, rs.Ready)
	require.Equal(t, int32(0), rs.RestartCount)
	require.True(t, strings.HasPrefix(rs.ContainerID, "containerd://"), rs.ContainerID)
	require.NotNil(t, running.Status.StartTime)

	// Addresses: the node's (loopback) and one from the node's podCIDR.
	require.Equal(t, "127.0.0.1", done.Status.HostIP)
	_, cidr, err := net.ParseCIDR(node.Spec.PodCIDR)
	require.NoError(t, err)
	require.True(t, cidr.Contains(net.ParseIP(done.Status.PodIP)), "pod IP %s not in %s", done.Status.PodIP, cidr)

	term := terminated(t, done)
	require.Equal(t, int32(0), term.ExitCode)
	require.Equal(t, "Completed", term.Reason)
	require.Equal(t, rs.ContainerID, term.ContainerID)
	require.Equal(t, rs.State.Running.StartedAt.Time, term.StartedAt.Time)
	require.False(t, term.FinishedAt.Before(&term.StartedAt))
	cs := done.Status.ContainerStatuses[0]
	require.False(t, cs.Ready)
	require.Equal(t, int32(0), cs.RestartCount)
	ready := condition(done, corev1.PodReady)
	require.Equal(t, corev1.ConditionFalse, ready.Status)
	require.Equal(t, "PodCompleted", ready.Reason)

	// A terminated pod can be deleted.
	require.NoError(t, tc.Client().CoreV1().Pods(ns).Delete(context.Background(), "worker-0", metav1.DeleteOptions{}))
	requireGone(t, ns, "worker-0")
}

// run-for sets how long the container runs, exit-code what it exits with.
func TestPodRunForAndExitCode(t *testing.T) {
	ns := newNamespace(t)
	pods := watchPods(t, ns)
	createPod(t, ns, replicaPod("ok", annotate(cluster.AnnotationRunFor, "3s", cluster.AnnotationExitCode, "0")))
	createPod(t, ns, replicaPod("oom", annotate(cluster.AnnotationExitCode, "137", cluster.AnnotationMessage, "killed at step 42")))
	createPod(t, ns, replicaPod("oom-reason", annotate(cluster.AnnotationExitCode, "137", cluster.AnnotationReason, "OOMKilled")))

	ok := pods.await(t, "ok", "terminal", terminal)
	require.Equal(t, corev1.PodSucceeded, ok.Status.Phase)
	term := terminated(t, ok)
	require.Equal(t, int32(0), term.ExitCode)
	// Container times have one-second resolution: 3s becomes at least 2s.
	require.GreaterOrEqual(t, term.FinishedAt.Sub(term.StartedAt.Time), 2*time.Second)
	runningSeen := pods.firstRunning("ok")
	require.NotNil(t, runningSeen)

	failed := pods.await(t, "oom", "terminal", terminal)
	require.Equal(t, corev1.PodFailed, failed.Status.Phase)
	term = terminated(t, failed)
	require.Equal(t, int32(137), term.ExitCode)
	require.Equal(t, "Error", term.Reason)
	require.Equal(t, "killed at step 42", term.Message)
	require.NotEmpty(t, term.ContainerID)
	require.Equal(t, corev1.ConditionFalse, condition(failed, corev1.PodReady).Status)

	oom := pods.await(t, "oom-reason", "terminal", terminal)
	require.Equal(t, corev1.PodFailed, oom.Status.Phase)
	require.Equal(t, "OOMKilled", terminated(t, oom).Reason)
}

// fail-attempts K fails attempts 0..K-1 (label trainyard.dev/attempt) and lets attempt K succeed.
func TestPodFailAttempts(t *testing.T) {
	ns := newNamespace(t)
	pods := watchPods(t, ns)
	cases := []struct {
		name, attempts, attempt, code string
		wantCode                      int32
	}{
		{"k2-a0", "2", "0", "3", 3},
		{"k2-a1", "2", "1", "3", 3},
		{"k2-a2", "2", "2", "3", 0},
		{"k2-no-label", "2", "", "", 1}, // no attempt label counts as attempt 0; default code 1
		{"k5-a4", "5", "4", "", 1},
		{"k5-a5", "5", "5", "", 0},
		{"k0-a0", "0", "0", "7", 0},
	}
	for _, c := range cases {
		opts := []podOption{annotate(cluster.AnnotationFailAttempts, c.attempts)}
		if c.attempt != "" {
			opts = append(opts, label(cluster.AttemptLabel, c.attempt))
		}
		if c.code != "" {
			opts = append(opts, annotate(cluster.AnnotationExitCode, c.code))
		}
		createPod(t, ns, replicaPod(c.name, opts...))
	}
	for _, c := range cases {
		p := pods.await(t, c.name, "terminal", terminal)
		term := terminated(t, p)
		require.Equal(t, c.wantCode, term.ExitCode, c.name)
		if c.wantCode == 0 {
			require.Equal(t, corev1.PodSucceeded, p.Status.Phase, c.name)
			require.Equal(t, "Completed", term.Reason, c.name)
		} else {
			require.Equal(t, corev1.PodFailed, p.Status.Phase, c.name)
			require.Equal(t, "Error", term.Reason, c.name)
		}
	}
}

// run-forever keeps the pod Running until it is deleted.
func TestPodRunForever(t *testing.T) {
	ns := newNamespace(t)
	pods := watchPods(t, ns)
	createPod(t, ns, replicaPod("ps-0", annotate(cluster.AnnotationRunForever, "true")))
	pods.awaitPhase(t, "ps-0", corev1.PodRunning)

	// Well past the 1s default run time, it is still running.
	require.Never(t, func() bool {
		p := pods.latest("ps-0")
		return p == nil || p.Status.Phase != corev1.PodRunning
	}, 3*time.Second, 100*time.Millisecond)

	require.NoError(t, tc.Client().CoreV1().Pods(ns).Delete(context.Background(), "ps-0", metav1.DeleteOptions{}))
	requireGone(t, ns, "ps-0")
	require.Eventually(t, func() bool { return pods.deleted("ps-0") }, waitTimeout, 50*time.Millisecond)
}

func requireGone(t *testing.T, ns, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := tc.Client().CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, waitTimeout, 50*time.Millisecond, "pod %s/%s was not deleted", ns, name)
}

// A history pod (the bench's seeded finished replicas) is never run: kwok
// writes neither its status nor its log, however long it is bound to a
// node, while a plain pod created after it on the same node runs to its end.
func TestPodHistoryIsNeverRun(t *testing.T) {
	ns := newNamespace(t)
	pods := watchPods(t, ns)
	createPod(t, ns, replicaPod("history-0", annotate(cluster.AnnotationHistory, "true")))
	createPod(t, ns, replicaPod("worker-0"))

	done := pods.await(t, "worker-0", "terminal", terminal)
	require.Equal(t, corev1.PodSucceeded, done.Status.Phase, describe(done))
	// Both were bound at about the same moment; the plain pod then ran for
	// its second: time enough for kwok to have matched the history pod.
	hist := pods.latest("history-0")
	require.NotNil(t, hist)
	require.NotEmpty(t, hist.Spec.NodeName, "scheduled like any pod")
	require.Equal(t, corev1.PodPending, hist.Status.Phase, describe(hist))
	require.Empty(t, hist.Status.ContainerStatuses, describe(hist))
	dyn, err := dynamic.NewForConfig(tc.RESTConfig())
	require.NoError(t, err)
	_, err = dyn.Resource(cluster.KwokLogsResource()).Namespace(ns).Get(context.Background(), "history-0", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no kwok Logs object for a history pod: %v", err)
}
