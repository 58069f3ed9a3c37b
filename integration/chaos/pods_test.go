//go:build integration || chaos

package chaos

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/trainyard/trainyard/internal/kube"
)

// podRecorder follows every Trainyard pod of the run through one watch,
// resumed from its last resource version across API server restarts, and
// keeps each pod name's history: every pod (UID) that had it, with its
// attempt label, in the order the API server made them. It never reads
// through Trainyard, so what it finds is the cluster's account, not the
// worker's.
//
// When the API server can not resume the watch (its watch cache starts
// afresh after a restart: 410 Gone), it lists instead and compares: a pod
// created and deleted wholly between the watch's end and the list would be
// missed. Pods are only made through the API server, which was down for
// most of that gap; the report counts the gaps, and every pod the
// attempts of a job needed must have been seen (checks), so a missed pod
// shows as a miscount.
type podRecorder struct {
	mu      sync.Mutex
	names   map[string][]*podLife // by namespace/name
	overlap []string              // names that had two live pods at once
	relists int
}

// podLife is one pod (one UID) under a name.
type podLife struct {
	uid, attempt string
	gone         bool
}

func recordPods(t *testing.T, client kubernetes.Interface, nsPrefix string) *podRecorder {
	t.Helper()
	r := &podRecorder{names: map[string][]*podLife{}}
	ctx, cancel := context.WithCancel(context.Background())
	sel := kube.ManagedSelector().String()
	lw := podWatcher{client: client, selector: sel}
	rv, err := r.relist(ctx, client, sel, nsPrefix)
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			rv = r.follow(ctx, lw, rv, nsPrefix)
			for ctx.Err() == nil {
				if rv, err = r.relist(ctx, client, sel, nsPrefix); err == nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// podWatcher watches Trainyard's pods in every namespace.
type podWatcher struct {
	client   kubernetes.Interface
	selector string
}

func (w podWatcher) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.LabelSelector = w.selector
	return w.client.CoreV1().Pods("").Watch(ctx, o)
}

// follow applies watch events from rv until the watch can not go on, and
// returns the last resource version seen.
func (r *podRecorder) follow(ctx context.Context, lw cache.WatcherWithContext, rv, nsPrefix string) string {
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		return rv
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return rv // an error (410 Gone): relist
		}
		rv = pod.ResourceVersion
		if !strings.HasPrefix(pod.Namespace, nsPrefix) {
			continue
		}
		r.mu.Lock()
		r.saw(pod, ev.Type == watch.Deleted)
		r.mu.Unlock()
	}
	return rv
}

// relist lists the pods and reconciles the history with the list: a live
// pod missing from it is gone, a new one is added. It returns the list's
// resource version.
func (r *podRecorder) relist(ctx context.Context, client kubernetes.Interface, sel, nsPrefix string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.relists++
	present := map[string]bool{}
	for i := range list.Items {
		present[string(list.Items[i].UID)] = true
	}
	for _, lives := range r.names {
		for _, l := range lives {
			if !present[l.uid] {
				l.gone = true
			}
		}
	}
	for i := range list.Items {
		if p := &list.Items[i]; strings.HasPrefix(p.Namespace, nsPrefix) {
			r.saw(p, false)
		}
	}
	return list.ResourceVersion, nil
}

// saw records a pod version; a pod new under its name while the name's
// previous pod is not gone is an overlap.
func (r *podRecorder) saw(p *corev1.Pod, deleted bool) {
	key := p.Namespace + "/" + p.Name
	lives := r.names[key]
	var cur *podLife
	for _, l := range lives {
		if l.uid == string(p.UID) {
			cur = l
		}
	}
	if cur == nil {
		if n := len(lives); n > 0 && !lives[n-1].gone {
			r.overlap = append(r.overlap, key)
		}
		cur = &podLife{uid: string(p.UID), attempt: p.Labels[kube.LabelAttempt]}
		r.names[key] = append(lives, cur)
	}
	if deleted {
		cur.gone = true
	}
}

// history returns each name's pods and the overlaps seen.
func (r *podRecorder) history() (map[string][]podLife, []string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]podLife, len(r.names))
	for k, lives := range r.names {
		for _, l := range lives {
			out[k] = append(out[k], *l)
		}
	}
	return out, append([]string(nil), r.overlap...), r.relists - 1
}
