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
// are to list and watch nodes and pods (deploy/cluster/rbac-worker.yaml).
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
// as a quota's. Budgets and decayed usage come from the usage ledger
// (store/ledger.go, issue 44), which the jobs' own fenced transitions
// write: admission opens a job's span, its requeue or end closes it. The
// leader rolls the ledger up and reads it every UsageRefresh, and between
// reads advances its copy by what the admitted jobs hold (GPU-seconds for
// budgets; admission.DecayUsage for tenants with a half-life). A new
// leader reads it at its first cycle, so a fail-over loses nothing. A
// budget's use is the ledger's GPU-seconds since its period's start (the
// calendar month or the last 30 days, UTC). While a tenant with a budget
// or a history holds anything, idle cycles read the snapshot, to count it.
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
//	trainyard_tenant_gpus_allocated{tenant}            GPUs the tenant's admitted jobs hold (the ledger), leader only
//	trainyard_tenant_gpu_hours_total{tenant}           the ledger's GPU-hours of the UTC month (resets monthly), leader only
//	trainyard_tenant_oldest_wait_seconds{tenant}       the longest wait for admission, leader only
//	trainyard_tenant_queue_length{tenant}              jobs waiting for admission (any reason), leader only
//	trainyard_tenant_gpu_quota{tenant}                 the tenant's GPU quota (tenants with one), leader only
//	trainyard_scheduler_gpu_capacity                   GPUs of the nodes that take pods (the queue sample's), leader only
package scheduler
