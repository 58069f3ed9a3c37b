-- Webhooks (issue 43): a tenant's subscriptions to its jobs' events, and the
-- outbox of their deliveries. internal/store/doc.go ("Webhooks") and
-- internal/webhook/doc.go explain the design.

CREATE TABLE webhooks (
    tenant_id      text        NOT NULL REFERENCES tenants (id),
    id             text        NOT NULL,
    url            text        NOT NULL,
    -- Topics such as 'job.succeeded' (webhook.Topics).
    event_types    text[]      NOT NULL,
    -- Equality label selector as a JSON object: a job matches when its labels contain it.
    label_selector jsonb       NOT NULL DEFAULT '{}',
    description    text        NOT NULL DEFAULT '',
    state          text        NOT NULL DEFAULT 'ACTIVE' CHECK (state IN ('ACTIVE', 'DISABLED')),
    state_reason   text        NOT NULL DEFAULT '',
    -- Bumped whenever the signing secret (a Kubernetes Secret) is replaced,
    -- so deliverers drop what they cached.
    secret_version bigint      NOT NULL DEFAULT 1,
    create_time    timestamptz NOT NULL,
    update_time    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

-- The outbox. A row is one message to one webhook; it is written in the
-- transaction that wrote the event (the trigger below, or TenantUpdate),
-- so no event is lost and none is sent that did not commit.
CREATE TABLE webhook_deliveries (
    id                bigserial   PRIMARY KEY,
    tenant_id         text        NOT NULL,
    webhook_id        text        NOT NULL,
    -- The webhook-id header and the CloudEvent's id: the same on every attempt.
    message_id        text        NOT NULL,
    topic             text        NOT NULL,
    -- Messages with the same key go one at a time, in id order: a job's uid.
    ordering_key      text        NOT NULL,
    subject           text        NOT NULL,
    -- The job's row (to_jsonb) as the event's transaction left it, or the
    -- tenant (tenant.Tenant's JSON) for tenant events; NULL for a ping.
    job               jsonb,
    tenant            jsonb,
    event_time        timestamptz NOT NULL,
    state             text        NOT NULL DEFAULT 'PENDING' CHECK (state IN ('PENDING', 'SUCCEEDED', 'FAILED')),
    attempts          integer     NOT NULL DEFAULT 0,
    next_attempt_time timestamptz NOT NULL,
    -- In flight at a deliverer until then; a deliverer that died lets it run out.
    lease_holder      text,
    lease_expires_at  timestamptz,
    last_attempt_time timestamptz,
    last_status_code  integer     NOT NULL DEFAULT 0,
    last_error        text        NOT NULL DEFAULT '',
    last_latency_ms   integer     NOT NULL DEFAULT 0,
    create_time       timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE
);

-- The claim: pending rows that are due, and the head of each ordering key.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_time) WHERE state = 'PENDING';
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (tenant_id, webhook_id, ordering_key, id) WHERE state = 'PENDING';
-- The delivery log, newest first; retention by age.
CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (tenant_id, webhook_id, id DESC);
CREATE INDEX webhook_deliveries_time_idx ON webhook_deliveries (create_time) WHERE state <> 'PENDING';

-- The webhook topic of a job event, from its reason and state, or NULL.
-- finalReason is the job's status reason after the write: the event that
-- ended the job carries it (job.finish), other events of the same pass do not.
CREATE FUNCTION trainyard_webhook_topic(reason text, state text, final_reason text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN reason = 'Queued' AND state = 'QUEUED' THEN 'job.created'
        WHEN reason = 'Admitted' THEN 'job.admitted'
        WHEN reason = 'JobRunning' THEN 'job.running'
        WHEN reason = 'Restarting' THEN 'job.replica_restarted'
        WHEN reason = 'Preempted' THEN 'job.preempted'
        WHEN reason = 'Deleted' OR reason IS DISTINCT FROM final_reason THEN NULL
        WHEN state = 'SUCCEEDED' THEN 'job.succeeded'
        WHEN state = 'FAILED' THEN 'job.failed'
        WHEN state = 'CANCELLED' THEN 'job.cancelled'
    END
$$;

-- One statement-level trigger: every writer of job events (the API's
-- creates and cancels, the scheduler's admissions, the workers' saves)
-- fills the outbox in its own transaction, with one INSERT per statement.
-- A tenant without an active webhook costs an index probe.
CREATE FUNCTION trainyard_webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (tenant_id, webhook_id, message_id, topic, ordering_key, subject,
                                    job, event_time, next_attempt_time, create_time)
    SELECT e.tenant_id, w.id, e.id::text, x.topic, e.job_uid::text, e.job_name,
           to_jsonb(j), e.create_time, now(), now()
    FROM new_events e
    JOIN jobs j ON j.tenant_id = e.tenant_id AND j.uid = e.job_uid
    CROSS JOIN LATERAL (SELECT trainyard_webhook_topic(e.reason, e.state, j.status->>'reason') AS topic) x
    JOIN webhooks w ON w.tenant_id = e.tenant_id AND w.state = 'ACTIVE'
                   AND x.topic = ANY (w.event_types) AND j.labels @> w.label_selector
    WHERE EXISTS (SELECT FROM webhooks h WHERE h.tenant_id = e.tenant_id AND h.state = 'ACTIVE')
    ORDER BY e.id, w.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER job_events_webhook_outbox AFTER INSERT ON job_events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION trainyard_webhook_outbox();
