-- usage_daily (issue 44): usage_hourly summed per UTC day, so that a
-- usage query by day reads a row per day and group instead of 24 (a
-- tenant's year by day: 730 index entries for two groups, not 17,520).
-- The rollup adds every hour's figures to both tables in one statement,
-- so the day is always the sum of its hours. Retention drops a day only
-- when all of its hours are gone.
CREATE TABLE usage_daily (
    tenant_id           text             NOT NULL,
    day                 timestamptz      NOT NULL,
    creator             text             NOT NULL,
    labels              jsonb            NOT NULL,
    gpu_seconds         double precision NOT NULL DEFAULT 0,
    cpu_seconds         double precision NOT NULL DEFAULT 0,
    memory_byte_seconds double precision NOT NULL DEFAULT 0,
    pod_seconds         double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, day, creator, labels)
        INCLUDE (gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds)
);
CREATE INDEX usage_daily_day_idx ON usage_daily (day);

INSERT INTO usage_daily (tenant_id, day, creator, labels, gpu_seconds, cpu_seconds, memory_byte_seconds, pod_seconds)
SELECT tenant_id, date_trunc('day', hour, 'UTC'), creator, labels,
       sum(gpu_seconds), sum(cpu_seconds), sum(memory_byte_seconds), sum(pod_seconds)
FROM usage_hourly
GROUP BY 1, 2, 3, 4;
