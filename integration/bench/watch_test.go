//go:build bench || integration

package bench

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/kube"
)

// podWatch is the bench's informer on the namespace's pods: it records
// when each set (by the trainyard.dev/job label, which raw and Trainyard
// pods both carry) had its last pod delivered.
type podWatch struct {
	mu         sync.Mutex
	sets       map[string]*podSet
	unfinished map[string]bool // namespace/name of pods not Succeeded or Failed, the probe's left out
	present    map[string]bool // namespace/name of every pod it holds
	bytes      map[string]int  // protobuf size of the first pod per name prefix
	changed    chan struct{}   // closed and replaced on every event
}

type podSet struct {
	pods    map[string]bool
	first   time.Time // when its first pod arrived
	full    time.Time // when the podsPerJob-th distinct pod arrived
	cluster string    // the cluster its first pod arrived from (watchIn's name)
}

// startPodWatch runs an informer on the pods of each namespace until ctx
// ends. Set names must be unique across the namespaces.
func startPodWatch(ctx context.Context, b testing.TB, kc kubernetes.Interface, namespaces ...string) *podWatch {
	w := newPodWatch()
	w.watchIn(ctx, b, kc, "", namespaces...)
	return w
}

func newPodWatch() *podWatch {
	return &podWatch{sets: map[string]*podSet{}, unfinished: map[string]bool{}, present: map[string]bool{}, bytes: map[string]int{}, changed: make(chan struct{})}
}

// watchIn adds an informer on the pods of each namespace of another
// cluster, named cluster ("" is the first): a set's pods are timed
// whichever cluster they arrive from, and its cluster is recorded
// (clusterOf). Set names must be unique across clusters too.
func (w *podWatch) watchIn(ctx context.Context, b testing.TB, kc kubernetes.Interface, cluster string, namespaces ...string) {
	for _, ns := range namespaces {
		factory := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithNamespace(ns),
			informers.WithTransform(func(obj any) (any, error) {
				if m, ok := obj.(metav1.Object); ok {
					m.SetManagedFields(nil)
				}
				return obj, nil
			}))
		inf := factory.Core().V1().Pods()
		if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.added(obj, cluster) },
			UpdateFunc: func(_, cur any) { w.track(cur, cluster, false) },
			DeleteFunc: func(obj any) { w.track(obj, cluster, true) },
		}); err != nil {
			b.Fatal(err)
		}
		factory.Start(ctx.Done())
		b.Cleanup(factory.Shutdown) // after ctx ends: benchDispatch cancels it on return
		if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
			b.Fatalf("the bench's pod informer on %s did not sync", ns)
		}
	}
}

func (w *podWatch) added(obj any, cluster string) {
	now := time.Now()
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	name := pod.Labels[kube.LabelJob]
	if name == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.trackLocked(pod, cluster, false)
	s := w.sets[name]
	if s == nil {
		s = &podSet{pods: map[string]bool{}, first: now, cluster: cluster}
		w.sets[name] = s
	}
	s.pods[pod.Name] = true
	if len(s.pods) == podsPerJob && s.full.IsZero() {
		s.full = now
	}
	if prefix, _, _ := strings.Cut(name, "-"); w.bytes[prefix] == 0 {
		w.bytes[prefix] = pod.Size()
	}
	w.notifyLocked()
}

// track keeps the set of unfinished pods up to date, so that waiting
// for a quiet namespace costs nothing per event however many finished
// pods it holds.
func (w *podWatch) track(obj any, cluster string, gone bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.trackLocked(obj, cluster, gone)
	w.notifyLocked()
}

// trackLocked keys pods by namespace/name, prefixed by cluster/ for a
// cluster other than the first.
func (w *podWatch) trackLocked(obj any, cluster string, gone bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, gone = tomb.Obj, true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key := pod.Namespace + "/" + pod.Name
	if cluster != "" {
		key = cluster + "/" + key
	}
	if gone {
		delete(w.present, key)
	} else {
		w.present[key] = true
	}
	if strings.HasPrefix(pod.Name, probePrefix) {
		return
	}
	if gone || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		delete(w.unfinished, key)
	} else {
		w.unfinished[key] = true
	}
}

func (w *podWatch) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// times are when set name had its first pod and n distinct pods.
func (w *podWatch) times(name string, n int) (first, full time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.sets[name]
	if s == nil || len(s.pods) < n {
		return time.Time{}, time.Time{}, false
	}
	return s.first, s.full, true
}

// clusterOf is the cluster set name's first pod arrived from ("" for the
// first cluster, or a set not seen).
func (w *podWatch) clusterOf(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.sets[name]; s != nil {
		return s.cluster
	}
	return ""
}

func (w *podWatch) podBytes(prefix string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bytes[prefix]
}

// waitFull waits until every named set has n pods, or timeout.
func (w *podWatch) waitFull(names []string, n int, timeout time.Duration) bool {
	return w.waitFor(timeout, func() bool {
		for _, name := range names {
			if s := w.sets[name]; s == nil || len(s.pods) < n {
				return false
			}
		}
		return true
	})
}

// settle waits until every pod in the namespaces has finished, so that
// the next phase starts on a quiet control plane. The probe's pods, which
// never stop coming, do not count.
func (w *podWatch) settle(b testing.TB, timeout time.Duration) {
	if !w.waitFor(timeout, func() bool { return len(w.unfinished) == 0 }) {
		b.Logf("pods still running %s after the phase; going on", timeout)
	}
}

// waitGone waits until the informer has delivered the deletion of every
// pod in keys (namespace/name), at most timeout.
func (w *podWatch) waitGone(b testing.TB, keys []string, timeout time.Duration) {
	if !w.waitFor(timeout, func() bool {
		for _, k := range keys {
			if w.present[k] {
				return false
			}
		}
		return true
	}) {
		b.Logf("pods deleted %s ago still in the bench's informer; going on", timeout)
	}
}

// waitFor evaluates cond (under w.mu) after every event until it holds.
func (w *podWatch) waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		ok, changed := cond(), w.changed
		w.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}
