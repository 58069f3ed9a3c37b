DROP INDEX usage_hourly_measured_idx;
ALTER TABLE usage_hourly DROP CONSTRAINT usage_hourly_pkey;
ALTER TABLE usage_hourly DROP COLUMN gpu_idle_seconds;
ALTER TABLE usage_hourly ADD PRIMARY KEY (tenant_id, hour, creator, labels)
    INCLUDE (gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds, gpu_used_seconds);
CREATE INDEX usage_hourly_used_idx ON usage_hourly (tenant_id, hour)
    INCLUDE (creator, labels, gpu_used_seconds) WHERE gpu_used_seconds > 0;
