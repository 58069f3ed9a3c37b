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
//	   decide:   admission.Schedule(snapshot)                     ← pure
//	   commit:   SchedulerCommit: admissions, preemptions and changed wait
//	             reasons, one transaction in two round trips, fenced by the
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
// # Metrics
//
//	trainyard_scheduler_leader                         1 on the lease holder
//	trainyard_scheduler_pending_jobs{tenant,reason}    gauge, leader only
//	trainyard_scheduler_pending_demand{tenant,reason,resource}
//	trainyard_scheduler_admission_latency_seconds      histogram: queued → admitted
//	trainyard_scheduler_admissions_total
//	trainyard_scheduler_preemptions_total{reason}      QUOTA | CAPACITY
//	trainyard_scheduler_cycle_duration_seconds{phase}  snapshot | decide | commit | total
//	trainyard_scheduler_cycle_errors_total
package scheduler
