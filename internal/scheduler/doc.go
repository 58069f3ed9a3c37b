// Package scheduler runs Trainyard's scheduling loop: the I/O around the
// pure decision in internal/admission.
//
//	NOTIFY trainyard_schedule ─┐  NOTIFY trainyard_freed, ─┐  period, backoff ends ─┐
//	(a job submitted or        │  node/pod informers       │                       │
//	 requeued: it waits)       │  (a job finished; quota,  │                       │
//	                           │   a node or a pod freed   │                       │
//	                           │   room) — only while a    │                       │
//	                           ▼   job waits (not idle)    ▼                       ▼
//	                           ─────── wake (folded for MinInterval, or as long
//	                                   as the last cycle took) ────────────────┘
//	                                                   │
//	        only while holding the scheduler lease in Postgres (epoch-fenced)
//	                                                   ▼
//	   snapshot: SchedulerRead, one round trip: the tenants, the unfinished
//	             jobs and the specs of those submitted since the last read
//	             (shapes cached by job; JobSpecs for any other missing), run
//	             times (TenantRunTimes, each RunTimeRefresh), nodes and the
//	             pods on them from the informers
//	             and, for pending jobs with spec.dependsOn, what their
//	             dependencies are now (DependencyObserve, one query)
//	   decide:   admission.Schedule(snapshot)                     ← pure
//	   commit:   SchedulerCommit: admissions (with their dependencies'
//	             results), preemptions, changed wait reasons and jobs ended
//	             for a dependency (DependencyFailed), one transaction in two round trips, fenced by the
//	             lease's epoch
//	   publish:  QueuePublish: the tenants whose queue view changed, at most
//	             every PublishInterval
//
// # One leader
//
// Every `trainyard worker` (and `trainyard dev`) runs a Scheduler; exactly
// one holds the lease (store.SchedulerLeaseAcquire) and schedules. It
// renews the lease every third of LeaseTTL and steps down as soon as a
// renewal does not confirm it. Whoever takes the lease next gets a new
// epoch, and every write of a cycle first locks the lease row and checks
// the epoch, holding the lock to commit: a leader that stalled past its
// lease (a GC pause, SIGSTOP) commits nothing, and no job is ever admitted
// by two leaders. A leader killed mid-cycle loses only that cycle's
// uncommitted decisions; the next leader decides again from Postgres, the
// source of truth, within LeaseTTL. A graceful stop releases the lease
// for an immediate takeover.
//
// Admission is a flag in the job's row that makes it claimable, written
// with the status the job starts with (job.Admit: STARTING, its start time,
// an Admitted event), so that the worker's first pass only creates pods;
// workers dispatch admitted jobs (internal/worker) and carry out preemptions
// (job.Plan requeues a preempted job once its pods are gone). The
// scheduler itself writes nothing to Kubernetes: its only rights there
// are to list and watch nodes and pods (deploy/base/rbac-worker.yaml).
//
// # What a snapshot costs
//
// Two index-backed reads of scalar columns (jobs_unfinished_idx: the
// unfinished jobs only, whatever the history), specs only for jobs the
// process has not seen, and sums the informers keep up to date: what the
// pods bound to each node take, and each Trainyard job's pods per node and
// placed per group, changed event by event (usage.go), so a cycle costs
// the same with ten thousand finished pods in the cluster as with none.
// The pod informer keeps a pod's node, phase, requests and Trainyard
// labels, nothing else.
//
// # Sharing across tenants
//
// A tenant's sharing settings (tenants.sharing: cohort, borrowing and
// lending limits, weight, reclaim policy, fair-share preemption, usage
// half-life, GPU-hour budget, GPU quotas per model) become
// admission.Sharing (sharing.go). A limit's unset field does not limit,
// as a quota's. The leader keeps the usage ledger in memory: each cycle
// charges what the tenants' jobs held after the previous commit (admitted
// jobs, from admission to end) for the time since, as GPU-seconds on
// today's row and, for tenants with a half-life, as decayed usage
// (admission.DecayUsage); it writes the ledger every UsageFlush, fenced by
// the lease (store.UsageLedgerWrite), and a new leader reads it back, so
// budgets and history survive a fail-over (what the old leader counted
// after its last write is lost: at most UsageFlush plus the lease's TTL).
// A budget's use is the sum of the days of its period (the calendar month
// or the last 30 days, UTC). While a tenant with a budget or a history
// holds anything, idle cycles read the snapshot, to count it.
//
// A preemption may cross tenants (reclaim, fair share): the commit writes
// the preemptor's tenant beside its uid (jobs.preemptor_tenant), and the
// victim's Preempting event and, once requeued, its Preempted condition
// carry admission's explanation (who, why, the share figures). The GPU
// model a job of any model was counted against is written with its
// admission (jobs.admitted_model and its status), and pins its GPU pods.
//
// # Metrics
//
//	trainyard_scheduler_leader                         1 on the lease holder
//	trainyard_scheduler_pending_jobs{tenant,reason}    gauge, leader only
//	trainyard_scheduler_pending_demand{tenant,reason,resource}
//	trainyard_scheduler_admission_latency_seconds      histogram: queued → admitted
//	trainyard_scheduler_admissions_total
//	trainyard_scheduler_preemptions_total{reason}      QUOTA | CAPACITY (what the preemptor lacked)
//	trainyard_scheduler_cycle_duration_seconds{phase}  snapshot | decide | commit | total
//	trainyard_scheduler_cycle_errors_total
//	trainyard_scheduler_tenant_budget_gpu_hours{tenant,kind}   budget | used | remaining, leader only
//	trainyard_scheduler_tenant_decayed_usage{tenant,resource}  tenants with a half-life, leader only
package scheduler
