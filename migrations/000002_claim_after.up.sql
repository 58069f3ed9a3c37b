-- The queue, revised (internal/store/doc.go, "Jobs: worker side").
--
-- A job that waits for its tenant's quota no longer holds a lease: its
-- worker releases it with a not-before time, claim_after, which the claim
-- honours. '-infinity' means "claimable now" (every new job, and a waiting
-- job woken because its tenant's next job in line may now be admitted), so
-- that claimable jobs are taken in submission order (seq) among themselves;
-- a job released to poll again later sorts by the time it becomes due.
ALTER TABLE jobs ADD COLUMN claim_after timestamptz NOT NULL DEFAULT '-infinity';

-- The claim no longer orders by the user's priority across tenants (priority
-- orders admission within a tenant only), and no longer walks owned jobs:
-- one probe for unowned jobs that are due, in (claim_after, seq) order ...
DROP INDEX jobs_claim_idx;
CREATE INDEX jobs_claim_idx ON jobs (claim_after, seq) WHERE active AND worker_id IS NULL;

-- ... and one for owned jobs whose lease expired (a dead worker's jobs).
CREATE INDEX jobs_lease_expiry_idx ON jobs (lease_expires_at) WHERE active AND worker_id IS NOT NULL;

-- Admission order within a tenant: its jobs waiting to be admitted, highest
-- priority first, then oldest (-priority, so that "the jobs before this one"
-- is one row comparison, an index range). JobAdmit reserves the quota of the
-- jobs before a job (strict order) and wakes the next one in line.
CREATE INDEX jobs_admission_idx ON jobs (tenant_id, (-priority), seq)
    WHERE active AND NOT admitted AND state = 'QUEUED';
