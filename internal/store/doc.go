// Package store is Trainyard's one storage seam: jobs, their events,
// tenants, secret metadata and the worker queue, in Postgres through pgx v5.
// No pgx type leaves the package; errors come back as ErrNotFound,
// ErrAlreadyExists, ErrFailedPrecondition, ErrConflict and ErrLeaseLost
// (translate is the one place where database errors are mapped). Queries are
// named noun-first (JobCreate, JobClaim, EventListTenant).
//
// # Tables
//
//	tenants            id, quota/labels/scheduling (JSONB), namespace, state
//	tenant_members     (tenant, kind subject|group, principal) → role; for "which tenants may I see"
//	jobs               (tenant, uid) primary key; spec and status JSONB beside the
//	                   columns that are queried: name, state, labels (GIN), seq,
//	                   priority, creator, cancel_requested, deleted, admitted,
//	                   active, worker_id, claim_after, version,
//	                   times; the scheduler's queued_at, start_time, not_before,
//	                   preempt_for, preempt_message, preempted_by, wait_reason
//	job_events         id in watermark order (below); (tenant, job uid); a purge
//	                   deletes a job's events but its Deleted one (a tombstone)
//	tenant_event_horizons tenant → the highest of its event ids retention deleted;
//	                   a watch of the tenant from below it is refused (EventHorizon)
//	event_horizon      one row: the same for the whole installation, from before
//	                   horizons were kept per tenant (a floor under each tenant's)
//	idempotency_keys   (tenant, request_id) → job uid
//	secrets            (tenant, name) → key names; values never reach Postgres
//	audit_records      bigserial id; tenant, who (subject, groups, issuer, address,
//	                   request id), action, resource, details (JSONB); never updated
//	worker_leases      worker_id → expires_at: a job is owned while its worker's lease is live
//	scheduler_lease    one row: holder, epoch, expires_at
//	tenant_queues      tenant → where its waiting jobs stand (JSONB by job uid)
//
// Every table that holds tenant data has tenant_id, and every query of an
// API method filters on it: a tenant can not read, cancel, delete or list
// another tenant's rows even by guessing names or uids. The exceptions are
// the worker's queue queries (JobClaim, JobLeaseRenew, JobReleaseAll,
// JobListByKeys, TenantListAll) and the scheduler's (SchedulerRead,
// JobSpecs, TenantRunTimes, SchedulerCommit, QueuePublish), which are
// cross-tenant by nature.
//
// # Jobs: API side
//
// JobCreateMany (BatchCreateJobs, up to 1,000 jobs) is one statement, so
// one round trip and one transaction; concurrent JobCreates share such
// statements, of any tenants and callers, each keeping its own outcome
// (createshare.go, shared.go: most of a create's cost is per statement and per
// commit, so under load the commits per job fall). The statement takes a share lock on
// each tenant's row (FOR SHARE of an ACTIVE tenant, which waits for a TenantUpdate
// — an offboarding — in flight and then sees its state, so no job is
// inserted for a tenant that has just stopped being ACTIVE), the
// idempotency keys of the requests that have ids, the job rows (QUEUED,
// with a Queued condition), their first events and, for an API caller,
// their audit records. Keys are inserted ON CONFLICT DO NOTHING and a job
// only where its key was (or it has none), so concurrent retries of one
// request queue up on the key's unique index behind the first; once it
// commits they find the key and return its job (created=false); if it
// rolls back, the next one creates the job. The API looks the keys up first
// (JobGetByRequestID, JobGetByRequestIDs), so a retry of a committed create
// needs no validation; a key whose job was deleted is ErrNotFound, and a
// key goes with its job's row when the job is purged. A name is unique
// among a tenant's live (not deleted) jobs; a batch with a taken name is
// rolled back and the error (*BatchError) names the items. Watchers follow
// jobs by uid (JobGetMany, EventListByJob), which also reach deleted jobs
// until they are purged. The wake-ups for the scheduler and the watchers
// leave after commit (below, "Notifications").
//
// Cancel and delete lock the row. A QUEUED job that is not admitted has no
// Kubernetes objects yet (it is not claimable; the scheduler's commit
// admits only QUEUED, uncancelled jobs, under the same row lock), so cancel
// ends it at once and makes it inactive; any
// other unfinished job gets cancel_requested and its worker stops it. Only
// final jobs can be deleted: the row is marked deleted (the name is free at
// once) and active, so that a worker removes what is left in Kubernetes and
// then calls JobPurge.
//
// # Jobs: worker side — claim, lease, fence
//
// A worker claims jobs, renews its lease, and writes its jobs fenced. The
// lease is the worker's, one row of worker_leases however many jobs it
// owns: a job is owned while its worker_id names a worker whose lease is
// live. A job row, as the queue sees it:
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
// JobClaim extends the claimer's lease, then takes jobs in one statement
// over two index range scans, each stopped by its LIMIT and FOR UPDATE SKIP
// LOCKED: the jobs of workers whose lease expired (through the few expired
// lease rows and jobs_worker_idx), then unowned jobs
// whose claim_after has come (jobs_claim_idx on (claim_after, seq)).
// Admitted jobs carry '-infinity', so they are taken in submission order;
// jobs waiting for admission carry 'infinity' and are never reached. Owned
// jobs under a live lease are in neither scan, so a claim costs the same
// with ten thousand jobs running or waiting as with none. Concurrent
// claimers skip each other's locked rows and never get the same job.
//
// Leases are on the database clock (now()), so workers need not agree on
// time. A takeover holds a share lock on the dead worker's lease row and
// JobLeaseRenew updates it, so the two exclude each other; the renewal
// then reads what its worker still owns in a statement of its own, and a
// job taken over is not in it. A lease that had expired is started again,
// with the jobs nobody took over meanwhile (nobody else can have written
// them). JobLeaseExtend extends a lease that is still live and says so,
// without listing the jobs: a lease that never ran out lost none (a
// takeover needs it run out). It judges that once it holds the row, so a
// renewal that waited for a takeover finds the lease run out and the
// worker lists what is left with JobLeaseRenew. JobReleaseAll (shutdown)
// drops the lease with the jobs, and claims forget the leases of workers
// gone for an hour that own nothing.

