ALTER TABLE jobs ADD COLUMN lease_expires_at timestamptz;
UPDATE jobs j SET lease_expires_at = l.expires_at
FROM worker_leases l WHERE l.worker_id = j.worker_id;
UPDATE jobs SET worker_id = NULL WHERE worker_id IS NOT NULL AND lease_expires_at IS NULL;
CREATE INDEX jobs_lease_expiry_idx ON jobs (lease_expires_at) WHERE active AND worker_id IS NOT NULL;
DROP TABLE worker_leases;
