package worker

import (
	"context"
	"time"

	"github.com/google/uuid"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/worker/ownership"
)

// The orphan sweep deletes Trainyard pods, Services and EndpointSlices that no job will
// ever clean up: their job was purged, or is finished, let go and was
// cleaned up (Status.CleanedUp) — objects that appeared after their job
// let go of them, because a worker past its lease was still creating, or
// the informers showed a create too late. Reconciles are level-triggered
// only while a job is owned; without the sweep such objects would live for
// ever (and run, for pods).
//
// An object is an orphan only when all of these hold:
//
//   - it carries Trainyard's labels (the informers hold nothing else) with
//     a job uid, and no deletion is under way;
//   - its tenant exists in this installation's Postgres and the object is
//     in that tenant's namespace: another installation sharing the cluster
//     (another namespace prefix, another database) is never touched;
//   - its job is not owned by this worker, and Postgres says the job is
//     not active (no worker owns it or will claim it: a job another worker
//     owns is that worker's business) and either has no row (purged) or is
//     final with CleanedUp. A finished job that keeps objects by its
//     CleanPodPolicy is not swept. Or the job is not in this worker's
//     cluster any more (store.JobBrief.Elsewhere: its cluster was lost and
//     it went back to the queue, or it runs in another cluster now): what
//     it left here is swept whatever its state, so that a cluster that
//     comes back never runs a job beside its new run.
//
// Postgres is asked once per sweep about every job seen (JobListByKeys),
// the objects come from the informer caches, and each delete carries the
// cached object's UID as a precondition.

// sweepBatch is how many jobs one JobListByKeys asks about.
const sweepBatch = 1000

// runSweep sweeps once the caches are synced and every SweepInterval
// (jittered), until ctx ends.
func (w *Worker) runSweep(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			if n, err := w.sweep(ctx); err != nil && ctx.Err() == nil {
				w.log.Warn("orphan sweep failed; trying again later", "error", err)
			} else if n > 0 {
				w.log.Info("orphan sweep deleted objects no job owns", "objects", n)
			}
			timer.Reset(ownership.Jitter(w.cfg.SweepInterval))
		}
	}
}

// sweep deletes orphans (see above) and returns how many deletes it sent.
func (w *Worker) sweep(ctx context.Context) (int, error) {
	type orphan struct {
		resource string
		obj      metav1.Object
	}
	seen := map[store.JobKey][]orphan{}
	for resource, inf := range map[string]cache.SharedIndexInformer{"pods": w.pods, "services": w.services, "endpointslices": w.endpoints} {
		for _, o := range inf.GetStore().List() {
			m, ok := o.(metav1.Object)
			if !ok || m.GetDeletionTimestamp() != nil {
				continue
			}
			tenantID, uid, ok := kube.JobKeyOf(m)
			if !ok {
				continue
			}
			if resource == "endpointslices" && m.GetLabels()[discoveryv1.LabelManagedBy] != kube.EndpointSliceManagedBy {
				// The controller manager's, of a TensorBoard Service (which
				// copies its labels): they go with the Service.
				continue
			}
			k := store.JobKey{Tenant: tenantID, UID: uid}
			if w.own.Owns(k) {
				continue
			}
			seen[k] = append(seen[k], orphan{resource: resource, obj: m})
		}
	}
	if len(seen) == 0 {
		return 0, nil
	}
	keys := make([]store.JobKey, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	keep := map[store.JobKey]bool{}
	for i := 0; i < len(keys); i += sweepBatch {
		briefs, err := w.store.JobListByKeys(ctx, keys[i:min(i+sweepBatch, len(keys))])
		if err != nil {
			return 0, err
		}
		for _, b := range briefs {
			if (b.Active || !b.State.Final() || !b.CleanedUp) && !b.Elsewhere {
				keep[b.Key] = true
			}
		}
	}
	deleted := 0
	for k, objs := range seen {
		if keep[k] || !validUID(k.UID) {
			continue
		}
		t, found, err := w.tenants.lookup(ctx, k.Tenant)
		if err != nil {
			return deleted, err
		}
		if !found || t.State == tenant.Deleted {
			continue // not this installation's tenant, or its namespace is going anyway
		}
		ns, err := namespaceOf(t)
		if err != nil {
			w.log.Warn("orphan sweep: skipping a tenant", "error", err)
			continue
		}
		for _, o := range objs {
			if o.obj.GetNamespace() != ns {
				continue
			}
			w.log.Info("deleting an orphan: its job is gone or finished and cleaned up", "job", k,
				"resource", o.resource, "namespace", ns, "name", o.obj.GetName())
			if err := w.deleteObject(ctx, o.resource, ns, o.obj.GetName(), o.obj.GetUID()); err != nil {
				w.log.Warn("deleting an orphan failed; the next sweep tries again", "job", k, "name", o.obj.GetName(), "error", err)
				continue
			}
			w.metrics.orphans.WithLabelValues(o.resource).Inc()
			deleted++
		}
	}
	return deleted, nil
}

// validUID reports whether a job-uid label can name a job at all; an object
// with anything else there was not made by Trainyard and is left alone.
func validUID(uid string) bool {
	_, err := uuid.Parse(uid)
	return err == nil
}
