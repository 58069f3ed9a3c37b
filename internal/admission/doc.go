// Package admission is Trainyard's admission decision: one pure function over
// the whole installation at one instant.
//
//	Schedule(Snapshot{Now, Config, Tenants, Jobs, Nodes}) → Decision{Admit, Assigned, Preempt, Waiting}
//
// Like job.Plan it does no I/O, reads no clock but Snapshot.Now, never
// writes into its input, and gives the same decision for the same
// snapshot in any order. The scheduler loop (internal/scheduler) builds the
// snapshot from Postgres and its informers, calls Schedule, and commits
// the decision in one transaction. Nothing below the loop imports this
// package.
//
// # The model
//
//	tenants ─ quota, preemption policy, queueing strategy, typical run time
//	   │
//	   ├─ admitted jobs ── hold their demand of the quota, and their pods'
//	   │                   requests on the nodes they are on; pods not on a
//	   │                   node yet keep room reserved (reserveAdmitted)
//	   └─ pending jobs ─── the tenant's queue: priority DESC, then submission
//
//	nodes ─ allocatable − used by every bound pod (Trainyard's or not);
//	        labels and taints decide which pods may go there; cordoned
//	        nodes take nothing new
//
// Resources are job.Vector: the dimensions (CPU, memory, nvidia.com/gpu,
// pods) are listed once, in internal/job. A GPU type is a node label the
// job selects with a node selector or affinity; it needs no dimension of
// its own.
//
// # One cycle
//
//	reserve admitted pods not on nodes ─► order the pending jobs ─► for each, in order:
//	                                                                 │
//	   backoff after unschedulable pods? ──────────── wait UNSCHEDULABLE (ETA: backoff end)
//	   its tenant's line held (strict, or starving)? ─ wait ORDER / PRIORITY (blocked by it)
//	   larger than the tenant's whole quota? ───────── wait QUOTA (holds nobody up)
//	   no set of nodes could ever hold it? ─────────── wait UNSCHEDULABLE (holds nobody up)
//	   another tenant's starving job holds what it
//	   needs? ────────────────────────────────────── wait CAPACITY
//	   quota has room and the gang fits the nodes? ─── ADMIT
//	   else, tenant LOWER_PRIORITY and lower-priority
//	   running jobs would make room? ──────────────── PREEMPT them; wait QUOTA / CAPACITY
//	   else ────────────────────────────────────────── wait QUOTA / CAPACITY (PREEMPTED if
//	                                                   it was preempted), and hold the line
//	                                                   as the queueing strategy says
//	─► estimate every waiting job's start
//
// Gang fit: a job is admitted only when every one of its pods has a node
// now, each node keeping within its free capacity per dimension (GPUs and
// pod slots included) and allowing the pod (node selector and required
// node affinity on its labels, every NoSchedule/NoExecute taint
// tolerated; the checks are kube-scheduler's own library code). Pods are
// placed first-fit in node-name order; the nodes found (Decision.Assigned)
// prove that the gang fits, and kube-scheduler then places the pods,
// perhaps elsewhere. Should they not fit after all (something else took
// the room meanwhile), the worker requeues the job after a timeout with a
// backoff (Job.NotBefore), as Kueue's waitForPodsReady does. Two jobs
// therefore never each hold half of what both need.
//
// Order across tenants: jobs for which a preemption made room come first;
// then the tenants' queues are merged by dominant share, one job at a
// time: the next job is the head of the queue of the tenant whose usage
// (its admitted demand, plus the demand of its jobs ordered so far) is the
// smallest share of the cluster in the dimension where it is largest. A
// tenant that uses much waits behind one that uses little; within a
// tenant, priority and submission order. The result is each waiting job's
// cluster position; its tenant position is its place among the tenant's
// waiting jobs.
//
// Queueing strategies: under STRICT_FIFO the first job of a tenant that is
// not admitted holds back the rest of its queue (PRIORITY or ORDER, naming
// it); under BEST_EFFORT_FIFO later jobs that fit start ahead of it until
// it has waited Config.StarvationAge, after which it holds the line too.
// A job that has waited that long for capacity also keeps later jobs of
// every tenant off the resources it lacks, so a large job is not starved
// by a stream of small ones. Jobs that can never start (larger than the
// whole quota, no node set could hold them) and jobs in backoff hold
// nobody up.
//
// Preemption (tenant policy LOWER_PRIORITY): a pending job that does not
// fit may stop running jobs of its own tenant of lower priority: the
// lowest priority first, among equals the most recently started (they
// lose the least work), as few as will do. Victims keep their resources
// until their pods are gone (a graceful stop: SIGTERM and the job's grace
// period to checkpoint), then return to the queue; the preemptor waits
// for them and is first in the cluster order once they are gone, so
// nobody else takes the room. Jobs already stopping for it count first: a
// cycle chooses no new victims while those will do. Preemption never
// crosses tenants.
//
// Start estimates play the queue forward: running jobs end after their
// tenant's typical run time (the median of its recent jobs, from their
// start) or, without history, at their deadline; waiting jobs start in
// cluster order, each when enough of the cluster's capacity (in total,
// not per node) and of its tenant's quota is free, and end in turn. The
// basis says which figure an estimate rests on; a job that depends on a
// job with neither history nor deadline gets none.
//
// # Cost
//
// Linear in the jobs: sorting the queues, one heap step per pending job to
// merge them, and at most one gang placement per job shape per cycle
// (a shape that did not fit will not fit later in the same cycle: free
// capacity only shrinks). Placement keeps, per placement class and pod
// request, a cursor past the nodes that could not hold it. BenchmarkSchedule
// (10,000 pending, 1,000 running, 100 tenants, 1,000 nodes) and
// BenchmarkScheduleSweep measure it; make bench prints them.
package admission
