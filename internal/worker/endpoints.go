package worker

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
)

// endpointsRecheck is how soon a pass whose update of the slice found it
// changed or gone (by a worker that had the job before, or by the job's
// cleanup) is run again, once the cache has caught up.
const endpointsRecheck = 100 * time.Millisecond

// syncEndpoints keeps the EndpointSlice of a distributed job listing its
// live replica pods under the namespace's Service of replicas
// (kube.RenderEndpointSlice says why the worker writes it and why the
// Service is the namespace's). Pod changes that move an address
// (kube.ObservePod's IP) bring the job back here, and the passes that see
// a finished job's pods end or go leave the slice empty, as the controller
// manager would for a Service whose pods all finished; the job's cleanup
// deletes it (job.ActDeleteEndpoints). A pass that only records how
// replicas ended leaves the slice to the pass that decides on it, right
// after (apply). It returns how soon to look again
// when the slice could not be brought up to date now.
//
// No slice is created while it would be empty (DNS answers a missing slice
// as it does an empty one), nor for a finished job, nor in a pass that
// deletes it (the pass's caller skips those).
func (w *Worker) syncEndpoints(ctx context.Context, p *pass, final bool) (time.Duration, error) {
	if !p.wj.Job.Spec.Distributed() {
		return 0, nil
	}
	pods := make([]*corev1.Pod, 0, len(p.objs.pods))
	for _, pod := range p.objs.pods {
		pods = append(pods, pod)
	}
	want := kube.RenderEndpointSlice(p.wj.Job, p.ns, pods)
	if legacy := p.objs.legacySvc; legacy != nil {
		// Dispatched before the Service of replicas was the namespace's:
		// its replicas' names are under its own Service.
		want.Labels[discoveryv1.LabelServiceName] = legacy.Name
	}
	memoKey := jobIndexKey(p.ns, p.key.UID)
	have := p.objs.slice
	if have != nil && kube.EndpointSliceCurrent(have, want) {
		return 0, nil
	}
	slices := w.kube.DiscoveryV1().EndpointSlices(want.Namespace)
	var (
		written *discoveryv1.EndpointSlice
		err     error
	)
	if have == nil {
		if final || len(want.Endpoints) == 0 {
			return 0, nil
		}
		start := time.Now()
		written, err = slices.Create(ctx, want, metav1.CreateOptions{})
		w.count("create", "endpointslices", start, err)
		if apierrors.IsAlreadyExists(err) {
			// Written by a worker that had the job before, and not in the
			// cache yet; it shows Trainyard's slices only, so one that
			// never appears there is someone else's.
			return 0, fmt.Errorf("EndpointSlice %s/%s exists but is not in the cache yet (or not Trainyard's); trying again", want.Namespace, want.Name)
		}
	} else {
		want.ResourceVersion = have.ResourceVersion
		start := time.Now()
		written, err = slices.Update(ctx, want, metav1.UpdateOptions{})
		w.count("update", "endpointslices", start, err)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Written by a worker that had the job before, or deleted by
			// someone: the cache brings the news.
			w.sliceWrites.Delete(memoKey)
			return endpointsRecheck, nil
		}
	}
	if err != nil {
		return 0, err
	}
	w.sliceWrites.Store(memoKey, written)
	return 0, nil
}

// sliceSeen forgets the write of a slice once the cache shows it (or
// shows it gone).
func (w *Worker) sliceSeen(obj any, gone bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	key := jobIndexKey(es.Namespace, es.Labels[kube.LabelJobUID])
	if m, ok := w.sliceWrites.Load(key); ok && (gone || m.(*discoveryv1.EndpointSlice).ResourceVersion == es.ResourceVersion) {
		w.sliceWrites.CompareAndDelete(key, m)
	}
}

// observeSlice adds the job's EndpointSlice to what a pass observed: the
// one in the cache named after the job and written by Trainyard's worker,
// or this worker's last write of it when the cache does not show that yet
// (nobody else writes it, so the write is the slice now: the next write
// neither repeats it nor conflicts on a stale version, and a cleanup in
// the next pass deletes it even before the cache shows it).
func (w *Worker) observeSlice(ns, uid string, obs *job.Observed, objs *objects) {
	key := jobIndexKey(ns, uid)
	cached, _ := w.endpoints.GetIndexer().ByIndex(indexJobUID, key)
	for _, o := range cached {
		// Whatever Service it names: a job dispatched before the Service
		// of replicas was the namespace's has a slice of its own Service
		// (owned by it: rewritten without the owner, so that the job's
		// cleanup is what deletes it).
		if es, ok := o.(*discoveryv1.EndpointSlice); ok && es.Labels[discoveryv1.LabelManagedBy] == kube.EndpointSliceManagedBy {
			objs.slice = es
			break
		}
	}
	if m, ok := w.sliceWrites.Load(key); ok {
		if ws := m.(*discoveryv1.EndpointSlice); objs.slice == nil || objs.slice.ResourceVersion != ws.ResourceVersion {
			objs.slice = ws
		}
	}
	obs.Endpoints = objs.slice != nil
}

// deletesEndpoints reports whether a plan deletes the job's EndpointSlice.
func deletesEndpoints(actions []job.Action) bool {
	for _, a := range actions {
		if a.Kind == job.ActDeleteEndpoints {
			return true
		}
	}
	return false
}
