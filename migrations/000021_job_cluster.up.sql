-- The cluster a job was admitted to (issue 45): the scheduler places each
-- gang whole inside one cluster and writes its name with the admission;
-- the job's pods are there until it is admitted again, and only that
-- cluster's workers claim it. Every job before this migration ran in the
-- one cluster there was: `default`.
ALTER TABLE jobs ADD COLUMN cluster text NOT NULL DEFAULT 'default';

-- A worker claims only its own cluster's jobs: the claim's probe for due,
-- unowned jobs starts with the cluster.
DROP INDEX jobs_claim_idx;
CREATE INDEX jobs_claim_idx ON jobs (cluster, claim_after, seq) WHERE active AND worker_id IS NULL;
