-- GPU-hours held idle (issue 44's platform report): the GPU-seconds a
-- job's GPUs were held while the job was flagged IdleGPUs. The GPU
-- poller (internal/gpuutil) judges idleness at the end of each window it
-- reads, so the flag is constant over a window: a window that starts
-- flagged (job_gpu.idle_since set) adds its job's GPUs (its open span's)
-- times its seconds, split at UTC hours, in the transaction that adds
-- its GPU-seconds used and moves sampled_to (counted once, as used is).
-- Idle time overlaps used time: an idle job's GPUs may run below the
-- tenant's threshold, not at 0 %.
ALTER TABLE usage_hourly ADD COLUMN gpu_idle_seconds double precision NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly DROP CONSTRAINT usage_hourly_pkey;
ALTER TABLE usage_hourly ADD PRIMARY KEY (tenant_id, hour, creator, labels)
    INCLUDE (gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds, gpu_used_seconds, gpu_idle_seconds);
-- usage_daily has neither column: a query by day adds the hours that have
-- either (an idle GPU at 0 % has idle seconds and no used ones).
DROP INDEX usage_hourly_used_idx;
CREATE INDEX usage_hourly_measured_idx ON usage_hourly (tenant_id, hour)
    INCLUDE (creator, labels, gpu_used_seconds, gpu_idle_seconds) WHERE gpu_used_seconds > 0 OR gpu_idle_seconds > 0;
