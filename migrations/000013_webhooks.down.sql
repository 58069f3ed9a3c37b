DROP TRIGGER IF EXISTS job_events_webhook_outbox ON job_events;
DROP FUNCTION IF EXISTS trainyard_webhook_outbox();
DROP FUNCTION IF EXISTS trainyard_webhook_topic(text, text, text);
DROP TABLE IF EXISTS webhook_deliveries;
DROP TABLE IF EXISTS webhooks;
