//go:build integration

package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/trainyard/trainyard/integration/cluster"
)

// Pod logs come from kwok's kubelet server through the real API server
// (pods/log), as client-go and kubectl read them: a TensorFlow-like log whose
// last line tells the outcome.
func TestPodLogs(t *testing.T) {
	ns := newNamespace(t)
	pods := watchPods(t, ns)
	createPod(t, ns, replicaPod("ps-0", annotate(cluster.AnnotationRunForever, "true")))
	createPod(t, ns, replicaPod("chief-0"))
	createPod(t, ns, replicaPod("worker-0", annotate(cluster.AnnotationExitCode, "137", cluster.AnnotationReason, "OOMKilled")))
	createPod(t, ns, replicaPod("worker-1", annotate(cluster.AnnotationFailAttempts, "2"), label(cluster.AttemptLabel, "1")))
	createPod(t, ns, replicaPod("worker-2", annotate(cluster.AnnotationFailAttempts, "2"), label(cluster.AttemptLabel, "2")))

	pods.awaitPhase(t, "ps-0", corev1.PodRunning)
	running := podLogs(t, ns, "ps-0", &corev1.PodLogOptions{})
	runningLines := lines(running)

	t.Run("running pod", func(t *testing.T) {
		require.Contains(t, running, "tensorflow/core/platform/cpu_feature_guard.cc")
		require.Contains(t, running, cluster.LogLineStep+"1 loss=")
		require.True(t, strings.HasPrefix(runningLines[len(runningLines)-1], cluster.LogLineStep+"10 loss="), running)
		require.NotContains(t, running, cluster.LogLineSucceeded)
		require.NotContains(t, running, cluster.LogLineFailed)
	})

	t.Run("tailLines and limitBytes", func(t *testing.T) {
		two, one := int64(2), int64(1)
		require.Equal(t, strings.Join(runningLines[len(runningLines)-2:], "\n")+"\n",
			podLogs(t, ns, "ps-0", &corev1.PodLogOptions{TailLines: &two}))
		require.Equal(t, runningLines[len(runningLines)-1]+"\n",
			podLogs(t, ns, "ps-0", &corev1.PodLogOptions{TailLines: &one}))
		limit := int64(25)
		require.Equal(t, running[:limit], podLogs(t, ns, "ps-0", &corev1.PodLogOptions{LimitBytes: &limit}))
	})

	t.Run("failed pod", func(t *testing.T) {
		for _, name := range []string{"worker-0", "worker-1"} { // exit-code 137; fail-attempts 2 at attempt 1
			p := pods.awaitPhase(t, name, corev1.PodFailed)
			require.NotZero(t, terminated(t, p).ExitCode)
			full := podLogs(t, ns, name, &corev1.PodLogOptions{})
			require.True(t, strings.HasPrefix(full, running), "a failed log starts with the progress part:\n%s", full)
			l := lines(full)
			require.Equal(t, cluster.LogLineFailed, l[len(l)-1], full)
			require.Contains(t, full, "Traceback (most recent call last):")
			// What Trainyard's worker asks for before it deletes the pod.
			fifty, limit := int64(50), int64(16<<10)
			tail := podLogs(t, ns, name, &corev1.PodLogOptions{Container: "tensorflow", TailLines: &fifty, LimitBytes: &limit})
			require.Equal(t, full, tail, "the whole log is shorter than 50 lines")
			one := int64(1)
			require.Equal(t, cluster.LogLineFailed+"\n", podLogs(t, ns, name, &corev1.PodLogOptions{TailLines: &one}))
		}
		out, err := tc.Kubectl("logs", "-n", ns, "worker-0", "--tail=1")
		require.NoError(t, err)
		require.Equal(t, cluster.LogLineFailed+"\n", out)
	})

	t.Run("succeeded pod", func(t *testing.T) {
		for _, name := range []string{"chief-0", "worker-2"} { // no annotations; fail-attempts 2 at attempt 2
			pods.awaitPhase(t, name, corev1.PodSucceeded)
			full := podLogs(t, ns, name, &corev1.PodLogOptions{})
			require.True(t, strings.HasPrefix(full, running), full)
			l := lines(full)
			require.Equal(t, cluster.LogLineSucceeded, l[len(l)-1], full)
			require.NotContains(t, full, "Traceback")
		}
	})

	t.Run("follow stays open until cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rc, err := tc.Client().CoreV1().Pods(ns).GetLogs("ps-0", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
		require.NoError(t, err)
		defer rc.Close()
		s := readInBackground(rc)
		require.Eventually(t, func() bool { return s.text() == running }, waitTimeout, 20*time.Millisecond,
			"follow did not deliver the log; got %q", s.text())
		require.Never(t, s.ended, 3*time.Second, 100*time.Millisecond, "the stream of a running pod ended: %v", s.error())
		cancel()
		require.Eventually(t, s.ended, 10*time.Second, 20*time.Millisecond, "the stream outlived its context")
		require.Equal(t, running, s.text(), "nothing but the log came through")
	})

	dyn, err := dynamic.NewForConfig(tc.RESTConfig())
	require.NoError(t, err)
	logObjects := dyn.Resource(cluster.KwokLogsResource()).Namespace(ns)

	t.Run("pod name reused", func(t *testing.T) {
		// Trainyard recreates a replica's pod under the same name. The Logs
		// object an earlier pod left (here one pointing at the failed log) is
		// taken over by the new pod, whose log is its own.
		stale := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kwok.x-k8s.io/v1alpha1",
			"kind":       "Logs",
			"metadata":   map[string]any{"name": "worker-3"},
			"spec":       map[string]any{"logs": []any{map[string]any{"logsFile": cluster.PodLogDir + "/" + cluster.LogFileFailed}}},
		}}
		_, err := logObjects.Create(context.Background(), stale, metav1.CreateOptions{})
		require.NoError(t, err)
		createPod(t, ns, replicaPod("worker-3"))
		p := pods.awaitPhase(t, "worker-3", corev1.PodSucceeded)
		l := lines(podLogs(t, ns, "worker-3", &corev1.PodLogOptions{}))
		require.Equal(t, cluster.LogLineSucceeded, l[len(l)-1])
		obj, err := logObjects.Get(context.Background(), "worker-3", metav1.GetOptions{})
		require.NoError(t, err)
		require.Contains(t, ownerUIDs(obj), string(p.UID))

		// The whole cycle, as Trainyard's worker runs it: the failed pod
		// goes and a pod of the same name is created as soon as it is gone,
		// while the garbage collector may still be removing the Logs object
		// the failed pod owned. The new pod's log is its own
		// (TestPodNameReusedAtOnce repeats this many times).
		require.NoError(t, tc.Client().CoreV1().Pods(ns).Delete(context.Background(), "worker-0", metav1.DeleteOptions{}))
		requireGone(t, ns, "worker-0")
		createPod(t, ns, replicaPod("worker-0"))
		p = pods.awaitPhase(t, "worker-0", corev1.PodSucceeded)
		full := podLogs(t, ns, "worker-0", &corev1.PodLogOptions{})
		l = lines(full)
		require.Equal(t, cluster.LogLineSucceeded, l[len(l)-1], full)
		require.NotContains(t, full, cluster.LogLineFailed)
		obj, err = logObjects.Get(context.Background(), "worker-0", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, []string{string(p.UID)}, ownerUIDs(obj))

		// A pod's Logs object goes with it.
		require.NoError(t, tc.Client().CoreV1().Pods(ns).Delete(context.Background(), "worker-1", metav1.DeleteOptions{}))
		requireGone(t, ns, "worker-1")
		require.Eventually(t, func() bool {
			_, err := logObjects.Get(context.Background(), "worker-1", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, waitTimeout, 50*time.Millisecond, "the garbage collector left the Logs object of a deleted pod")
	})
}

