package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/trainyard/trainyard/internal/kube"
)

// fakeContact is the agent client's view of the control plane, on a fake
// clock.
type fakeContact struct {
	mu           sync.Mutex
	now, last    time.Time
	requeueAfter time.Duration
}

func (c *fakeContact) Now() time.Time         { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeContact) LastContact() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.last }
func (c *fakeContact) RequeueAfter() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requeueAfter
}
func (c *fakeContact) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }
func (c *fakeContact) answered()               { c.mu.Lock(); c.last = c.now; c.mu.Unlock() }
func (c *fakeContact) told(requeue time.Duration) {
	c.mu.Lock()
	c.requeueAfter = requeue
	c.mu.Unlock()
}

func jobPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: labels}}
}

// A remote agent cut off from the control plane deletes its cluster's job
// pods before the control plane would requeue them elsewhere, and not a
// moment sooner; other pods stay.
func TestSelfFence(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	c := &fakeContact{now: t0, last: t0}
	ours := map[string]string{kube.LabelManagedBy: kube.ManagedByValue, kube.LabelJob: "train"}
	client := fake.NewClientset(
		jobPod("ty-alpha", "train-worker-0", ours),
		jobPod("ty-beta", "other-chief-0", map[string]string{kube.LabelManagedBy: kube.ManagedByValue, kube.LabelJob: "other"}),
		jobPod("ty-alpha", "someone-elses", map[string]string{"app": "x"}),
	)
	f, err := NewSelfFence(SelfFenceConfig{LastContact: c.LastContact, RequeueAfter: c.RequeueAfter, Kube: client,
		Margin: 5*time.Minute + 30*time.Second, Now: c.Now})
	require.NoError(t, err)
	ctx := context.Background()
	count := func() int {
		l, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		return len(l.Items)
	}

	// Before any heartbeat answered, the requeue point is unknown: no
	// fencing, however long.
	c.advance(time.Hour)
	n, err := f.Check(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	// Told: the control plane requeues 11 min after the last heartbeat
	// (60 s timeout + 10 min grace). The pods go 5m30s before: at 5m30s.
	c.answered()
	c.told(11 * time.Minute)
	require.Equal(t, 5*time.Minute+30*time.Second, FencePoint(c.RequeueAfter(), 5*time.Minute+30*time.Second))
	c.advance(5*time.Minute + 29*time.Second)
	n, err = f.Check(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "still inside the fence point")
	require.Equal(t, 3, count())

	c.advance(2 * time.Second)
	n, err = f.Check(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "every job pod, of every tenant")
	require.Equal(t, 1, count(), "the pod that is not Trainyard's stays")

	// Contact again: nothing more happens.
	c.answered()
	n, err = f.Check(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	// A requeue point shorter than the margin (tests): half of it.
	require.Equal(t, 4*time.Second, FencePoint(8*time.Second, 5*time.Minute))
	require.Zero(t, FencePoint(0, time.Minute))
}
