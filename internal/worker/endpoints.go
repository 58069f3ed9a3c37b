package worker

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
)

// kindEndpointSlice is the EndpointSlices' kind in createKey.
const kindEndpointSlice = "endpointslice"

// endpointsRecheck is how soon a pass that could not bring the slice up to
// date (its create not in the cache yet, or an update that lost a race
// with the cache) is run again.
const endpointsRecheck = 100 * time.Millisecond

// syncEndpoints keeps the EndpointSlice of a job's headless Service
// listing its live replica pods (kube.RenderEndpointSlice says why the
// worker writes it and not the controller manager). It runs once the
// Service is in the cache (the slice is owned by its UID, so the garbage
// collector deletes it with the Service); pod changes that move an address
// (kube.ObservePod's IP) bring the job back here, and the passes that see
// a finished job's pods end or go leave the slice empty, as the controller
// manager would for a Service whose pods all finished. It returns how soon
// to look again when the slice could not be brought up to date now.
//
// No slice is created while it would be empty (DNS answers a missing slice
// as it does an empty one), nor for a finished job, nor in a pass that
// deletes the Service (the pass's caller skips those).
func (w *Worker) syncEndpoints(ctx context.Context, p *pass, final bool) (time.Duration, error) {
	svc := p.objs.svc
	if svc == nil || svc.UID == "" || svc.DeletionTimestamp != nil || !p.wj.Job.Spec.Distributed() {
		return 0, nil
	}
	pods := make([]*corev1.Pod, 0, len(p.objs.pods))
	for _, pod := range p.objs.pods {
		pods = append(pods, pod)
	}
	want := kube.RenderEndpointSlice(p.wj.Job, svc, pods)
	cached, _ := w.endpoints.GetIndexer().ByIndex(indexJobUID, jobIndexKey(p.ns, p.key.UID))
	have := observedSlice(cached, svc.Name)
	if have != nil && kube.EndpointSliceCurrent(have, want) {
		return 0, nil
	}
	slices := w.kube.DiscoveryV1().EndpointSlices(want.Namespace)
	if have == nil {
		if final || len(want.Endpoints) == 0 {
			return 0, nil
		}
		key := createKey(kindEndpointSlice, want.Namespace, want.Name)
		if w.expect.pending(key) {
			return endpointsRecheck, nil // created by an earlier pass; the cache will show it
		}
		w.expect.expect(key, p.key.UID)
		_, err := slices.Create(ctx, want, metav1.CreateOptions{})
		w.count("create", "endpointslices", err)
		switch {
		case err == nil:
			return 0, nil
		case apierrors.IsAlreadyExists(err):
			// Written by a worker that had the job before, or the cache is
			// behind: it shows Trainyard's slices only, so one that never
			// appears there is someone else's.
			w.expect.observed(key)
			return 0, fmt.Errorf("EndpointSlice %s/%s exists but is not in the cache yet (or not Trainyard's); trying again", want.Namespace, want.Name)
		default:
			w.expect.observed(key)
			return 0, err
		}
	}
	want.ResourceVersion = have.ResourceVersion
	_, err := slices.Update(ctx, want, metav1.UpdateOptions{})
	w.count("update", "endpointslices", err)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return endpointsRecheck, nil // the cache is behind a write; its event is on the way
	}
	return 0, err
}

// observedSlice is the job's EndpointSlice in the cache: the one named
// after its Service and managed by Trainyard's worker.
func observedSlice(objs []any, service string) *discoveryv1.EndpointSlice {
	for _, o := range objs {
		if es, ok := o.(*discoveryv1.EndpointSlice); ok && es.Name == service &&
			es.Labels[discoveryv1.LabelManagedBy] == kube.EndpointSliceManagedBy {
			return es
		}
	}
	return nil
}

// deletesService reports whether a plan deletes the job's headless
// Service: its slice goes with it.
func deletesService(actions []job.Action) bool {
	for _, a := range actions {
		if a.Kind == job.ActDeleteService {
			return true
		}
	}
	return false
}
