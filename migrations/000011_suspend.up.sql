-- Suspend and resume (issue 42). A suspended job is neither final nor
-- unfinished in sqlUnfinished's sense: it holds no quota (admitted is false),
-- no worker claims it (claim_after is 'infinity', as for a waiting job), and
-- the scheduler does not see it until a resume makes it QUEUED again.
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check
    CHECK (state IN ('QUEUED', 'STARTING', 'RUNNING', 'RESTARTING',
                     'SUCCEEDED', 'FAILED', 'CANCELLED', 'SUSPENDED'));

-- A user asked to suspend the job: its worker stops its pods, then the job
-- is SUSPENDED. It stays set while the job is suspended; resume clears it.
ALTER TABLE jobs ADD COLUMN suspend_requested boolean NOT NULL DEFAULT false;