// Every node's kubelet endpoint is kwok's server port, the one the cluster
// recorded (and Stop checks).
func TestNodesKubeletEndpoint(t *testing.T) {
	nodes, err := tc.Client().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, nodes.Items)
	for _, n := range nodes.Items {
		port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
		require.NotZero(t, port, n.Name)
		if s := tc.State(); s != nil {
			require.Equal(t, s.Ports["kwok"], int(port), n.Name)
		}
		require.True(t, portOpen(int(port)), "%s kubelet port %d", n.Name, port)
	}
}

func ownerUIDs(obj *unstructured.Unstructured) []string {
	var uids []string
	for _, o := range obj.GetOwnerReferences() {
		uids = append(uids, string(o.UID))
	}
	return uids
}

// podLogs reads a pod's log the way Trainyard does (GetLogs(...).Stream).
func podLogs(t *testing.T, ns, name string, opts *corev1.PodLogOptions) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := tc.Client().CoreV1().Pods(ns).GetLogs(name, opts).Stream(ctx)
	require.NoError(t, err, "logs of %s/%s", ns, name)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(data)
}

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

// streamReader collects what a stream delivers until it ends.
type streamReader struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	err  error
	done bool
}

func readInBackground(r io.Reader) *streamReader {
	s := &streamReader{}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			if err != nil {
				s.err, s.done = err, true
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *streamReader) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *streamReader) ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

func (s *streamReader) error() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		return errors.New("none")
	}
	return s.err
}
