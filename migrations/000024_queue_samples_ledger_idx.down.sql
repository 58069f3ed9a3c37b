DROP INDEX usage_intervals_unrolled_idx;
CREATE INDEX usage_intervals_unrolled_idx ON usage_intervals (tenant_id)
    WHERE end_time IS NULL OR rolled_to < end_time;
DROP TABLE capacity_samples;
DROP TABLE queue_samples;
