-- Sharing across tenants (issue 42): a tenant's cohort, borrowing and
-- lending limits, weight, reclaim policy, fair-share preemption, usage
-- history half-life, GPU-hour budget and GPU quotas per model live in
-- tenants.sharing (tenant.Sharing as JSON, as quota and scheduling are);
-- the cohort is also a column of its own, indexed, so that a cohort's
-- members are one index scan.
ALTER TABLE tenants
    ADD COLUMN sharing jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN cohort  text  GENERATED ALWAYS AS (nullif(sharing->>'cohort', '')) STORED;
CREATE INDEX tenants_cohort_idx ON tenants (cohort) WHERE cohort IS NOT NULL;

-- The usage ledger, written by the scheduler's leader (fenced by its
-- lease) so that it survives a fail-over: per tenant and resource, the
-- decayed average usage (admission.DecayUsage) as of update_time.
CREATE TABLE tenant_usage (
    tenant_id   text             NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    resource    text             NOT NULL,
    decayed     double precision NOT NULL DEFAULT 0,
    update_time timestamptz      NOT NULL,
    PRIMARY KEY (tenant_id, resource)
);

-- GPU-seconds per tenant per UTC day, from admission to end: a calendar
-- month's budget sums the days of the month, a rolling 30 days' the last
-- 30 days. Days older than 62 are deleted by the scheduler.
CREATE TABLE tenant_budget_days (
    tenant_id   text             NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    day         date             NOT NULL,
    gpu_seconds double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, day)
);

-- A preemption may cross tenants (reclaim, fair share): preempt_for and,
-- after the requeue, preempted_by name a job of preemptor_tenant. The
-- scheduler writes it with preempt_for; it stays when the worker moves
-- preempt_for to preempted_by, and means nothing while both are NULL.
-- NULL: the victim's own tenant (rows from before this migration).
-- admitted_model is the GPU model (a node label's value, not an amount:
-- resources are compared only in the scheduler) the scheduler counted
-- the job against at admission (a job of any model, of a tenant with
-- quotas per model).
ALTER TABLE jobs
    ADD COLUMN preemptor_tenant text,
    ADD COLUMN admitted_model   text NOT NULL DEFAULT '';