// Every write of a job bumps its version (lease renewal excepted).
// JobSave, JobPark and JobPurge succeed only while the caller owns the
// job under a live lease (else ErrLeaseLost: stop acting on it) and, for
// JobSave and JobPark, while the job is still at the version the
// caller read (else ErrConflict: re-read and decide again). So a worker
// that paused past its lease can not overwrite its successor, and a user's
// cancel or delete that lands between a worker's read and write is never
// lost: the write fails and the worker sees the request on its re-read.
// Concurrent JobSaves share statements as JobCreates do (shared.go): a
// claim hands a worker's reconcile goroutines many jobs at once; the fence
// is each row's own. A job just admitted is already STARTING (the
// scheduler's commit wrote it), so its first pass creates its pods without
// a save: its worker acts then on the strength of the lease its claim just
// renewed, as every pass that acts without saving does.
//
// # Scheduling
//
// The scheduler (internal/scheduler) admits jobs; exactly one process does
// at a time, the holder of the single scheduler_lease row:
//
//	SchedulerLeaseAcquire   UPDATE ... WHERE holder = me OR expired: taking it
//	                        (or taking it again after it expired) bumps epoch
//	SchedulerCommit,        first SELECT ... FOR UPDATE of the lease row: it must
//	QueuePublish            still be (holder, epoch) and live, else ErrLeaseLost;
//	                        the lock is held to commit, so nobody takes the lease
//	                        over while a cycle writes
//
// A cycle reads with SchedulerRead, one batch: the active tenants and
// scalar columns of the unfinished jobs only (jobs_unfinished_idx), with
// the specs of the jobs submitted since its last read (a job's spec once;
// JobSpecs for one missed). It writes everything it decided in one
// SchedulerCommit, a transaction in two round trips (Store.pipelined: the
// lease's and the jobs' rows locked and read, then the writes and COMMIT):
// admissions (admitted, claim_after '-infinity', and the status job.Admit
// makes of the job: STARTING, its start time, an Admitted event; only jobs
// still QUEUED, unadmitted and uncancelled: a cancel that committed since
// the snapshot wins), preemptions (preempt_for and preempt_message on running jobs not
// already stopping, a Preempting event, a NOTIFY to the owner), and wait
// reasons that changed (the Admitted condition and a Waiting event, so
// that events are written only when the reason changes). Rows are locked
// before their events are written, as every other writer does. Admission
// is a flag: a second leader's, or a replayed, admission of a job is a
// no-op, and no job is dispatched twice.
//
// tenant_queues holds, per tenant, where its waiting jobs stood at the last
// published cycle (positions, reason, blocker, estimated start): one row
// the API reads for the caller's tenant only, rewritten when it changed.
//
// The scheduler is woken by ChannelSchedule when a job starts waiting
// (created, or requeued by JobSave), and by ChannelFreed when something
// changed that matters only to jobs already waiting (a job finished or was
// cancelled while queued, a tenant's quota or policy changed): a scheduler
// whose last cycle found nothing waiting ignores ChannelFreed.
//
// # Events
//
// An event id is (writing transaction's xid8 << 20) | its ordinal within
// that transaction (trainyard_event_id, migration 000005): ids order events
// by transaction, then in write order, but they are not handed out in
// commit order — a transaction that took its id first may commit last. A
// reader resuming "after id N" could then miss a smaller id that commits
// after it read N. Until issue 11 writers took a per-tenant advisory lock
// from id assignment to commit; it made one tenant's creates commit one at
// a time (8 clients of one tenant: 0.11x pgbench's INSERT rate). Now no
// writer locks anything for events; readers deliver only ids below the
// watermark, pg_snapshot_xmin(pg_current_snapshot()) << 20
// (trainyard_event_watermark), as transactional-outbox readers do: every
// transaction below it has ended, so nothing can still appear below it,
// and "after id N" stays a safe resume point for the public afterEventId
// cursor (EventList, EventListByJob, EventListTenant; EventLastID is the
// newest id below it). An event that committed above the watermark is held
// back until the older transactions end; a read that meets one waits for
// them (up to holdBackWait, 500 ms, re-reading after 1, 2, 4 ... 20 ms), so
// that whoever just wrote an event reads it and a watcher woken by its
// NOTIFY delivers it at once. The other way an event can go missing for a
// resuming reader is deletion: retention (EventDeleteBefore) raises the
// horizon of each tenant whose events it deletes, in the statement that
// deletes; the watches' reads (EventListTenant, EventListByJob) read the
// tenant's horizon with their events and fail with EventsExpiredError when
// it is above their position, and the API refuses the watch; a purge
// deletes a job's events but its Deleted one. Per tenant, so that a
// tenant quiet for longer than the retention age keeps its position.
//
//	writer A:  xid 100, event 100<<20 ... still open
//	writer B:  xid 101, event 101<<20, commits     watermark = 100<<20:
//	reader:    after N  →  nothing past 100<<20     B's event waits for A
//	writer A:  commits                             watermark passes both:
//	reader:    after N  →  A's event, then B's     in id order, none missed
//
// What holds the watermark back is any transaction with an xid (one that
// wrote something) of the whole Postgres cluster, also of other databases,
// while it stays open: delivery, not durability, waits for it. Trainyard's
// own transactions are short, and Open sets
// idle_in_transaction_session_timeout (1 min unless the URL says otherwise)
// so that a client stopped mid-transaction (SIGSTOP, a long GC pause) is
// cut off. Two transactions that write events of one job lock its row
// first (each updates it), so a job's events are in commit order, except
// when the scheduler's commit, whose xid comes from its lease row, waited on
// the row: then its Waiting or Preempting event may sort before a worker's
// that committed first. Events carry their own create_time.
//
// # Notifications
//
// A NOTIFY inside the writing transaction costs its commit a turn on a lock
// that every notifying commit of the Postgres cluster takes, which
// serialized commits under load (pgbench: 11,495 INSERTs/s, 4,035/s with a
// pg_notify in each). So a transaction asks for its NOTIFYs (tx.notify) and
// inTx hands them, once it has committed, to the Store's notifier
// (notifier.go): one goroutine sends whatever is pending in one statement,
// and what arrives while a send is in flight is folded into the next one
// (identical ones once). Nothing is sent for a transaction that rolled
// back. There is no trigger: a trigger fires per row, and under load floods
// the listeners (river removed theirs for this reason). Channels:
// ChannelJobs ("<tenant>/<uid>" — a job needs a worker's attention;
// "<tenant>/" — the tenant's jobs were admitted, claimers wake up),
// ChannelEvents (tenant id — new events for watchers), ChannelTenants
// (tenant id — tenant or secrets changed), ChannelSchedule (tenant id — a
// job waits for the scheduler), ChannelFreed (tenant id — capacity or quota
// freed for waiting jobs).
//
// A notification is a wake-up hint, never the only signal: a Listener loses
// whatever is sent while it reconnects, and a full subscriber buffer drops
// (coalesces) payloads. Readers re-read Postgres when woken, re-poll in
// their OnReconnect hook, and poll on a jittered timer anyway.
//
// # The audit log
//
// A mutation made by an API caller — the context carries an audit.Actor,
// which the API's interceptor puts there — inserts its audit record in its
// own transaction (auditInsert, or auditQueue inside a batch): the change
// and its record commit or roll back together, and a mutation that changes
// nothing (a create replayed by request id, a cancel of a finished job, an
// update to the same values) records nothing. Workers and the scheduler
// carry no Actor: their changes are not the audit log's. A trigger refuses
// UPDATE of audit_records; AuditDeleteBefore removes whole old rows in
// batches, for retention. AuditList pages by id, newest first.
//
// # Pagination
//
// JobList is keyset pagination on seq (never OFFSET): "seq < cursor ORDER
// BY seq DESC LIMIT n+1". jobs_tenant_seq_idx (tenant, seq DESC) and
// jobs_tenant_state_seq_idx (tenant, state, seq DESC), both partial on NOT
// deleted, make every page one ordered index range scan stopped by LIMIT,
// the same cost at a thousand rows or a million (TestJobListExplainUsesIndexes
// checks the plans; BenchmarkJobList measures). Several states become one
// ordered, limited branch per state under a Merge Append, not a Sort. Rows
// inserted while a client pages get larger seqs and never shift a page: each
// row is returned at most once, and every row present at the first page is
// returned. TenantList pages by id the same way.
package store
