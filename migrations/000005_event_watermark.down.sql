DROP INDEX idempotency_keys_time_idx;
DELETE FROM job_events e WHERE NOT EXISTS (SELECT FROM jobs j WHERE j.tenant_id = e.tenant_id AND j.uid = e.job_uid);
ALTER TABLE job_events ADD FOREIGN KEY (tenant_id, job_uid) REFERENCES jobs (tenant_id, uid) ON DELETE CASCADE;
CREATE SEQUENCE job_events_id_seq OWNED BY job_events.id;
SELECT setval('job_events_id_seq', greatest((SELECT max(id) FROM job_events), 1));
ALTER TABLE job_events ALTER COLUMN id SET DEFAULT nextval('job_events_id_seq');
DROP FUNCTION trainyard_event_watermark();
DROP FUNCTION trainyard_event_id();
