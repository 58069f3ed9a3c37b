-- Job dependencies (issue 43). The edges live in the dependent's spec
-- (spec.dependsOn, by uid); the scheduler only needs to know whether a
-- pending job was admitted before: its dependencies gate its first
-- admission, not its return to the queue after a preemption. A column, so
-- that the scheduler's read of the unfinished jobs need not open statuses.
ALTER TABLE jobs ADD COLUMN admitted_before boolean NOT NULL DEFAULT false;
UPDATE jobs SET admitted_before = true WHERE start_time IS NOT NULL OR admitted;
