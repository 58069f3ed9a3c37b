DROP INDEX jobs_claim_idx;
CREATE INDEX jobs_claim_idx ON jobs (claim_after, seq) WHERE active AND worker_id IS NULL;
ALTER TABLE jobs DROP COLUMN cluster;
