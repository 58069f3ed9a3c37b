//go:build integration

package cluster_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// waitTimeout bounds every wait on the cluster; the pods under test finish
// in a few seconds, so a minute only matters on a machine under heavy load.
const waitTimeout = time.Minute

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// newNamespace creates a namespace for the test, deleted when it ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	base := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := base + "-" + hex.EncodeToString(b[:])
	ctx := context.Background()
	_, err := tc.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = tc.Client().CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

type podOption func(*corev1.Pod)

// replicaPod is a pod shaped like a Trainyard replica: one container, restartPolicy Never.
func replicaPod(name string, opts ...podOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:  "tensorflow",
				Image: "tensorflow/tensorflow:2.16.1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("500m"),
					corev1.ResourceMemory: resource.MustParse("1Gi"),
				}},
			}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func annotate(kv ...string) podOption {
	return func(p *corev1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func label(kv ...string) podOption {
	return func(p *corev1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func createPod(t *testing.T, ns string, p *corev1.Pod) {
	t.Helper()
	_, err := tc.Client().CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(t, err)
}

// podLog records every version of every pod in a namespace that a watch
// delivers, so a test can assert on states a pod passed through (Running)
// and not only on where it ended.
type podLog struct {
	mu   sync.Mutex
	seen map[string][]*corev1.Pod
	gone map[string]bool
}

// watchPods starts recording pods in ns; call it before creating them.
func watchPods(t *testing.T, ns string) *podLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &podLog{seen: map[string][]*corev1.Pod{}, gone: map[string]bool{}}
	list, err := tc.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	rv := list.ResourceVersion
	go func() {
		for ctx.Err() == nil {
			w, err := tc.Client().CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				rv = p.ResourceVersion
				if ev.Type == watch.Bookmark {
					continue
				}
				l.mu.Lock()
				if ev.Type == watch.Deleted {
					l.gone[p.Name] = true
				} else {
					l.seen[p.Name] = append(l.seen[p.Name], p.DeepCopy())
				}
				l.mu.Unlock()
			}
		}
	}()
	return l
}

func (l *podLog) latest(name string) *corev1.Pod {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.seen[name]
	if len(h) == 0 {
		return nil
	}
	return h[len(h)-1]
}

func (l *podLog) history(name string) []*corev1.Pod {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*corev1.Pod(nil), l.seen[name]...)
}

func (l *podLog) deleted(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gone[name]
}

// await waits until the latest recorded version of pod name satisfies ok and returns it.
func (l *podLog) await(t *testing.T, name string, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	require.Eventually(t, func() bool {
		got = l.latest(name)
		return got != nil && ok(got)
	}, waitTimeout, 50*time.Millisecond, "pod %s never became %s; last seen: %s", name, what, describe(l.latest(name)))
	return got
}

func (l *podLog) awaitPhase(t *testing.T, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	return l.await(t, name, string(phase), func(p *corev1.Pod) bool { return p.Status.Phase == phase })
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// firstRunning is the first recorded version of the pod in phase Running.
func (l *podLog) firstRunning(name string) *corev1.Pod {
	for _, p := range l.history(name) {
		if p.Status.Phase == corev1.PodRunning {
			return p
		}
	}
	return nil
}

func describe(p *corev1.Pod) string {
	if p == nil {
		return "<no pod>"
	}
	var b strings.Builder
	b.WriteString("phase=" + string(p.Status.Phase) + " node=" + p.Spec.NodeName)
	for _, c := range p.Status.Conditions {
		b.WriteString(" " + string(c.Type) + "=" + string(c.Status))
		if c.Message != "" {
			b.WriteString("(" + c.Message + ")")
		}
	}
	return b.String()
}

func condition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// terminated returns the terminated state of the pod's only container.
func terminated(t *testing.T, p *corev1.Pod) *corev1.ContainerStateTerminated {
	t.Helper()
	require.Len(t, p.Status.ContainerStatuses, 1, describe(p))
	st := p.Status.ContainerStatuses[0]
	require.NotNil(t, st.State.Terminated, "container state %+v", st.State)
	return st.State.Terminated
}
