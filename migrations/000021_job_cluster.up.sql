-- The cluster a job was admitted to (issue 45): the scheduler places each
-- gang whole inside one cluster and writes its name with the admission;
-- the job's pods are there until it is admitted again. '' is the
-- installation's own cluster (every job admitted before this migration).
ALTER TABLE jobs ADD COLUMN cluster text NOT NULL DEFAULT '';
