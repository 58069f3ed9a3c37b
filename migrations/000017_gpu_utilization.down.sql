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
