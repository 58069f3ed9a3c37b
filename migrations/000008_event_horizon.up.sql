-- How far retention has deleted events: every event with an id up to
-- deleted_through may be gone. A watch that resumes from a position below
-- it would silently miss what retention deleted after that position, so it
-- is refused instead (OUT_OF_RANGE: list again, then watch from the list's
-- position), as Kubernetes answers 410 Gone to a resourceVersion that is
-- too old. One row; EventDeleteBefore raises it in the statement that
-- deletes. A purged job's events do not raise it: its Deleted event stays
-- (store.JobPurge) until retention takes it.
CREATE TABLE event_horizon (
    one             boolean PRIMARY KEY DEFAULT true CHECK (one),
    deleted_through bigint NOT NULL
);
-- Retention and purges before this migration kept no record: every id
-- below the oldest event left may have been deleted, and below now when
-- none is left of jobs that exist. A database without jobs has lost none.
INSERT INTO event_horizon (deleted_through)
SELECT CASE
    WHEN EXISTS (SELECT FROM job_events) THEN (SELECT min(id) - 1 FROM job_events)
    WHEN EXISTS (SELECT FROM jobs) THEN trainyard_event_watermark() - 1
    ELSE 0
END;
