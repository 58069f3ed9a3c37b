package endpoints

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/worker/workertest"
)

const index = "job"

func byJob(obj any) ([]string, error) {
	m := obj.(metav1.Object)
	return []string{m.GetNamespace() + "/" + m.GetLabels()[kube.LabelJobUID]}, nil
}

// A write is what the next pass observes until the cache shows it; a write
// that changes nothing is not sent; the cache's copy replaces the memo.
func TestWriterRemembersItsWriteUntilTheCacheShowsIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := workertest.Kube()
	// The fake clientset's watch starts from "now", not from the list's
	// resource version, and a reflector may list and watch more than once:
	// a write between its sync and its watch would never reach the cache
	// (it happened under load, after the test waited for the first watch).
	// So each watch first replays what exists, as a watch from the list's
	// version would deliver what was written since.
	client.PrependWatchReactor("endpointslices", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := replayingWatch(client.Tracker(), a)
		return err == nil, w, err
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Discovery().V1().EndpointSlices().Informer()
	require.NoError(t, inf.AddIndexers(cache.Indexers{index: byJob}))
	calls := 0
	w := NewWriter(client, inf, index, func(string, string, time.Time, error) { calls++ })
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.Seen(obj, false) },
		UpdateFunc: func(_, cur any) { w.Seen(cur, false) },
		DeleteFunc: func(obj any) { w.Seen(obj, true) },
	})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	defer factory.Shutdown() // after cancel: Shutdown waits for the informers to stop
	defer cancel()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))

	const uid = "00000000-0000-0000-0000-000000000001"
	pod := func(name, ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ty-acme", Labels: map[string]string{
			kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: "acme", kube.LabelJob: "tj", kube.LabelJobUID: uid,
		}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: kube.ContainerName, Ports: []corev1.ContainerPort{{Name: kube.PortName, ContainerPort: 2222}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
	}
	require.Nil(t, w.Observe("ty-acme", uid))
	_, err = w.Sync(ctx, kube.RenderEndpointSlice("ty-acme", []*corev1.Pod{pod("tj-chief-0", "")}), nil)
	require.NoError(t, err)
	require.Zero(t, calls, "an empty slice is not created")

	pods := []*corev1.Pod{pod("tj-chief-0", "10.0.0.1"), pod("tj-worker-0", "10.0.0.2")}
	_, err = w.Sync(ctx, kube.RenderEndpointSlice("ty-acme", pods), nil)
	require.NoError(t, err)
	require.Equal(t, 1, calls)
	written := w.Observe("ty-acme", uid)
	require.NotNil(t, written, "the write, before the cache shows it")
	require.Len(t, written.Endpoints, 2)

	_, err = w.Sync(ctx, kube.RenderEndpointSlice("ty-acme", pods), written)
	require.NoError(t, err)
	require.Equal(t, 1, calls, "nothing changed: nothing sent")

	require.Eventually(t, func() bool {
		_, memo := w.writes.Load("ty-acme/" + uid)
		return !memo && len(inf.GetStore().List()) == 1
	}, 30*time.Second, time.Millisecond, "the cache shows the write: the memo goes")
	require.Len(t, w.Observe("ty-acme", uid).Endpoints, 2)

	_, err = w.Sync(ctx, kube.RenderEndpointSlice("ty-acme", pods[:1]), w.Observe("ty-acme", uid))
	require.NoError(t, err)
	require.Equal(t, 2, calls, "an address gone: updated")
	require.Len(t, w.Observe("ty-acme", uid).Endpoints, 1)

	// Created again by another writer before the cache shows it: look
	// again soon, no error.
	recheck, err := w.Sync(ctx, kube.RenderEndpointSlice("ty-acme", pods), nil)
	require.NoError(t, err)
	require.Equal(t, Recheck, recheck)

	_, err = w.Delete(ctx, w.Observe("ty-acme", uid))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return w.Observe("ty-acme", uid) == nil }, 30*time.Second, time.Millisecond,
		"deleted: neither the memo nor the cache shows it")
	_, err = w.Delete(ctx, written)
	require.NoError(t, err, "a slice already gone is no error")
}

// replayingWatch is a's watch of tracker, beginning with an Added event
// for each object there now.
func replayingWatch(tracker k8stesting.ObjectTracker, a k8stesting.Action) (watch.Interface, error) {
	w, err := tracker.Watch(a.GetResource(), a.GetNamespace())
	if err != nil {
		return nil, err
	}
	list, err := tracker.List(a.GetResource(), discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), a.GetNamespace())
	if err == nil {
		var items []runtime.Object
		if items, err = meta.ExtractList(list); err == nil {
			return replay(w, items), nil
		}
	}
	w.Stop()
	return nil, err
}

// replay is w after an Added event for each of items.
func replay(w watch.Interface, items []runtime.Object) watch.Interface {
	out := make(chan watch.Event)
	pw := watch.NewProxyWatcher(out)
	go func() {
		defer close(out)
		defer w.Stop()
		send := func(e watch.Event) bool {
			select {
			case out <- e:
				return true
			case <-pw.StopChan():
				return false
			}
		}
		for _, o := range items {
			if !send(watch.Event{Type: watch.Added, Object: o}) {
				return
			}
		}
		for {
			select {
			case e, ok := <-w.ResultChan():
				if !ok || !send(e) {
					return
				}
			case <-pw.StopChan():
				return
			}
		}
	}()
	return pw
}
