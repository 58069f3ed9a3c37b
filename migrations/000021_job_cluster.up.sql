-- The cluster a job was admitted to (issue 45): the scheduler places each
-- gang whole inside one cluster and writes its name with the admission;
-- the job's pods are there until it is admitted again, and only that
-- cluster's workers claim it. Every job before this migration ran in the
-- one cluster there was: `default`.
ALTER TABLE jobs ADD COLUMN cluster text NOT NULL DEFAULT 'default';
