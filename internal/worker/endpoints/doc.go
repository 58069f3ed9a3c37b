// Package endpoints is the EndpointSlice controller: it keeps each
// distributed job's EndpointSlice listing its replica pods' addresses
// under the namespace's Service of replicas, which is how TF_CONFIG's
// names resolve (kube.RenderEndpointSlice says why Trainyard writes it and
// not the controller manager).
//
// # In five minutes
//
//	pod informer ── a replica's address, phase, node or deletion changed ──┐ (after Batch: events
//	Service informer ── a job's own (legacy) Service came or went ─────────┤  of one job fold)
//	slice informer ── someone deleted a slice ──────────────────────────────┤
//	                                                                        ▼
//	                      workqueue by "<namespace>/<job uid>" (internal/controller.Loop)
//	                                                                        │
//	     sync, while leading: the job's replica pods in the cache ──► kube.RenderEndpointSlice
//	          no address among them? delete the slice (if any)   │
//	          else equal? nothing.  none yet? Create.  else Update (resourceVersion)
//	                                                             │
//	                                                             ▼
//	                              memo of the last write, until the informer shows it (Seen)
//
// The slice is a function of the job's pods alone: the controller reads no
// job row and needs no Postgres but a cached look at the tenant (Mine: is
// the namespace this installation's?). So it is its own controller, apart
// from the job's reconcile passes: those create and delete pods, and the
// slice follows the pods, as the controller manager's EndpointSlice
// controller follows a Service's. A job of one pod has no peers to find
// (no TF_CONFIG: kube.HasPeers) and gets no slice. A job whose pods all
// ended, or are gone, or not yet addressed has none either: DNS answers a
// missing slice as it does an empty one, and a slice that goes with its
// last address is one write instead of an update and a delete later.
//
// # One writer
//
// Every worker process runs a Controller; only the one that leads writes.
// It leads while its process holds the scheduler lease (the scheduler's
// OnLead calls Worker.LeadEndpoints): a lease in Postgres that exists
// anyway, so one installation's writer is chosen among its own processes
// only, with no Kubernetes Lease and no right to write one. When it
// starts leading it syncs every job that has a pod or a slice in the
// cache; when it stops, its queued keys are no-ops. Two writers for a
// moment (a leader that stalled past its lease) cost a conflict, never a
// wrong slice: updates carry the resourceVersion, deletes the UID, and
// both compute the slice from the same pods.
//
// # Few writes
//
// The memo is what keeps writes few: between a write and its informer
// event the cache shows the old slice, and a sync in between would write
// again or conflict on the old resourceVersion. Observe returns the write
// instead while the cache has not caught up; Seen forgets it once the
// cache shows it (or shows it gone); Delete forgets it at once. Pod events
// wait Batch (250 ms, the worker's own pod event batch) so that the
// addresses of a job's pods, which arrive together, make one write.
//
// A create that finds the slice there already (the writer before this
// one wrote it, not in the cache yet), an update that conflicts or finds
// it gone, and a delete that conflicts return how soon to look again
// (Recheck) instead of an error.
//
// The worker's orphan sweep deletes what no job will own (a slice of a
// job purged while no process led, say).
package endpoints
