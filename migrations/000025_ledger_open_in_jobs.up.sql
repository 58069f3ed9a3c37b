-- The usage ledger's open span moves into the job's row (issue 44: the
-- ledger may add at most 5 % to the scheduler's commit, and a span row
-- inserted per admission cost 12 %). The scheduler's commit updates the
-- job's row anyway when it admits it; now the same UPDATE writes the
-- span's start and the demand it counts. The worker's save that requeues
-- or ends the job writes the closed span into usage_intervals (start =
-- ledger_since, end = the save's time) and clears these columns in the
-- same statement. usage_intervals holds closed spans only.
--
-- ledger_since: the open span's start (NULL: no open span).
-- ledger_rolled: its time before this is in usage_hourly already (NULL:
--   ledger_since; the rollup advances it, the commit never writes it).
-- ledger_gpus ... ledger_pods: the job's demand as the span counts it
--   (job.Spec.Demand at admission), NULL with no open span.
ALTER TABLE jobs
    ADD COLUMN ledger_since        timestamptz,
    ADD COLUMN ledger_rolled       timestamptz,
    ADD COLUMN ledger_gpus         bigint,
    ADD COLUMN ledger_cpu_millis   bigint,
    ADD COLUMN ledger_memory_bytes bigint,
    ADD COLUMN ledger_pods         bigint;

-- Open spans, for the readers and the rollup.
CREATE INDEX jobs_ledger_open_idx ON jobs (tenant_id) WHERE ledger_since IS NOT NULL;

UPDATE jobs j SET ledger_since = v.start_time, ledger_rolled = v.rolled_to,
                  ledger_gpus = v.gpus, ledger_cpu_millis = v.cpu_millis,
                  ledger_memory_bytes = v.memory_bytes, ledger_pods = v.pods
FROM usage_intervals v
WHERE v.end_time IS NULL AND v.tenant_id = j.tenant_id AND v.job_uid = j.uid;
-- An open span whose job is gone could never be closed: it ends now.
UPDATE usage_intervals v SET end_time = greatest(now(), v.rolled_to)
WHERE v.end_time IS NULL
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.tenant_id = v.tenant_id AND j.uid = v.job_uid);
DELETE FROM usage_intervals WHERE end_time IS NULL;
DROP INDEX usage_intervals_open_idx;
ALTER TABLE usage_intervals ALTER COLUMN end_time SET NOT NULL;
