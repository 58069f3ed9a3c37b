-- The scheduler (internal/sched, internal/scheduler) replaces per-job
-- admission by workers: one leader decides over every tenant, job and node
-- at once and commits each cycle's decisions in one transaction fenced by
-- its lease epoch. See internal/store/doc.go, "Scheduling".

-- Tenant policies: preemption and queueing strategy.
ALTER TABLE tenants ADD COLUMN scheduling jsonb NOT NULL DEFAULT '{}';

-- Demand is computed from the spec by the scheduler, which caches it per
-- job; no SQL predicate compares resources any more.
DROP INDEX jobs_admission_idx;
DROP INDEX jobs_admitted_idx;
ALTER TABLE jobs
    DROP COLUMN demand_gpu,
    DROP COLUMN demand_cpu_milli,
    DROP COLUMN demand_memory_bytes,
    DROP COLUMN demand_pods,
    -- When the job's pods were first created (status.startTime), for run
    -- time estimates without reading the status.
    ADD COLUMN start_time    timestamptz,
    -- When the job last entered the queue: submission or requeue.
    ADD COLUMN queued_at     timestamptz NOT NULL DEFAULT now(),
    -- A job requeued after its pods stayed unschedulable backs off until then.
    ADD COLUMN not_before    timestamptz,
    -- Set on a running job the scheduler preempts: the pending job of the
    -- same tenant it makes room for, and why (for its status and events).
    ADD COLUMN preempt_for   uuid,
    ADD COLUMN preempt_message text NOT NULL DEFAULT '',
    -- Set on a job requeued by a preemption, until it is admitted again.
    ADD COLUMN preempted_by  uuid,
    -- The wait reason last recorded in the status (a Waiting event is
    -- written when it changes).
    ADD COLUMN wait_reason   text NOT NULL DEFAULT '';

UPDATE jobs SET start_time = (status->>'startTime')::timestamptz, queued_at = create_time;

-- Jobs waiting to be admitted need the scheduler, not a worker: they are
-- not claimable ('infinity') until admitted.
UPDATE jobs SET claim_after = 'infinity', worker_id = NULL, lease_expires_at = NULL
WHERE active AND state = 'QUEUED' AND NOT admitted AND NOT cancel_requested AND NOT deleted;

-- The scheduler's snapshot: every unfinished job.
CREATE INDEX jobs_unfinished_idx ON jobs (tenant_id)
    WHERE active AND NOT deleted AND state IN ('QUEUED', 'STARTING', 'RUNNING', 'RESTARTING');

-- Run time history for start estimates: a tenant's recent successes.
CREATE INDEX jobs_succeeded_idx ON jobs (tenant_id, finish_time DESC)
    WHERE state = 'SUCCEEDED' AND start_time IS NOT NULL;

-- The scheduler lease: one row. epoch increases whenever the lease changes
-- hands (or is taken again after expiring); every write of a cycle checks
-- it under the row's lock.
CREATE TABLE scheduler_lease (
    id         smallint    PRIMARY KEY CHECK (id = 1),
    holder     text,
    epoch      bigint      NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO scheduler_lease (id) VALUES (1);

-- Where each tenant's waiting jobs stand, as the last cycle saw it: one row
-- per tenant (entries by job uid), rewritten only when it changed. The API
-- reads the row of the caller's tenant.
CREATE TABLE tenant_queues (
    tenant_id   text        PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    update_time timestamptz NOT NULL,
    entries     jsonb       NOT NULL
);
