DROP INDEX jobs_admission_idx;
DROP INDEX jobs_lease_expiry_idx;
DROP INDEX jobs_claim_idx;
CREATE INDEX jobs_claim_idx ON jobs (priority DESC, seq) WHERE active;
ALTER TABLE jobs DROP COLUMN claim_after;
