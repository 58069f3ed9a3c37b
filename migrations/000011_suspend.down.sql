UPDATE jobs SET state = 'QUEUED' WHERE state = 'SUSPENDED';
ALTER TABLE jobs DROP COLUMN suspend_requested;
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check
    CHECK (state IN ('QUEUED', 'STARTING', 'RUNNING', 'RESTARTING',
                     'SUCCEEDED', 'FAILED', 'CANCELLED'));
