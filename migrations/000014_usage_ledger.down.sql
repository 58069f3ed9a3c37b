CREATE TABLE tenant_usage (
    tenant_id   text             NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    resource    text             NOT NULL,
    decayed     double precision NOT NULL DEFAULT 0,
    update_time timestamptz      NOT NULL,
    PRIMARY KEY (tenant_id, resource)
);
CREATE TABLE tenant_budget_days (
    tenant_id   text             NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    day         date             NOT NULL,
    gpu_seconds double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, day)
);
INSERT INTO tenant_budget_days (tenant_id, day, gpu_seconds)
SELECT u.tenant_id, (u.hour AT TIME ZONE 'UTC')::date, sum(u.gpu_seconds)
FROM usage_hourly u JOIN tenants t ON t.id = u.tenant_id
WHERE u.hour >= now() - interval '62 days'
GROUP BY 1, 2;
DROP FUNCTION trainyard_usage_hours(timestamptz, timestamptz);
DROP TABLE usage_hourly;
DROP TABLE usage_intervals;
