-- One lease per worker instead of one per job. A worker renewed every
-- owned job's lease_expires_at every TTL/3: at 15,000 owned jobs that
-- rewrote 15,000 rows (and their index entries) every 3.3 s, held their row
-- locks for most of a second, and the worker's own status saves queued
-- behind them (make bench, admission: the save's mean went to 37 ms and
-- Postgres was the busiest process). Now renewal is one row, and a job is
-- owned while its worker_id names a worker whose lease is live.
CREATE TABLE worker_leases (
    worker_id  text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
-- Takeovers walk the expired leases, oldest first.
CREATE INDEX worker_leases_expiry_idx ON worker_leases (expires_at);

INSERT INTO worker_leases (worker_id, expires_at)
SELECT worker_id, max(lease_expires_at) FROM jobs
WHERE worker_id IS NOT NULL AND lease_expires_at IS NOT NULL
GROUP BY worker_id;

-- Jobs owned by a worker without a lease row (none can be: every owner had
-- a lease) would never be taken over; give them back.
UPDATE jobs j SET worker_id = NULL, version = version + 1
WHERE worker_id IS NOT NULL AND NOT EXISTS (SELECT FROM worker_leases l WHERE l.worker_id = j.worker_id);

DROP INDEX jobs_lease_expiry_idx;
ALTER TABLE jobs DROP COLUMN lease_expires_at;
