DROP TABLE tenant_queues;
DROP TABLE scheduler_lease;
DROP INDEX jobs_succeeded_idx;
DROP INDEX jobs_unfinished_idx;
UPDATE jobs SET claim_after = '-infinity' WHERE claim_after = 'infinity';
ALTER TABLE jobs
    DROP COLUMN wait_reason,
    DROP COLUMN preempted_by,
    DROP COLUMN preempt_message,
    DROP COLUMN preempt_for,
    DROP COLUMN not_before,
    DROP COLUMN queued_at,
    DROP COLUMN start_time,
    ADD COLUMN demand_gpu          bigint NOT NULL DEFAULT 0,
    ADD COLUMN demand_cpu_milli    bigint NOT NULL DEFAULT 0,
    ADD COLUMN demand_memory_bytes bigint NOT NULL DEFAULT 0,
    ADD COLUMN demand_pods         bigint NOT NULL DEFAULT 0;
CREATE INDEX jobs_admitted_idx ON jobs (tenant_id)
    WHERE admitted AND NOT deleted AND state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED');
CREATE INDEX jobs_admission_idx ON jobs (tenant_id, (-priority), seq)
    WHERE active AND NOT admitted AND state = 'QUEUED';
ALTER TABLE tenants DROP COLUMN scheduling;
