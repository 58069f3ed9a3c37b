// Package ownership is what a worker knows of the jobs it owns: which
// ones, until when their lease is certainly live, and the little it keeps
// per job between passes. Postgres is the truth; this set decides what
// the worker acts on between two fenced writes.
//
// # In five minutes
//
// A job has at most one owner: the worker whose id is in the job's row,
// while that worker's lease (one row per worker) is live. A worker claims
// jobs, renews its one lease every TTL/3, and lets jobs go when they need
// nothing more. Every write of a job is fenced by owner, lease and version,
// so a worker that stalled past its lease can never overwrite the worker
// that took its jobs over. Kubernetes calls are not fenced: the worker
// makes them only while its local estimate of the lease (Set.Leased) says
// it is certainly live.
//
//	            claim (JobClaim: due, or its owner's lease ran out)
//	  unowned ───────────────────────────────────────────────► owned
//	  (in Postgres:                                             │  ▲
//	   worker_id NULL,    ◄── done (JobSave Done) ──────────────┤  │ renew every TTL/3
//	   or a dead owner)   ◄── park until TTL (JobSave Park,     │  │ (JobLeaseExtend; every
//	      ▲                   JobPark) ─────────────────────────┤  │  6th, JobLeaseRenew lists)
//	      │               ◄── requeue (JobSave Requeue) ────────┤──┘
//	      │               ◄── release (JobRelease, ReleaseAll) ─┤
//	      │                                                     │ lease not renewed in time
//	      │                                                     ▼
//	      └──── another worker's claim (takeover) ──────── lease expired
//	                                                      (the old owner's next
//	                                                       fenced write: ErrLeaseLost)
//
// # The Set
//
// Set holds, per owned job, a lower bound of its lease's expiry: the time
// the claim or renewal was sent plus the TTL (Add, Extend, Renewed). Past
// it the worker does not call Kubernetes for the job without a fenced
// write first (Leased, Until). A renewal that lists the owned jobs
// (Renewed) drops the jobs missing from it and adopts the ones it did not
// know (an earlier run of the same worker id). When renewals fail, Expire
// drops the jobs whose lease has certainly run out.
//
// It also keeps, per job, what saves work later:
//   - the row the claim returned, for the first pass (Stash, TakeClaimed),
//     which then needs no load; any notification about the job drops it
//     (DropClaimed);
//   - the state last loaded and when (Loaded, Idle), for the resync and
//     the metrics (ByState);
//   - whether the job is still to be started (Unstarted, MarkDispatch),
//     which puts its pass before every other in the queue.
//
// The claim and renewal loop that feeds the Set is the worker's
// (internal/worker, leases.go); the queries and their locking are the
// store's (internal/store/queue.go, and the protocol in store's doc.go).
package ownership
