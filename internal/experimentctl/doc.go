// Package experimentctl is the experiments controller: it turns package
// tune's decisions into trial jobs, stops trials early and ends
// experiments. internal/experiment/doc.go describes the design; this
// package is its I/O half (the store, the jobs), kept apart from the
// resource's types so that the store can use those.
//
// One Controller runs at a time: cmd/trainyard's worker runs Lead from
// the scheduler lease's OnLead, beside the EndpointSlice controller, so
// leadership costs no second lease and a new leader takes over within a
// lease period. Every pass is idempotent (trial rows before jobs, job
// creates keyed by request id, state changes conditional on RUNNING), so
// a pass cut off by a lost lease leaves nothing a later pass cannot
// finish.
package experimentctl
