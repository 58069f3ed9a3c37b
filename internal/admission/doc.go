// Package admission is Trainyard's admission decision: one pure function over
// the whole installation at one instant.
//
//	Schedule(Snapshot{Now, Config, Tenants, Jobs, Nodes, Clusters}) → Decision{Admit, Assigned, Clusters, Preempt, Waiting}
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
//	clusters ─ labels, state; only READY ones take new work
//	   └─ nodes ─ allocatable − used by every bound pod (Trainyard's or
//	              not); labels and taints decide which pods may go there;
//	              cordoned nodes take nothing new
//
// Resources are job.Vector: the dimensions (CPU, memory, nvidia.com/gpu,
// pods) are listed once, in internal/job. A GPU type is a node label the
// job selects with a node selector or affinity; it needs no dimension of
// its own.
//
// # One cycle
//
//	gate on dependencies (deps.go: unmet ─ wait DEPENDENCY outside the line;
//	never met ─ DependencyFailed) ─► reserve admitted pods not on nodes ─►
//	order the pending jobs ─► for each, in order:
//	                                                                 │
//	   backoff after unschedulable pods? ──────────── wait UNSCHEDULABLE (ETA: backoff end)
//	   its tenant's line held (strict, or starving)? ─ wait ORDER / PRIORITY (blocked by it)
//	   no READY cluster it allows? ─────────────────── wait UNSCHEDULABLE (holds nobody up)
//	   larger than the tenant's whole quota? ───────── wait QUOTA (holds nobody up)
//	   no one cluster's nodes could ever hold it? ──── wait UNSCHEDULABLE (holds nobody up)
//	   another tenant's starving job holds what it
//	   needs? ────────────────────────────────────── wait CAPACITY
//	   quota has room and the gang fits the nodes
//	   of a cluster (the best fit)? ────────────────── ADMIT there
//	   else, tenant LOWER_PRIORITY and lower-priority
//	   running jobs would make room? ──────────────── PREEMPT them; wait QUOTA / CAPACITY
//	   else ────────────────────────────────────────── wait QUOTA / CAPACITY (PREEMPTED if
//	                                                   it was preempted), and hold the line
//	                                                   as the queueing strategy says
//	─► estimate every waiting job's start
//
// Gang fit: a job is admitted only when every one of its pods has a node
// now, all in one cluster (below), each node keeping within its free
// capacity per dimension (GPUs and pod slots included) and allowing the
// pod (node selector and required node affinity on its labels, every
// NoSchedule/NoExecute taint tolerated; the checks are kube-scheduler's
// own library code). Pods are placed first-fit in node-name order; the nodes found (Decision.Assigned)
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
// crosses tenants, except by the sharing rules below.
//
// # Many clusters
//
// Nodes belong to Kubernetes clusters (Node.Cluster; "" is the default
// cluster, the only one a one-cluster installation and the simulator
// have: with it every rule in this page is as it was). A node's name is
// unique only within its cluster, and an admitted job's OnNodes name
// nodes of its Job.Cluster.
//
//	job ─ its tenant's allowed clusters (Tenant.Clusters; empty: all),
//	      spec.clusterSelector (labels a cluster must have) and
//	      spec.clusters (names; empty: any)
//	   │
//	   ├─ READY clusters it allows: none? ──── wait UNSCHEDULABLE ("no
//	   │                                        cluster matches …", or which
//	   │                                        match and their states);
//	   │                                        holds nobody up
//	   └─ in byFit order, the first cluster whose nodes hold the whole
//	      gang ─► ADMIT there (Decision.Clusters; Assigned are its nodes)
//
// A gang is never split: all its pods go to one cluster. The order among
// the clusters that can hold it (byFit) is best fit by GPUs (the fewest
// free GPUs left in the cluster once the job is placed, so big holes stay
// whole for big gangs), then load (the largest fraction of any resource's
// allocatable in use once it is placed, the smaller first), then name. A
// cluster that is not READY (UNREACHABLE, DRAINING, CORDONED) takes
// nothing new; its nodes and the admitted jobs on them keep counting
// what they use. A cluster that nodes name but Snapshot.Clusters does
// not list is READY without labels.
//
// What stays global: quotas, cohorts and their pools, budgets, fair
// share and the cluster order count every cluster together (a tenant's
// quota is one quota, wherever its jobs run), and dominant shares are
// over the READY clusters' capacity together, as are start estimates.
//
// Waiting messages: with more than one cluster, a job that waits for
// capacity is told about the closest cluster (the one lacking the
// smallest fraction of its demand in any resource, then the most free
// GPUs, then name) and, when the clusters it allows have enough free
// together, that a gang is never split across clusters; a job no one
// cluster could ever hold says so, and whether they could together. When
// its tenant's allowed clusters left out a cluster, the message ends
// with "its tenant may run jobs only in clusters …", so that nobody looks
// for room the job may not take.
//
// Preemption is made for one cluster: the trial that picks victims puts
// the preemptor in one cluster it may run in, and a victim frees room
// only on its own cluster's nodes. Victims elsewhere still free quota
// (or a cohort's pool), so while the quota lacks they count; once the
// quota has room they are passed over, so a capacity preemption never
// stops jobs in two clusters that would not add up to room in one. Every
// allowed cluster is tried, those where jobs already stop for the
// preemptor first, then in byFit order; the one needing the fewest new
// victims wins. Reclaim and fair-share preemption run the same trial.
//
// # Sharing: cohorts, reclaim, fair share, budgets, GPU models
//
// Tenant.Sharing is optional; its zero value keeps every rule above as it
// was. A tenant that names a Cohort has Quota as its nominal
// (guaranteed) quota. Per dimension it limits:
//
//	guaranteed = nominal − LendingLimit       (0 without a lending limit)
//	pool       = cohort's own nominal + Σ members' (nominal − guaranteed)
//	admit j    ⇔ use+j ≤ nominal + BorrowingLimit   (no limit: the pool)
//	           ∧ Σ members' max(0, use − guaranteed) ≤ pool, with j
//
// so a tenant within its nominal quota always fits when nobody borrows,
// and what others leave unused is borrowed up to the limits. Jobs that
// would borrow are considered after every other job of the cycle, so a
// cycle never lends what a member's own job needs in it.
//
// Reclaim: a job that stays within its tenant's nominal quota and does
// not fit (the pool or the nodes) preempts borrowed jobs of its cohort:
// only jobs of tenants using more than their nominal quota, in a
// dimension it needs, now and when the cycle began; the tenant furthest
// over its entitlement (largest weighted share) first, then its lowest
// priority, then its most recently started job; as few as will do
// (Sharing.Reclaim ANY, LOWER_PRIORITY: only lower priority, NEVER). A
// tenant within its nominal quota is never preempted by another. While
// a cohort reclaims, nobody borrows in it until the next cycle, so the
// room being made is not taken.
//
// Weighted share (Kueue's, at the largest dimension): what a tenant uses
// above its nominal quota over its cohort's pool, divided by its Weight;
// with history (Sharing.Usage, the decayed average DecayUsage keeps) its
// usage is the mean of what it uses now and that. The cluster order puts
// the tenants whose next job stays within nominal first, then the lowest
// weighted share, then the dominant share above.
//
// Aging (Config.BorrowAging, off when zero): weighted share alone can pass
// a borrower by for ever: a gang that needs more of the pool than is
// free waits while later, smaller borrowers of other tenants take each
// bit that frees. A borrower whose next job has waited BorrowAging goes
// before the cohort's other borrowers, the longest waiting first; when
// what it lacks is the pool, no later job of another tenant borrows in
// those dimensions (it waits QUOTA, "held for a job that has waited
// longer"), so the pool fills up for it as borrowed jobs end, as a
// backfill reservation does. Jobs within their nominal quota are not
// held: they come first and may reclaim. On the simulator's bursty week
// it changes little: there the longest waits are the backlog of an
// overloaded day, not a starved gang (integration/bench/RESULTS.md).
//
// Fair-share preemption (Sharing.FairSharePreemption, off by default): a
// job that would borrow may preempt borrowed jobs of a tenant m only
// while S_t(with j) ≤ S_m(without the victims), the preemptor's final
// share at most the victim tenant's final share (Kueue's
// LessThanOrEqualToFinalShare). Why it cannot oscillate: shares grow
// with usage, so S_m(without) < S_m(before) and, after the preemption,
// both S_t(with j) and S_m(without) are at most S_m(before) − ε: the
// largest share among the tenants involved strictly falls and none rises
// above it. Sort all tenants' shares in descending order: every
// preemption makes that vector lexicographically smaller, and with a
// fixed set of jobs there are finitely many such vectors, so preemptions
// alone come to rest; in particular m's victim can not preempt j back
// without something else changing (it would need S_m(before) ≤
// S_t(without j) < S_t(with j) ≤ S_m(without) < S_m(before)).
// TestFairShareNoOscillation replays decisions on fixed jobs to check it.
//
// Budgets: a tenant whose Budget of GPU-hours is used up has its GPU jobs
// wait with reason BUDGET and an estimate of the period's reset; with
// OverBudget BORROW_ONLY (in a cohort) its guarantee is suspended: its
// whole nominal quota is lent, its jobs only borrow, and reclaim takes
// them first (kind BUDGET).
//
// GPU models: Sharing.GPUTypes is a nominal quota per model (the node
// label Config.GPUTypeLabel), each model a dimension of its own for the
// rules above, borrowed and reclaimed per model. A job with GPUType runs
// on that model's nodes; one of any model is tried per model the tenant
// has quota of or may borrow, and Decision.GPUTypes says which one it was
// counted against (its pods must be pinned there).
//
// Non-preemptible jobs (Job.NonPreemptible) are never victims, of any
// rule, and never borrow. Every preemption carries its Kind, the two
// tenants' weighted shares and a Message with the figures, for the
// victim's events; the preemptor's message never names other tenants'
// jobs.
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
// request, a cursor past the nodes that could not hold it, per cluster.
// With several clusters, a job is tried in each it allows, best fit
// first, at most once per shape and cluster, and a capacity or
// preemption trial per allowed cluster. BenchmarkSchedule
// (10,000 pending, 1,000 running, 100 tenants, 1,000 nodes),
// BenchmarkScheduleClusters (the same as 1 × 1,000 and 5 × 200 nodes) and
// BenchmarkScheduleSweep measure it; make bench prints them, and
// BenchmarkScheduleCohorts the same with 100 tenants in 10 cohorts, half
// of them borrowing (1,000 to 50,000 pending jobs). Sharing adds, per
// job, a quota check over the cohort's members (a few per dimension) and,
// for a job within its nominal quota that does not fit, one reclaim trial
// per tenant and shape per cycle. A cycle's per-job states come from a
// sync.Pool, not a fresh allocation: the loop, and the simulator that
// decides at every event, would otherwise make as much garbage per cycle
// as the snapshot is large.
package admission
