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
//	                   active, worker_id, lease_expires_at, claim_after, version,
//	                   times; the scheduler's queued_at, start_time, not_before,
//	                   preempt_for, preempt_message, preempted_by, wait_reason
//	job_events         bigserial id; (tenant, job uid) → jobs, cascade on purge
//	idempotency_keys   (tenant, request_id) → job uid
//	secrets            (tenant, name) → key names; values never reach Postgres
//	audit_records      bigserial id; tenant, who (subject, groups, issuer, address,
//	                   request id), action, resource, details (JSONB); never updated
//	scheduler_lease    one row: holder, epoch, expires_at
//	tenant_queues      tenant → where its waiting jobs stand (JSONB by job uid)
//
// Every table that holds tenant data has tenant_id, and every query of an
// API method filters on it: a tenant can not read, cancel, delete or list
// another tenant's rows even by guessing names or uids. The exceptions are
// the worker's queue queries (JobClaim, JobLeaseRenew, JobReleaseAll,
// JobListByKeys, TenantListAll) and the scheduler's (SchedulerJobs,
// SchedulerTenants, JobSpecs, TenantRunTimes, SchedulerCommit,
// QueuePublish), which are cross-tenant by nature.
//
// # Jobs: API side
//
// JobCreate is one transaction: a share lock on the tenant row (FOR SHARE,
// which waits for a TenantUpdate — an offboarding — in flight and then sees
// its state, so no job is inserted for a tenant that has just stopped being
// ACTIVE), the idempotency key (when the request has an id), the job row
// (QUEUED, with a Queued condition), its first event and the NOTIFYs. The
// key is inserted with ON CONFLICT DO NOTHING, so concurrent retries of one
// request queue up on the key's unique index behind the first; once it
// commits they find the key and return its job (created=false); if it rolls
// back, the next one creates the job. The API looks the key up first
// (JobGetByRequestID), so a retry of a committed create needs no validation;
// a key whose job was deleted is ErrNotFound, and a key goes with its job's
// row when the job is purged. A name is unique among a tenant's live (not
// deleted) jobs; watchers therefore follow jobs by uid (JobGetMany,
// EventListByJob), which also reach deleted jobs until they are purged.
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
// A worker claims jobs, renews their leases, and writes them fenced. A job
// row, as the queue sees it:
//
//	          JobCreate: QUEUED, claim_after = 'infinity'
//	                      │   (the scheduler's, not a worker's)
//	                      │ SchedulerCommit admits: claim_after = '-infinity'
//	                      ▼
//	┌──────────►  WAITING: active, no live lease  ◄──────────┐
//	│             claimable once claim_after ≤ now()         │ lease expired,
//	│                     │                                  │ JobRelease;
//	│                     │ JobClaim                         │ JobPark of a finished
//	│                     ▼                                  │ job: claim_after = its TTL
//	│           OWNED: active, worker_id=W, live lease ──────┘
//	│             JobLeaseRenew extends the lease;
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
// JobClaim is one statement over two index range scans, each stopped by
// its LIMIT and FOR UPDATE SKIP LOCKED: owned jobs whose lease expired
// (jobs_lease_expiry_idx, oldest expiry first), then unowned jobs whose
// claim_after has come (jobs_claim_idx on (claim_after, seq)). Admitted
// jobs carry '-infinity', so they are taken in submission order; jobs
// waiting for admission carry 'infinity' and are never reached. Neither
// index holds owned jobs under a live lease, so a claim costs the same with
// ten thousand jobs running or waiting as with none. Concurrent claimers skip
// each other's locked rows and never get the same job.
//
// Leases are on the database clock (now()), so workers need not agree on
// time. A lease that expired is gone: JobLeaseRenew only extends live ones,
// and the job can be claimed by anyone, its former owner included.
//
// Every write of a job bumps its version (lease renewal excepted).
// JobSave, JobPark and JobPurge succeed only while the caller owns the
// job under a live lease (else ErrLeaseLost: stop acting on it) and, for
// JobSave and JobPark, while the job is still at the version the
// caller read (else ErrConflict: re-read and decide again). So a worker
// that paused past its lease can not overwrite its successor, and a user's
// cancel or delete that lands between a worker's read and write is never
// lost: the write fails and the worker sees the request on its re-read.
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
// A cycle reads SchedulerTenants and SchedulerJobs (scalar columns of the
// unfinished jobs only, jobs_unfinished_idx; specs through JobSpecs once
// per job) and writes everything it decided in one SchedulerCommit:
// admissions (admitted, claim_after '-infinity'; only jobs still QUEUED,
// unadmitted and uncancelled: a cancel that committed since the snapshot
// wins), preemptions (preempt_for and preempt_message on running jobs not
// already stopping, a Preempting event, a NOTIFY to the owner), and wait
// reasons that changed (the Admitted condition and a Waiting event, so
// that events are written only when the reason changes). Rows are locked
// before any tenant's events lock, as every other writer does. Admission
// is a flag: a second leader's, or a replayed, admission of a job is a
// no-op, and no job is dispatched twice.
//
// tenant_queues holds, per tenant, where its waiting jobs stood at the last
// published cycle (positions, reason, blocker, estimated start): one row
// the API reads for the caller's tenant only, rewritten when it changed.
//
// The scheduler is woken by ChannelSchedule: a job created, cancelled
// while queued, finished or requeued (JobSave), a tenant changed.
//
// # Events
//
// job_events ids come from one sequence, increasing across all jobs. A
// sequence alone hands out ids in insert order, not commit order, so a
// reader resuming "after id N" could miss a smaller id that commits later.
// Writers therefore take a per-tenant advisory transaction lock before their
// events get ids and hold it to commit: within a tenant, ids are visible in
// order, and EventList / EventListTenant "after id N" is a safe resume
// point for watches. The cost is that one tenant's event writes commit one
// at a time; they are short.
//
// # Notifications
//
// The application sends NOTIFY inside the writing transaction (pg_notify),
// so Postgres delivers it only on commit and drops it on rollback, and folds
// identical ones of one transaction into one. There is no trigger: a
// trigger fires per row, and under load floods the listeners (river removed
// theirs for this reason). Channels: ChannelJobs ("<tenant>/<uid>" — a job
// needs a worker's attention), ChannelEvents (tenant id — new events for
// watchers), ChannelTenants (tenant id — tenant or secrets changed),
// ChannelSchedule (tenant id — the scheduler has something to decide).
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
