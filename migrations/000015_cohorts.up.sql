-- A cohort's own nominal pool (issue 42): capacity that belongs to the
-- cohort, not to any tenant, lent to its members. A cohort exists as soon
-- as a tenant names it (tenants.sharing->>'cohort'); a row here only gives
-- it a pool. nominal is a tenant.Quota (JSON), gpu_types a map of GPU
-- model to GPUs.
CREATE TABLE cohorts (
    name        text        PRIMARY KEY,
    nominal     jsonb       NOT NULL DEFAULT '{}',
    gpu_types   jsonb       NOT NULL DEFAULT '{}',
    create_time timestamptz NOT NULL,
    update_time timestamptz NOT NULL
);
