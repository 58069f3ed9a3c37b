DROP INDEX usage_hourly_used_idx;
ALTER TABLE usage_hourly DROP CONSTRAINT usage_hourly_pkey;
ALTER TABLE usage_hourly DROP COLUMN gpu_used_seconds;
ALTER TABLE usage_hourly ADD PRIMARY KEY (tenant_id, hour, creator, labels)
    INCLUDE (gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds);
CREATE OR REPLACE FUNCTION trainyard_webhook_topic(reason text, state text, final_reason text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN reason = 'Queued' AND state = 'QUEUED' THEN 'job.created'
        WHEN reason = 'Admitted' THEN 'job.admitted'
        WHEN reason = 'JobRunning' THEN 'job.running'
        WHEN reason = 'Restarting' THEN 'job.replica_restarted'
        WHEN reason = 'Preempted' THEN 'job.preempted'
        WHEN reason = 'Deleted' OR reason IS DISTINCT FROM final_reason THEN NULL
        WHEN state = 'SUCCEEDED' THEN 'job.succeeded'
        WHEN state = 'FAILED' THEN 'job.failed'
        WHEN state = 'CANCELLED' THEN 'job.cancelled'
    END
$$;
DROP TABLE job_gpu;
DROP TABLE job_gpu_replicas;
