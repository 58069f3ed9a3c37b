ALTER TABLE usage_intervals ALTER COLUMN end_time DROP NOT NULL;
CREATE UNIQUE INDEX usage_intervals_open_idx ON usage_intervals (tenant_id, job_uid) WHERE end_time IS NULL;
INSERT INTO usage_intervals (tenant_id, job_uid, creator, labels, gpus, cpu_millis, memory_bytes, pods, start_time, rolled_to)
SELECT tenant_id, uid, creator, labels, ledger_gpus, ledger_cpu_millis, ledger_memory_bytes, ledger_pods,
       ledger_since, coalesce(ledger_rolled, ledger_since)
FROM jobs WHERE ledger_since IS NOT NULL;
DROP INDEX jobs_ledger_open_idx;
ALTER TABLE jobs
    DROP COLUMN ledger_since,
    DROP COLUMN ledger_rolled,
    DROP COLUMN ledger_gpus,
    DROP COLUMN ledger_cpu_millis,
    DROP COLUMN ledger_memory_bytes,
    DROP COLUMN ledger_pods;
