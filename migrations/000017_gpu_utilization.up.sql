-- GPU utilisation per job (issue 44): what the NVIDIA DCGM exporter
-- measured on a job's GPUs, read from Prometheus by the process holding
-- the scheduler lease (internal/gpuutil) and kept here, so that the
-- figures outlive Prometheus's retention and the job's pods.
--
-- job_gpu_replicas: one row per replica (worker-0, chief-0, ...) with
-- GPU samples, updated in place. The figures are sums, so that each poll
-- adds the samples of its window (sampled_to, below) and nothing is
-- counted twice:
--   util_sum / samples          mean GPU utilisation (percent)
--   util_hist                   samples per whole percent 0..100 (DCGM's
--                               DCGM_FI_DEV_GPU_UTIL is an integer
--                               percent): the p95 is exact
--   fb_sum / fb_samples, fb_max framebuffer memory used (MiB)
--   gpu_uuids                   the GPUs seen (DCGM's UUID label)
--   last_busy                   the last sample at or above the tenant's
--                               idle threshold (the idle rule's clock)
CREATE TABLE job_gpu_replicas (
    tenant_id    text             NOT NULL,
    job_uid      uuid             NOT NULL,
    replica      text             NOT NULL,
    gpu_uuids    text[]           NOT NULL DEFAULT '{}',
    samples      bigint           NOT NULL DEFAULT 0,
    util_sum     double precision NOT NULL DEFAULT 0,
    util_hist    bigint[]         NOT NULL,
    fb_samples   bigint           NOT NULL DEFAULT 0,
    fb_sum       double precision NOT NULL DEFAULT 0,
    fb_max       double precision NOT NULL DEFAULT 0,
    first_sample timestamptz,
    last_sample  timestamptz,
    last_busy    timestamptz,
    update_time  timestamptz      NOT NULL,
    PRIMARY KEY (tenant_id, job_uid, replica),
    FOREIGN KEY (tenant_id, job_uid) REFERENCES jobs (tenant_id, uid) ON DELETE CASCADE,
    CHECK (cardinality(util_hist) = 101)
);

-- job_gpu: per job, how far its samples are counted (sampled_to: every
-- sample at or before it is in job_gpu_replicas, none after; a poll reads
-- (sampled_to, t] and moves it to t in the same transaction, fenced on
-- the value it read) and whether the idle rule holds (idle_since: when
-- the job's GPUs were last busy, NULL while they are not idle).
CREATE TABLE job_gpu (
    tenant_id   text        NOT NULL,
    job_uid     uuid        NOT NULL,
    sampled_to  timestamptz NOT NULL,
    idle_since  timestamptz,
    update_time timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, job_uid),
    FOREIGN KEY (tenant_id, job_uid) REFERENCES jobs (tenant_id, uid) ON DELETE CASCADE
);

-- The idle rule's event (reason IdleGPUs, written with the job's IdleGPUs
-- condition) is a webhook topic: job.idle_gpus. The rest is 000013's.
CREATE OR REPLACE FUNCTION trainyard_webhook_topic(reason text, state text, final_reason text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN reason = 'Queued' AND state = 'QUEUED' THEN 'job.created'
        WHEN reason = 'Admitted' THEN 'job.admitted'
        WHEN reason = 'JobRunning' THEN 'job.running'
        WHEN reason = 'Restarting' THEN 'job.replica_restarted'
        WHEN reason = 'Preempted' THEN 'job.preempted'
        WHEN reason = 'IdleGPUs' THEN 'job.idle_gpus'
        WHEN reason = 'Deleted' OR reason IS DISTINCT FROM final_reason THEN NULL
        WHEN state = 'SUCCEEDED' THEN 'job.succeeded'
        WHEN state = 'FAILED' THEN 'job.failed'
        WHEN state = 'CANCELLED' THEN 'job.cancelled'
    END
$$;

-- GPU-hours used beside allocated in the usage ledger: each poll adds,
-- for the span of the job's window, the job's GPUs (its open span's)
-- times the window's seconds times the window's mean utilisation, split at
-- UTC hours like the rollup's (trainyard_usage_hours). Time without
-- samples adds nothing: used counts what was measured. The primary key's
-- INCLUDE gains the column, so a tenant's year stays an index-only scan.
ALTER TABLE usage_hourly ADD COLUMN gpu_used_seconds double precision NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly DROP CONSTRAINT usage_hourly_pkey;
ALTER TABLE usage_hourly ADD PRIMARY KEY (tenant_id, hour, creator, labels)
    INCLUDE (gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds, gpu_used_seconds);
-- usage_daily (migration 000018, the rollup's sums per day) has no such
-- column: a query by day adds the hours that have any, found by this
-- partial index (empty without --prometheus-url).
CREATE INDEX usage_hourly_used_idx ON usage_hourly (tenant_id, hour)
    INCLUDE (creator, labels, gpu_used_seconds) WHERE gpu_used_seconds > 0;
