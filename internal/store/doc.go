// Package store is Trainyard's one storage seam. It keeps jobs, their
// events, tenants, secret metadata, the audit log and the worker queue in
// Postgres, through pgx v5. The API, the scheduler and the workers all
// read and write through it, and wake each other through Postgres's
// NOTIFY.
//
//	 internal/api                internal/scheduler            worker
//	 create, list, cancel,       SchedulerRead,                JobClaim, JobLoad,
//	 delete, watch reads         SchedulerCommit               JobSave (fenced), leases
//	      │                           │                             │
//	      ▼                           ▼                             ▼
//	┌──────────────────────────── store (pgx v5) ────────────────────────────┐
//	│ tenants · jobs · job_events · worker_leases · scheduler_lease · ...    │
//	└───────────────────────────────────┬────────────────────────────────────┘
//	                                    │ NOTIFY, after commit (notifier.go)
//	                                    ▼
//	            Listener ──► Wakeups ──► watchers, claimers, the scheduler
//
// A job's life in the store: the API creates it QUEUED. The scheduler
// admits it (STARTING). A worker claims it and owns it while its lease is
// live. The worker writes it fenced: only while it owns it, and only at the
// version it read. Once it is final, a delete marks it deleted. A worker
// cleans up in Kubernetes, and JobPurge removes the row.
//
// No pgx type leaves the package. Errors come back as ErrNotFound,
// ErrAlreadyExists, ErrFailedPrecondition, ErrConflict and ErrLeaseLost;
// translate is the one place that maps database errors. Queries are named
// noun first (JobCreate, JobClaim, EventListTenant).
//
// # Tables
//
//	tenants               id, quota/labels/scheduling/sharing (JSONB), cohort (from sharing), namespace, state
//	tenant_members        (tenant, kind subject|group, principal) → role
//	jobs                  (tenant, uid) key; spec and status JSONB beside the columns that
//	                      are queried (name, state, labels, seq, worker_id, claim_after, ...),
//	                      preemptor_tenant (a reclaim crosses tenants), admitted_model and
//	                      admitted_before (a dependent's dependencies gate its first admission only)
//	job_events            id in watermark order (below); (tenant, job uid)
//	tenant_event_horizons tenant → the highest of its event ids that retention deleted
//	event_horizon         one row: the same for the whole installation (an older floor)
//	idempotency_keys      (tenant, request_id) → job uid
//	secrets               (tenant, name) → key names; values never reach Postgres
//	audit_records         bigserial id; who, action, resource, details (JSONB); never updated
//	worker_leases         worker_id → expires_at
//	scheduler_lease       one row: holder, epoch, expires_at
//	tenant_queues         tenant → where its waiting jobs stand (JSONB by job uid)
//	usage_intervals       the usage ledger (ledger.go): a job's closed admitted spans, start to end, with its demand (the open one is in the job's row, jobs.ledger_*)
//	usage_hourly          (tenant, UTC hour, creator, labels) → resource-seconds, rolled up from the spans (13 months)
//	usage_daily           the same per UTC day, written with the hours: what a query by day reads
//	queue_samples         (tenant, time) → jobs waiting, their GPUs, the oldest wait; the scheduler's leader, each minute, 35 days (queuehistory.go)
//	capacity_samples      time → the GPUs of the nodes that take pods; one per sample, so also its count
//	webhooks              (tenant, id) → URL, topics, label selector, state; the signing secret lives in Kubernetes
//	webhook_deliveries    the webhook outbox: one row per message per webhook, with the job as the event left it
//	clusters              name → display name, labels, admin_state (the operator's), reachable (the sweep's),
//	                      heartbeat, capacity/usage (JSONB by resource name); "default" made by the migration
//	cluster_nodes         cluster → its agent's nodes (JSONB array of cluster.Node), rewritten when the digest changes
//
// Every table with tenant data has tenant_id. Every query of an API method
// filters on it. So a tenant cannot reach another tenant's rows, even by
// guessing names or uids. Only the worker's and the scheduler's queries
// are cross-tenant, by nature: JobClaim, JobLeaseRenew, JobReleaseAll,
// JobListByKeys, TenantListAll, SchedulerRead, JobSpecs, TenantRunTimes,
// SchedulerCommit, QueuePublish, UsageRollup and UsageHeld; clusters
// hold no tenant data (clusters.go: platform admins' API, agents'
// heartbeats, the sweep, ClusterNodesReady); UsageQuery
// spans tenants only for a platform admin's tenants/-.
//
// # Jobs: the API side
//
// JobCreateMany (BatchCreateJobs, up to 1,000 jobs) is one statement in one
// transaction. Concurrent JobCreates share such statements, each keeping its
// own outcome (createshare.go, shared.go), so under load the commits per job fall.
//
// The statement share-locks each tenant's row (FOR SHARE of an ACTIVE
// tenant), so no job is inserted for a tenant an offboarding just stopped.
// It inserts the idempotency keys, the QUEUED job rows, their first events
// and, for an API caller, their audit records.
//
// A key is inserted ON CONFLICT DO NOTHING, and a job only where its key
// was. So retries of one request queue up behind the first on the key's
// index, and then return its job (created=false), or create it if the first
// rolled back. The API looks keys up first (JobGetByRequestID), so a
// committed retry skips validation. A purge removes the key with the row.
//
// A name is unique among a tenant's live (not deleted) jobs. A batch with a
// taken name is rolled back, and its *BatchError names the items.
//
// Watchers follow jobs by uid (JobGetMany, EventListByJob), deleted ones too.
//
// Cancel and delete lock the row. A QUEUED job that is not yet admitted has
// no Kubernetes objects, so cancel ends it at once. The scheduler admits
// only QUEUED, uncancelled jobs, under the same row lock. Any other
// unfinished job gets cancel_requested, and its worker stops it. Only a
// final job can be deleted: the row is marked deleted (its name is free at
// once) and active, so that a worker cleans up and calls JobPurge.
//
// Suspend and resume (JobSuspend, JobResume; migration 000011) lock the row
// too. A suspended job is SUSPENDED: unadmitted, unowned, unclaimable
// (claim_after 'infinity'), and outside sqlUnfinished, so neither the
// scheduler's snapshot nor TenantUsage sees it and no TTL applies (TTLs
// start at a final state). Suspending a QUEUED, unadmitted job is
// immediate; any other gets suspend_requested, and its worker stops the
// pods and saves it SUSPENDED with a Requeue. Resume makes it QUEUED and
// waiting again (ChannelSchedule). Cancel ends a SUSPENDED job at once.
//
// # Jobs: the worker side (claim, lease, fence)
//
// A worker claims jobs, renews its lease and writes its jobs fenced. The
// lease belongs to the worker: one row of worker_leases, however many jobs
// it owns. A job is owned while its worker_id names a worker with a live
// lease. A job row, as the queue sees it:
//
//	          JobCreate: QUEUED, claim_after = 'infinity'
//	                      │   (the scheduler's, not a worker's)
//	                      │ SchedulerCommit admits: claim_after = '-infinity'
//	                      ▼
//	┌──────────►  WAITING: active, no live lease  ◄──────────┐
//	│             claimable once claim_after ≤ now()         │ lease expired,
//	│                     │                                  │ JobRelease;
//	│                     │ JobClaim                         │ JobPark or JobSave{Park} of a
//	│                     ▼                                  │ finished job: claim_after = its TTL
//	│           OWNED: active, worker_id=W, live lease ──────┘
//	│             JobLeaseExtend/Renew extend the lease;
//	│             JobLoad → JobSave (fenced);        JobSave{Requeue} (preempted,
//	│             JobPurge of a deleted job:  ─────► unschedulable): QUEUED, unadmitted,
//	│             the row is gone                    unowned, claim_after = 'infinity'
//	│                                                (back to the scheduler)
//	│                     │
//	│                     │ JobSave{Done}; cancel of a QUEUED,
//	│                     │ unadmitted job
//	│                     ▼
//	└─ JobDelete ──  IDLE: inactive (final, nothing left to do)
//	   (claim_after = '-infinity', also of a parked job)
//
// JobClaim extends the claimer's lease, then takes jobs in one statement:
// two index range scans, each stopped by its LIMIT and FOR UPDATE SKIP
// LOCKED. One takes the jobs of workers whose lease expired
// (jobs_worker_idx). The other takes unowned jobs whose claim_after has
// come (jobs_claim_idx on (cluster, claim_after, seq)), so admitted jobs
// ('-infinity') go in submission order and unadmitted ones ('infinity')
// are never reached. Both take only jobs of the claimer's cluster
// (WithCluster; the cluster the scheduler admitted the job to, where its
// pods are): a worker never touches another cluster's pods. Owned jobs are in neither scan: a claim costs the same
// with ten thousand jobs running as with none. Concurrent claimers skip
// each other's locked rows.
//
// Leases run on the database clock (now()), so workers need not agree on
// the time. A takeover holds a share lock on the dead worker's lease row,
// and JobLeaseRenew updates that row, so the two exclude each other. The
// renewal then lists what its worker still owns, in a statement of its
// own: a job taken over is not in it. A lease that had expired starts again
// with the jobs nobody took over meanwhile.
//
// JobLeaseExtend extends a live lease without listing jobs: a lease that
// never ran out lost none. It judges this once it holds the row, so after
// waiting for a takeover it finds the lease run out, and the worker lists
// what is left with JobLeaseRenew. JobReleaseAll (shutdown) drops the
// lease with the jobs.
//
// Every write of a job bumps its version (lease renewal aside). JobSave,
// JobPark and JobPurge succeed only while the caller owns the job under a
// live lease; else ErrLeaseLost: stop acting on it. JobSave and JobPark
// also need the job still at the version the caller read; else
// ErrConflict: re-read and decide again. So a worker that paused past its
// lease cannot overwrite its successor. And a user's cancel between a
// worker's read and write is not lost: the write fails, and the re-read
// sees it.
//
// Concurrent JobSaves share statements as JobCreates do (shared.go); the
// fence is each row's own. A pass that acts without saving (such as a just
// admitted job's first, which creates its pods) relies on the lease its
// claim or renewal just extended.
//
// # Scheduling
//
// The scheduler (internal/scheduler) admits jobs. Exactly one process does
// at a time: the holder of the single scheduler_lease row.
//
//	SchedulerLeaseAcquire   UPDATE ... WHERE holder = me OR expired; taking it
//	                        (or taking it again after it expired) bumps epoch
//	SchedulerCommit,        first SELECT ... FOR UPDATE of the lease row: still
//	QueuePublish            (holder, epoch) and live, else ErrLeaseLost; the lock
//	                        is held to commit, so nobody takes over mid-write
//
// A cycle reads with SchedulerRead, in one batch: the active tenants, the
// scalar columns of the unfinished jobs (jobs_unfinished_idx), and the specs
// of jobs submitted since its last read. It reads a job's spec once;
// JobSpecs fetches one it missed.
//
// A cycle writes everything it decided in one SchedulerCommit: one
// transaction in two round trips (Store.pipelined). It writes:
//
//   - admissions: admitted, claim_after '-infinity', and the status
//     job.Admit makes (STARTING, a start time, an Admitted event). Only jobs
//     still QUEUED, unadmitted and uncancelled: a cancel since the snapshot wins.
//   - preemptions: preempt_for and preempt_message on running jobs not
//     already stopping, a Preempting event, a NOTIFY to the owner.
//   - wait reasons that changed: the Admitted condition and a Waiting event.
//
// An admission also opens the job's span in the usage ledger, in the same
// statement and row (jobs.ledger_since and the demand; ledger.go);
// JobSave's requeue or end closes it (a usage_intervals row).
//
// Rows are locked before their events are written, as every writer does.
// Admission is a flag, so a second leader's or a replayed admission is a
// no-op. No job is dispatched twice.
//
// tenant_queues holds, per tenant, where its waiting jobs stood at the last
// published cycle: positions, reason, blocker, estimated start. The API
// reads the caller's tenant's row only. It is rewritten when it changes.
//
//   - dependency failures (deps.go): a pending job whose dependency can
//     never be met ends FAILED or CANCELLED (DependencyFailed), inactive,
//     as a cancel of a queued job does; and a job admitted with
//     dependencies gets their results (read unlocked in the first round
//     trip) in its status.
//
// ChannelSchedule wakes the scheduler when a job starts waiting (created,
// or requeued by JobSave). ChannelFreed wakes it when something changed that
// matters only to waiting jobs: a job finished, entered RUNNING (a
// dependent may wait for it to start), was deleted, or was cancelled while
// queued, or a tenant's quota or policy changed. A scheduler
// whose last cycle found nothing waiting ignores ChannelFreed.
//
// # Events
//
// An event id is (the writing transaction's xid8 << 20) | its ordinal in
// that transaction (trainyard_event_id, migration 000005). Ids order events
// by transaction, then in write order. They are not in commit order: a
// transaction that took its id first may commit last. A reader resuming
// "after id N" could then miss a smaller id that commits later.
//
// So readers deliver only ids below the watermark,
// pg_snapshot_xmin(pg_current_snapshot()) << 20 (trainyard_event_watermark),
// as transactional-outbox readers do. Every transaction below it has ended,
// so nothing new can appear below it. "After id N" therefore stays a safe
// resume point for the public afterEventId cursor (EventList,
// EventListByJob, EventListTenant; EventLastID is the newest id below it).
// No writer locks anything for events.
//
//	writer A:  xid 100, event 100<<20 ... still open
//	writer B:  xid 101, event 101<<20, commits     watermark = 100<<20:
//	reader:    after N  →  nothing past 100<<20     B's event waits for A
//	writer A:  commits                             watermark passes both:
//	reader:    after N  →  A's event, then B's     in id order, none missed
//
// An event above the watermark is held back until the older transactions
// end. A read that meets one waits for them, up to holdBackWait (500 ms),
// re-reading after 1, 2, 4 ... 20 ms. So a writer reads its own event at
// once, and so does a watcher woken by its NOTIFY.
//
// Any open writing transaction of the Postgres cluster holds the watermark
// back: delivery waits, not durability. Open sets
// idle_in_transaction_session_timeout (1 min), so a client stopped
// mid-transaction is cut off.
//
// Deletion is the other way an event can go missing for a resuming reader.
// Retention (EventDeleteBefore) raises the horizon of each tenant whose
// events it deletes, in the same statement. The watches' reads fetch the
// tenant's horizon with their events. They fail with EventsExpiredError
// when it is above their position, and the API refuses the watch. The
// horizon is per tenant, so a quiet tenant keeps its position. A purge
// deletes a job's events but its Deleted one (a tombstone).
//
// Two transactions that write events of one job both update its row first,
// so a job's events are in commit order. One exception: the scheduler's
// commit takes its xid from its lease row, so its Waiting or Preempting
// event may sort before a worker's that committed first. Events carry their
// own create_time.
//
// # Notifications
//
// A NOTIFY inside the writing transaction costs its commit a turn on a lock
// that every notifying commit of the Postgres cluster takes. Under load that
// serialized commits (pgbench: 11,495 INSERTs/s, 4,035/s with a pg_notify in
// each). So a transaction asks for its NOTIFYs (tx.notify), and inTx hands
// them to the notifier once it has committed (notifier.go). One goroutine
// sends whatever is pending in one statement, folding what arrives meanwhile
// into the next (identical ones once). A rolled-back transaction sends
// nothing. There is no trigger: a trigger fires per row and floods listeners
// under load.
//
//	ChannelJobs       "<tenant>/<uid>": a job needs a worker; "<tenant>/@<cluster>": jobs admitted, that cluster's claimers wake
//	ChannelEvents     tenant id: new events, for watchers; an experiment created, for its controller
//	ChannelTenants    tenant id: the tenant or its secrets changed
//	ChannelSchedule   tenant id: a job waits for the scheduler
//	ChannelFreed      tenant id: capacity or quota freed for waiting jobs
//
// A notification is a hint, never the only signal. A Listener loses what is
// sent while it reconnects, and a full buffer coalesces payloads. So readers
// re-read Postgres when woken, re-poll on reconnect, and poll on a timer
// anyway. Wakeups fans a channel out by tenant.
//
// # Webhooks: the outbox
//
// A statement-level trigger on job_events (migration 000013) inserts, in
// the writing transaction, one webhook_deliveries row per new event and
// active webhook of its tenant that subscribes to its topic
// (trainyard_webhook_topic: from the event's reason and state) and whose
// label selector the job's labels contain. So every writer of events (the
// API, the scheduler, the workers, and writers yet to come) fills the
// outbox without knowing it, a rolled-back write leaves nothing, and a
// committed one cannot lose its message. The row keeps the job's row as
// that statement left it (to_jsonb), so a late delivery still says what
// the event saw. This trigger inserts rows and notifies nobody: the
// NOTIFYs are the writers' own, after commit, as above. A tenant without
// webhooks costs each statement one index probe. TenantUpdate queues
// tenant.quota_changed the same way, by hand.
//
// Deliverers (internal/webhook/deliver) claim with DeliveryClaim: due
// PENDING rows, each the first PENDING row of its (webhook, ordering key
// = job uid), no more of a webhook than its receiver has room for at the
// claimer (read per webhook from its own index range, so a full or down
// receiver's backlog costs nothing), FOR UPDATE SKIP LOCKED, leased to the claimer for a while
// (no transaction stays open while a request is in flight: that would
// hold back the events' watermark). A job's rows are inserted in commit
// order (every writer locks the job's row first), so "first pending"
// is the job's order. DeliveryFinish writes the attempt only while the
// claimer still holds the lease: SUCCEEDED; PENDING again after a backoff;
// FAILED once the next try would be past 24 h; 410 disables the webhook.
// A deliverer that dies leaves its lease to run out, and the row is sent
// again with the same message id.
//
// # The audit log
//
// A mutation by an API caller inserts its audit record in its own
// transaction (auditInsert, or auditQueue in a batch). The context carries
// the caller as an audit.Actor, put there by the API's interceptor. The
// change and its record commit or roll back together. A mutation that
// changes nothing (a replayed create, a cancel of a finished job) records
// nothing. Workers and the scheduler carry no Actor, so their changes are
// not audited. A trigger refuses UPDATE of audit_records. AuditDeleteBefore
// removes whole old rows in batches, for retention. AuditList pages by id,
// newest first.
//
// # Pagination
//
// JobList is keyset pagination on seq, never OFFSET: "seq < cursor ORDER BY
// seq DESC LIMIT n+1". Two partial indexes (NOT deleted) serve it:
// jobs_tenant_seq_idx (tenant, seq DESC) and jobs_tenant_state_seq_idx
// (tenant, state, seq DESC). Every page is one ordered index range scan
// stopped by LIMIT, as cheap at a million rows as at a thousand
// (TestJobListExplainUsesIndexes checks the plans; BenchmarkJobList
// measures). Several states become one limited branch per state under a
// Merge Append, not a Sort.
//
// Rows inserted while a client pages get larger seqs, so they never shift a
// page. Each row is returned at most once, and every row present at the
// first page is returned. TenantList pages by id the same way.
package store
