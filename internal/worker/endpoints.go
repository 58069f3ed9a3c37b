package worker

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/internal/job"
)

// syncEndpoints keeps the EndpointSlice of a distributed job listing its
// live replica pods (package endpoints). Pod changes that move an address
// (kube.ObservePod's IP) bring the job back here, and the passes that see
// a finished job's pods end or go leave the slice empty, as the controller
// manager would for a Service whose pods all finished; the job's cleanup
// deletes it (job.ActDeleteEndpoints). A pass that only records how
// replicas ended leaves the slice to the pass that decides on it, right
// after (apply), and a pass that deletes it does not write it (its caller
// skips those). It returns how soon to look again when the slice could not
// be brought up to date now.
func (w *Worker) syncEndpoints(ctx context.Context, p *pass, final bool) (time.Duration, error) {
	if !p.wj.Job.Spec.Distributed() {
		return 0, nil
	}
	pods := make([]*corev1.Pod, 0, len(p.objs.pods))
	for _, pod := range p.objs.pods {
		pods = append(pods, pod)
	}
	return w.slices.Sync(ctx, p.wj.Job, p.ns, pods, p.objs.legacySvc, p.objs.slice, final)
}

// observeSlice adds the job's EndpointSlice to what a pass observed
// (endpoints.Writer.Observe: the cache's, or this worker's last write).
func (w *Worker) observeSlice(ns, uid string, obs *job.Observed, objs *objects) {
	objs.slice = w.slices.Observe(ns, uid)
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
