-- Event ids in watermark order (internal/store/doc.go, "Events"): writers no
-- longer take a per-tenant lock to make ids commit in order. Instead an id
-- carries the writing transaction's id (xid8) in its high bits and the
-- event's ordinal within that transaction in its low 20 bits, so that id
-- order is (transaction, write order), and readers deliver only ids below
-- the watermark pg_snapshot_xmin(pg_current_snapshot()) << 20: every
-- transaction below it has ended, so no event with a smaller id can commit
-- after a reader has passed it, and "after id N" stays a safe resume point
-- for the public afterEventId cursor.
--
-- 2^43 transaction ids (27 years at 10,000 write transactions a second)
-- and 2^20 events per transaction fit in a bigint. Ids written before this
-- migration (a sequence, far below any xid << 20) stay, and sort first.
CREATE FUNCTION trainyard_event_id() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    -- The ordinal lives in a transaction-local setting: it starts at 0 in
    -- every transaction, works behind PgBouncer's transaction pooling, and
    -- needs no sequence (whose values other transactions would interleave).
    n bigint := coalesce(nullif(current_setting('trainyard.event_ordinal', true), ''), '0')::bigint;
BEGIN
    IF n >= 1048576 THEN
        RAISE EXCEPTION 'more than 1048576 job events in one transaction' USING ERRCODE = 'program_limit_exceeded';
    END IF;
    PERFORM set_config('trainyard.event_ordinal', (n + 1)::text, true);
    RETURN (pg_current_xact_id()::text::bigint << 20) | n;
END;
$$;

-- The watermark: event ids below it are final (committed or rolled back).
CREATE FUNCTION trainyard_event_watermark() RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 20
$$;

ALTER TABLE job_events ALTER COLUMN id SET DEFAULT trainyard_event_id();
DROP SEQUENCE job_events_id_seq;

-- No foreign key from events to jobs: its check cost every event insert a
-- lookup and a lock of the job's row, and every writer of events has just
-- inserted or locked that row anyway. JobPurge deletes a job's events with
-- the job.
ALTER TABLE job_events DROP CONSTRAINT job_events_tenant_id_job_uid_fkey;

-- Idempotency keys expire by age (--request-id-retention), oldest first.
CREATE INDEX idempotency_keys_time_idx ON idempotency_keys (create_time);
