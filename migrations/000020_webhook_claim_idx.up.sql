-- A claim reads each webhook's due deliveries in order from their own
-- index range (store.DeliveryClaim), and stops at the webhook's room: it
-- costs what it takes, not the backlog of a receiver that is busy or down.
CREATE INDEX webhook_deliveries_webhook_due_idx ON webhook_deliveries (tenant_id, webhook_id, next_attempt_time, id)
    WHERE state = 'PENDING';
