-- The queue over time (issue 44's charts): the scheduler's leader samples
-- every tenant's waiting jobs once a minute, one row per tenant with any
-- waiting (an empty queue writes none), and the cluster's GPU capacity in
-- one row per sample, which also tells a reader how many samples a bucket
-- holds (a tenant absent from a sample had none waiting). Kept 35 days.
CREATE TABLE queue_samples (
    sampled_at timestamptz NOT NULL,
    tenant_id text NOT NULL,
    pending_jobs integer NOT NULL,
    pending_gpus bigint NOT NULL,
    oldest_wait_seconds double precision NOT NULL,
    PRIMARY KEY (tenant_id, sampled_at)
);
CREATE INDEX queue_samples_time_idx ON queue_samples (sampled_at);

CREATE TABLE capacity_samples (
    sampled_at timestamptz PRIMARY KEY,
    gpus bigint NOT NULL
);

-- The ledger's admitting write gets cheaper (issue 44's 5 % budget for
-- the scheduler's commit): an opened span no longer enters an index of
-- its own for "not rolled up yet". Open spans are found by
-- usage_intervals_open_idx; closed ones not rolled up by this narrower
-- index, which a span enters when it is closed (the worker's save), not
-- when it is opened (the scheduler's commit). Readers ask for
-- (end_time IS NULL OR rolled_to < end_time): a BitmapOr of the two.
DROP INDEX usage_intervals_unrolled_idx;
CREATE INDEX usage_intervals_unrolled_idx ON usage_intervals (tenant_id) WHERE rolled_to < end_time;
