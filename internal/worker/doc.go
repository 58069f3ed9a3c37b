// Package worker runs Trainyard's jobs on Kubernetes. It takes the jobs
// the scheduler admitted, creates their pods, follows them, and writes
// status and events back to Postgres until each job has ended and been
// cleaned up. Every decision is job.Plan's (pure, table-tested); this
// package is the I/O around it.
//
// # In five minutes
//
// A worker owns some jobs (a lease in Postgres; package ownership). For
// each owned job it runs passes, one at a time per job, whenever
// something changed: a pod event, a notification, a timer. A pass is
//
//	load the job  →  observe its objects in the informer caches
//	              →  job.Plan (pure)  →  save status (fenced)  →  act in Kubernetes
//
// and a job whose plan says it is over is let go (done, parked until its
// TTL, purged, or sent back to the queue). Three things make it safe with
// many workers: only the owner's writes succeed (fenced saves), Kubernetes
// names are deterministic (AlreadyExists means adopt), and every delete
// carries the UID of the object the pass saw.
//
//	Postgres ──NOTIFY──► claim / renew (ownership.Keeper) ──► owned set (ownership.Set)
//	   ▲                                                   │
//	   │                informers: pods, Services          │ owned keys
//	   │                (label selected) ──────────────────┤ events → job key
//	   │                                                   ▼
//	   │           workqueue by job key (internal/controller.Loop; unstarted first)
//	   │                                                   │
//	   │                                                   ▼
//	   └── JobSave / JobPark / JobPurge ◄── reconcile pass (reconcile.go, act.go)
//	                                                       │
//	                                     pods, TensorBoard
//
//	slice controller (endpoints/), on the process holding the scheduler lease:
//	    the job's replica pods in the cache → its EndpointSlice
//
//	orphan sweep (sweep.go), every minute: objects of purged or cleaned-up jobs → delete
//
// # Where things are
//
//	store.go          Store: the 12 storage calls the worker makes (*store.Store implements it)
//	worker.go         New, Run, the informers and their event handlers, notifications
//	leases.go         the worker's ownership.Keeper: its claim and renewal loop
//	ownership/        the owned-job set, the claim and renewal loop, the state diagram
//	reconcile.go      one pass: load, observe, plan, save, let go
//	act.go            the Kubernetes calls of a plan; log tails; adoption
//	endpoints/        the EndpointSlice controller: each job's slice from its pods alone
//	expectations.go   writes whose informer events have not come yet
//	requeue.go        a preempted or unschedulable job back to the queue
//	sweep.go          the orphan sweep
//	cluster.go        ClusterAgent: this cluster's heartbeat and nodes; the clusters' health sweep (on the scheduler lease)
//	tenants.go        the tenant cache (the namespace is the tenant row's)
//	workertest/       an in-memory Store and a fake clientset, for tests
//
// Tests: reconciler_test.go and events_test.go need neither Postgres nor
// a cluster (workertest). The files with build tag integration run the
// same Worker on Postgres (internal/pgtest); integration/e2e runs the
// binary on a real cluster.
//
// The rest of this comment is detail, by topic.
//
// # Admission
//
// The scheduler admits jobs: one leader decides over every tenant, job and
// node at once (internal/admission, internal/scheduler) and sets the admitted
// flag, which makes a job claimable; until then a QUEUED job is nobody's,
// and the scheduler records why it waits. A worker never admits, and
// never dispatches a job that is not admitted: a cancel before admission
// ends the job in Postgres at once.
//
// Preemption is carried out here. The scheduler marks a running job
// (store: preempt_for, and a NOTIFY to its owner); job.Plan then deletes
// its pods — gracefully: each pod carries the job's termination grace
// period, bounded by --max-termination-grace-period, time to write a last
// checkpoint on SIGTERM — and once they are gone sends the job back to the
// queue (requeue.go: one fenced save makes it QUEUED, unadmitted and
// unowned, restarts untouched). The same happens to a job whose pods stay
// unschedulable past --unschedulable-timeout (someone else took the room
// the scheduler saw), with a backoff before it may be admitted again
// (--requeue-backoff, doubling up to --requeue-backoff-max).
//
// # The reconcile pass
//
//	JobLoad                          not ours, inactive or gone → drop; the truth is Postgres
//	tenant (cached 30 s; NOTIFY trainyard_tenants drops the entry): its row names the namespace
//	tenant not ACTIVE                the job is cancelled, never dispatched (a job can commit
//	                                 after offboarding's last cancel sweep)
//	QUEUED and not admitted          not the worker's (the scheduler's): released
//	observe                          pods and Services from the informer indexes, by
//	                                 "<namespace>/<job uid>": only the tenant's namespace
//	job.Plan
//	CaptureLogTail                   GetLogs tail (--log-tail-lines, --log-tail-bytes),
//	                                 CreateParallelism at a time, at most MaxLogTailsPerPass
//	                                 (16) reads a pass and MaxLogTailBytesPerJob (128 KiB)
//	                                 kept per job; a failed read keeps the termination
//	                                 message instead (FallbackToLogsOnError puts the log's
//	                                 end there); beyond the bounds, no tail
//	JobSave                          only when status or events changed (or Done); fenced:
//	                                 ErrConflict → re-read at once, ErrLeaseLost → drop
//	pods, other creates, deletes     each group in parallel (bounded), under the lease
//	                                 (ownership doc); AlreadyExists = adopt (below), NotFound = done;
//	                                 invalid/forbidden → the job FAILS with the API server's
//	                                 reason and message and a Warning event
//	Forget                           letting go (below), then: final job: JobSave Done
//	                                 (inactive, unowned); deleted job: JobPurge
//	requeue                          Requeue → now; RequeueAfter → AddAfter (the deadline
//	                                 timer fires on time even when no pod changes)
//
// Adoption. AlreadyExists means the object is there already. It is this
// job's when it carries the job's uid label — by the cache if the cache
// shows it, else by a live GET (the cache may not show it yet). Another
// Trainyard job's object (a deleted job of the same name, still going)
// makes the create retry until the name is free. An object Trainyard did
// not make fails the job, reason NameConflict: waiting will not free the
// name. (Job ids ending in "-tensorboard" are refused at submit:
// job.ReservedJobID.)
//
// Letting go. Once a job is let go (Done, or purged) its informer events
// are dropped, so anything of it that exists without the caches showing it
// yet — a cancel or deadline during dispatch, a failure after the
// TensorBoard was created in the same pass — would stay for ever. The caches are
// trusted for the rest: what this worker did not just create, they show.
// So a job is not let go while creates of it are awaited by the caches
// (expectations), and a create whose expectation lapsed (30 s without its
// informer event: a watch that broke and relisted) is read back by name,
// a GET per such object, before the job goes; what those GETs find is
// planned on with the cache, and if that plan still deletes or waits, it
// is applied and the job stays owned. The status it lets go with says
// from that observation whether anything is left (CleanedUp), which the
// sweep below relies on.
//
// There is no LIST per job, on purpose. A label-selected LIST of a job's
// pods makes the API server walk every pod of the namespace (its watch
// cache is keyed by namespace and name, not by label), so each job that
// ended cost work in proportion to the namespace's history: on the local
// cluster, 1.9 ms of API server CPU per LIST with 2,000 pods in the
// namespace and 5.9 ms with 10,000, where a GET costs 0.9 ms (200 calls
// each, a throwaway client-go loop). Issue 13 saw dispatch slow down as
// finished jobs piled up; the bench measures it at 0, 2,000 and 10,000
// finished pods. What a LIST at that moment would add over the cache —
// another worker's late create, landing moments before or after — is left
// to the orphan sweep either way: it deletes what a purged or cleaned-up
// job left, and a job whose policy keeps its objects keeps such a
// straggler too, as it did when the create landed after the LIST.
//
// Finished objects. A finished job keeps what its CleanPodPolicy keeps
// (by default its finished pods and its Service) until its
// ttlSecondsAfterFinished, or, when it sets none, the operator's default
// (Config.FinishedTTL, `--default-ttl-after-finished`, 24 h); the job is
// parked meanwhile (no lease, no worker slot) and whichever worker claims
// it when due deletes them. Its record, events and the log tails kept in
// its status stay. Jobs that finished before the default was set keep
// their objects until they are deleted.
//
// # Orphan sweep
//
// What still escapes — a worker past its lease whose last create lands
// after the job was let go — is found by a sweep at start (once the caches
// synced) and every SweepInterval (1 min): a Trainyard pod or Service of
// this installation's tenant, in that tenant's namespace, whose job is
// purged or final and cleaned up (not active, so no worker owns or will
// claim it) is deleted, with a UID precondition. One JobListByKeys query
// answers for every job seen (sweep.go).
//
// The queue and the goroutines draining it are internal/controller's Loop
// (Run → runWorker → processNextWorkItem → sync), the skeleton the tenant
// reconciler shares; sync is one reconcile pass, and its timers are the
// loop's RequeueAfter. A job this worker owns and has not started (just
// claimed, or QUEUED and admitted) is urgent (Config.Urgent): its pass
// comes before every queued pass of a started job, so that a burst of
// admissions is not served behind the pod events of the jobs admitted
// just before it.
//
// Errors: a retryable failure (Postgres, an API error that is not terminal,
// a name still held by a deleted job's object, a lease that ended while
// acting) returns the key to the queue with per-job exponential backoff (50
// ms doubling to 1 min). There
// is no global rate limit on retries: one tenant's failing jobs must not
// slow everyone's. A Forbidden from the ServiceAccount admission plugin
// ("error looking up service account") is retried, not terminal: the
// tenant's namespace is still being provisioned.
//
// # Speed
//
// The path from an acknowledged submit to created pods is: NOTIFY → a
// scheduling cycle (the scheduler's) → NOTIFY (to the claimers of the
// job's cluster only: store.AdmittedPayload) → claim (one statement) →
// queue → JobLoad → JobSave → every create of the job at once. Three
// Postgres round trips (JobSave is one statement: the fenced UPDATE and
// its events' INSERT) and one round of parallel API calls; no per-job
// resync (informers have resync period 0; every 5 min the owned jobs that
// had no pass since the last time are requeued, the only periodic work),
// the client
// QPS and burst are flags (200/400 by default), --concurrency reconciles
// run at once, and expectations (expectations.go) keep a pass from
// re-sending creates and deletes whose effect the informers do not show
// yet. Pod updates that change nothing Plan reads are not queued.
//
// # Caches
//
// No reconcile runs before the informer caches are synced: an empty cache
// would look like vanished pods, which Plan counts as failures. The caches
// hold only Trainyard's objects (label selector) without managed fields.
// Plan reads the listers and the informers' job index ("<namespace>/<job
// uid>"), so a pass costs the same whatever else the namespace holds; the
// API server is read for logs, for an AlreadyExists the cache does not
// explain, and for creates whose informer events lapsed, each a GET by
// name. The worker never LISTs; only the informers do, once at start and
// when a watch must be re-established.
//
// # Metrics
//
//	trainyard_worker_owned_jobs                     gauge
//	trainyard_worker_jobs{state}                    gauge, owned jobs by last state
//	trainyard_jobs{state}                           gauge, unfinished jobs of all tenants, from Postgres (take max over workers)
//	trainyard_jobs_waiting_for_quota                gauge, QUEUED jobs not admitted yet, from Postgres (take max over workers)
//	trainyard_worker_job_transitions_total{state}   counter
//	trainyard_worker_requeues_total{reason}         counter: Preempted | Unschedulable | Suspended
//	trainyard_worker_orphans_deleted_total{resource}   counter: pods | services
//	trainyard_worker_jobs_claimed_total             counter
//	trainyard_worker_claim_delay_seconds            histogram, admission → this worker's claim (jobs not started yet)
//	trainyard_worker_leases_lost_total              counter
//	trainyard_worker_dispatch_latency_seconds       histogram, job creation → all objects created
//	trainyard_worker_reconcile_duration_seconds     histogram
//	trainyard_worker_reconcile_errors_total{reason} store | conflict | lease | kubernetes | terminal | not_synced
//	trainyard_worker_kube_requests_total{verb,resource}   verb: create, update, delete, get
//	trainyard_worker_kube_request_seconds{verb,resource}  histogram, as the worker timed the call
//	trainyard_worker_kube_api_errors_total{verb,resource,reason}
//	trainyard_workqueue_{depth,adds_total,queue_duration_seconds,work_duration_seconds,
//	    unfinished_work_seconds,longest_running_processor_seconds,retries_total}{name="jobs"}
//	    (internal/controller; the tenant reconciler's queue is name="tenants")
//	trainyard_cluster_heartbeat_age_seconds{cluster}   gauge, at the last sweep (scheduler lease holder only); -1: never
//	trainyard_cluster_state{cluster,state}             gauge, 1 for the state at the last sweep (lease holder only)
//	trainyard_cluster_reachability_changes_total{cluster,state}   counter: UNREACHABLE, or the state when back
//	trainyard_cluster_heartbeat_errors_total           counter: this worker's heartbeats not written
//
// # Not here
//
// Tenant namespaces (the namespace, its job ServiceAccount, quota objects,
// network policy) are provisioned by the tenant reconciler,
// internal/tenantctl, which `trainyard worker` runs in the same process.
// Until a namespace is ready, creates fail with NotFound or the
// ServiceAccount Forbidden above and are retried.
package worker
