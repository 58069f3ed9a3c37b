// Package workertest is an in-memory worker.Store for tests of the worker
// that need neither Postgres nor a cluster, and a fake clientset that
// behaves enough like an API server for them (UIDs, resource versions).
//
// Store keeps jobs, tenants and per-worker leases in maps under one mutex,
// and honours the same contract as *store.Store (internal/store/queue.go):
//
//	JobClaim        jobs of workers whose lease ran out, then unowned due jobs in order
//	JobSave         owner + live lease + version, or ErrLeaseLost / ErrConflict / ErrNotFound
//	JobPark         as JobSave; the job is claimable again after the given time
//	JobPurge        owner + live lease; the job must be deleted
//	JobLeaseExtend  only a live lease is extended
//	JobLeaseRenew   the lease is (re)started and the owned active jobs listed
//
// Leases and claim times run on the wall clock, like Postgres' now(); tests
// end a lease at once with ExpireLease. The jobs' own times (admission,
// events) take Store.Now, the test's clock. Writes by others (a cancel, a delete, a preemption, a
// takeover) are test methods that bump the version as the API's writes do.
// Calls counts each method's calls: a Postgres round trip each.
package workertest
