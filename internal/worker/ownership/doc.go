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
//	          claim (JobClaim: due, or its owner's lease ran out)
//	unowned ───────────────────────────────────────────────► owned
//	(in Postgres:                                             │  ▲
//	 worker_id NULL,    ◄── done (JobSave Done) ──────────────┤  │ renew every TTL/3
//	 or a dead owner)   ◄── park until TTL (JobSave Park,     │  │ (JobLeaseExtend; every
//	    ▲                   JobPark) ─────────────────────────┤  │  6th, JobLeaseRenew lists)
//	    │               ◄── requeue (JobSave Requeue) ────────┤──┘
//	    │               ◄── release (JobRelease, ReleaseAll) ─┤
//	    │                                                     │ lease not renewed in time
//	    │                                                     ▼
//	    └──── another worker's claim (takeover) ──────── lease expired
//	                                                    (the old owner's next
//	                                                     fenced write: ErrLeaseLost)
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
// # The Keeper
//
// Keeper is the claim and renewal loop that feeds the Set, in one
// goroutine (Run) so that a claim and a renewal never interleave. It
// claims on start, on Wake (a notification) and on a jittered poll; it
// renews every TTL/3 with JobLeaseExtend, and lists the owned jobs
// (JobLeaseRenew) every sixth time, after a failed claim, or when the lease
// was found run out. Its store calls are the three of Store; the queries
// and their locking are internal/store's (queue.go, and the protocol in
// store's doc.go). The worker builds it (internal/worker, leases.go) and
// gives it its queue.
// # Why leases in Postgres, per worker, and not a leader
//
// Each job has at most one owner: the worker whose id is in the job row,
// while that worker's lease is live (store's claim/lease/fence protocol;
// one lease row per worker, so renewing costs the same at 15,000 owned
// jobs as at one). A worker claims up to --max-owned-jobs jobs, renews its
// lease every TTL/3 and releases
// everything on a graceful stop. Jobs waiting for admission are not
// claimable (the worker's doc, Admission), nor are finished jobs whose kept pods wait for
// a TTL longer than a lease (parked until it by the save that ends them,
// JobSaveParams.Park, or store.JobPark when nothing was left to save), so the owned
// jobs are the ones starting, running or being cleaned up, and neither one
// tenant's queue nor a day's TTLs can fill the workers. Admitted jobs are
// claimed in submission order. Why job ownership in Postgres and not a Kubernetes
// Lease electing one leader (the scheduler does have one leader, but it
// only decides; it dispatches nothing):
//
//   - Scale-out: any number of workers share the jobs; adding one adds
//     capacity (claims skip each other's rows, FOR UPDATE SKIP LOCKED). A
//     leader would do all the work, and its client's QPS and its one
//     process would bound dispatch for the whole installation — exactly
//     the bottleneck behind the training-operator's 18 s p50 at 10 jobs/s.
//   - No single point of delay: a dead worker costs only its own jobs one
//     lease TTL (10 s by default) before others claim them; a restarted
//     worker (new id) does not wait for anything.
//   - Fencing on every write: JobSave, JobPark and JobPurge succeed only
//     for the owner under a live lease and at the version it read, so a
//     worker that paused past its lease cannot overwrite its successor,
//     and a cancel that lands between a read and a write is never lost. A
//     leader lease fences nothing in Postgres; the per-job fence is what
//     makes "two workers never act on one job twice" hold at the source of
//     truth.
//
// The claimer runs on start, on every trainyard_jobs notification (payload
// "<tenant>/<uid>": queued at once if this worker owns the job — a cancel,
// a delete — else a claim is triggered), and on a jittered poll
// (--claim-interval, 1 s) because notifications can be lost. Claims and
// renewals share one goroutine so that a renewal never overlaps a claim
// and drops the jobs just claimed. The owned set keeps, per job, a local
// lower bound of its lease's expiry (time sent + TTL): a job missing from
// a renewal's answer is dropped at once, and when renewals fail jobs are
// dropped once their leases have certainly expired.
//
// Kubernetes calls are not fenced (the API server knows nothing of
// leases). They are safe to repeat and to race: names are deterministic,
// so a create by two workers is one create and one AlreadyExists, which is
// adoption; every delete carries a UID precondition from the cached
// object, so a decision about an old pod never deletes a newer attempt of
// the same name. A pass that did not just save does not act unless its
// lease is certainly live, and while it acts its calls run under a context
// that ends with the lease (the local estimate, pushed back by renewals):
// no call starts once the lease is not certainly live, with a margin of
// TTL/10. Creates are throttled by the client's QPS — 2,048 pods at 200/s
// take as long as a lease — so a worker that stalled stops mid-dispatch
// instead of creating pods for a job another worker owns by now.
package ownership
