// Package endpoints writes a distributed job's EndpointSlice: the list of
// its replica pods' addresses under the namespace's Service of replicas,
// which is how TF_CONFIG's names resolve (kube.RenderEndpointSlice says why
// Trainyard writes it and not the controller manager).
//
// # In five minutes
//
//	reconcile pass ──Observe──► the slice as this worker last saw or wrote it
//	      │
//	      └──Sync(pods)──► equal? nothing.  none yet? Create.  else Update (resourceVersion)
//	                                  │
//	                                  ▼
//	                         memo of the last write, until the informer shows it (Seen)
//
// The Writer is not a controller of its own: the job's reconcile pass calls
// it with the pods it observed, because when the slice is written matters
// to the job. The pass that ends a job empties the slice before letting the
// job go, the cleanup deletes it in the same pass, and a pass that only
// records how replicas ended leaves the slice to the pass right after it.
// Driven by its own queue it would write from other observations than the
// job's pass, and could not order its writes with the job's fenced save.
//
// The memo is what keeps writes few: between a write and its informer
// event the cache shows the old slice, and a pass in between would write
// again or conflict on the old resourceVersion. Observe returns the write
// instead while the cache has not caught up; Seen forgets it once the
// cache shows it (or shows it gone); Forget after the slice was deleted.
//
// A create that finds the slice there already (a previous owner wrote it,
// not in the cache yet), or an update that conflicts or finds it gone,
// returns how soon to look again (Recheck) instead of an error.
package endpoints
