package endpoints

import (
	"context"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/kube"
)

// Recheck is how soon a pass whose update of the slice found it changed or
// gone (by a worker that had the job before, or by the job's cleanup) is
// run again, once the cache has caught up.
const Recheck = 100 * time.Millisecond

// Writer writes jobs' EndpointSlices; see the package doc.
type Writer struct {
	kube     kubernetes.Interface
	informer cache.SharedIndexInformer
	index    string
	count    func(verb, resource string, start time.Time, err error)
	// writes holds, by "<namespace>/<job uid>", the slice last written
	// until the cache shows that version.
	writes sync.Map
}

// NewWriter returns a Writer that writes with client, reads slices from
// informer's index (keyed "<namespace>/<job uid>") and reports each API
// call to count.
func NewWriter(client kubernetes.Interface, informer cache.SharedIndexInformer, index string,
	count func(verb, resource string, start time.Time, err error)) *Writer {
	return &Writer{kube: client, informer: informer, index: index, count: count}
}

func key(ns, uid string) string { return ns + "/" + uid }

// Observe returns the job's EndpointSlice: the one in the cache written by
// Trainyard, or this worker's last write of it when the cache does not show
// that yet (nobody else writes it, so the write is the slice now: the next
// write neither repeats it nor conflicts on a stale version, and a cleanup
// deletes it even before the cache shows it). Nil when there is none.
func (w *Writer) Observe(ns, uid string) *discoveryv1.EndpointSlice {
	k := key(ns, uid)
	slice := w.cached(k)
	if m, ok := w.writes.Load(k); ok {
		if ws := m.(*discoveryv1.EndpointSlice); slice == nil || slice.ResourceVersion != ws.ResourceVersion {
			slice = ws
		}
	}
	return slice
}

// cached is the job's slice in the cache, written by Trainyard; nil when
// there is none.
func (w *Writer) cached(k string) *discoveryv1.EndpointSlice {
	cached, _ := w.informer.GetIndexer().ByIndex(w.index, k)
	for _, o := range cached {
		// Whatever Service it names: a job dispatched before the Service
		// of replicas was the namespace's has a slice of its own Service
		// (owned by it: rewritten without the owner, so that the job's
		// cleanup is what deletes it).
		if es, ok := o.(*discoveryv1.EndpointSlice); ok && es.Labels[discoveryv1.LabelManagedBy] == kube.EndpointSliceManagedBy {
			return es
		}
	}
	return nil
}

// Sync brings the job's slice to want (kube.RenderEndpointSlice), given
// have, the slice Observe returned. No slice is created while it would be
// empty: DNS answers a missing slice as it does an empty one. It returns
// how soon to look again when the slice could not be brought up to date
// now: a create that finds it there (another writer's, before the cache
// shows it) or an update that conflicts or finds it gone.
func (w *Writer) Sync(ctx context.Context, want, have *discoveryv1.EndpointSlice) (time.Duration, error) {
	memoKey := key(want.Namespace, want.Labels[kube.LabelJobUID])
	if have != nil && kube.EndpointSliceCurrent(have, want) {
		return 0, nil
	}
	slices := w.kube.DiscoveryV1().EndpointSlices(want.Namespace)
	var (
		written *discoveryv1.EndpointSlice
		err     error
	)
	if have == nil {
		if len(want.Endpoints) == 0 {
			return 0, nil
		}
		start := time.Now()
		written, err = slices.Create(ctx, want, metav1.CreateOptions{})
		w.count("create", "endpointslices", start, err)
		if apierrors.IsAlreadyExists(err) {
			// Written by the writer before this one (another process
			// led before), and not in the cache yet; the cache shows
			// Trainyard's slices only, so one that never appears there
			// is someone else's, and is never adopted.
			return Recheck, nil
		}
	} else {
		want.ResourceVersion, want.UID = have.ResourceVersion, have.UID
		start := time.Now()
		written, err = slices.Update(ctx, want, metav1.UpdateOptions{})
		w.count("update", "endpointslices", start, err)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Written by the writer before this one, or deleted by
			// someone (the orphan sweep): the cache brings the news.
			w.writes.Delete(memoKey)
			return Recheck, nil
		}
	}
	if err != nil {
		return 0, err
	}
	w.writes.Store(memoKey, written)
	// The cache may have shown the write before it was remembered: Seen
	// found no memo to forget then, and no event would come for it again.
	// The informer fills its cache before it calls Seen, so one of the two
	// forgets it.
	if c := w.cached(memoKey); c != nil && c.ResourceVersion == written.ResourceVersion {
		w.writes.CompareAndDelete(memoKey, written)
	}
	return 0, nil
}

// Delete deletes have, a job's slice, with its UID as a precondition (a
// slice of the same name written since is another's business), and
// forgets the memo of it: a deleted slice must not come back into a later
// Observe. A slice already gone is no error; one that changed meanwhile
// is looked at again after Recheck, once the cache shows it.
func (w *Writer) Delete(ctx context.Context, have *discoveryv1.EndpointSlice) (time.Duration, error) {
	start := time.Now()
	err := w.kube.DiscoveryV1().EndpointSlices(have.Namespace).Delete(ctx, have.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &have.UID},
	})
	w.count("delete", "endpointslices", start, err)
	w.writes.Delete(key(have.Namespace, have.Labels[kube.LabelJobUID]))
	switch {
	case apierrors.IsConflict(err):
		return Recheck, nil
	case err != nil && !apierrors.IsNotFound(err):
		return 0, err
	}
	return 0, nil
}

// Seen forgets the write of a slice once the cache shows it (or shows it
// gone): the informer's event handler.
func (w *Writer) Seen(obj any, gone bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	k := key(es.Namespace, es.Labels[kube.LabelJobUID])
	if m, ok := w.writes.Load(k); ok && (gone || m.(*discoveryv1.EndpointSlice).ResourceVersion == es.ResourceVersion) {
		w.writes.CompareAndDelete(k, m)
	}
}
