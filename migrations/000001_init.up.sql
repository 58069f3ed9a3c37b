-- Trainyard's schema. Every table that holds tenant data carries tenant_id,
-- and every query of internal/store filters on it (the worker's queue
-- queries are the documented exception: claiming is cross-tenant).
-- internal/store/doc.go explains the design.

CREATE TABLE tenants (
    id                text        PRIMARY KEY,
    display_name      text        NOT NULL DEFAULT '',
    labels            jsonb       NOT NULL DEFAULT '{}',
    quota             jsonb       NOT NULL DEFAULT '{}',
    pod_reader_groups text[]      NOT NULL DEFAULT '{}',
    namespace         text        NOT NULL,
    state             text        NOT NULL DEFAULT 'ACTIVE'
                                  CHECK (state IN ('ACTIVE', 'OFFBOARDING', 'DELETED')),
    create_time       timestamptz NOT NULL,
    update_time       timestamptz NOT NULL
);

-- Members are rewritten as a whole on every tenant update. The table exists
-- for the lookup "which tenants may this subject or these groups see".
CREATE TABLE tenant_members (
    tenant_id text     NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind      text     NOT NULL CHECK (kind IN ('subject', 'group')),
    principal text     NOT NULL,
    role      text     NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
    position  smallint NOT NULL, -- order as the admin wrote the list
    PRIMARY KEY (tenant_id, kind, principal)
);

CREATE INDEX tenant_members_principal_idx ON tenant_members (kind, principal, tenant_id);

CREATE TABLE jobs (
    tenant_id           text        NOT NULL REFERENCES tenants (id),
    uid                 uuid        NOT NULL,
    -- Keyset order for listing and FIFO order for claiming. Unique by
    -- construction; deliberately no index of its own (see jobs_tenant_seq_idx).
    seq                 bigserial   NOT NULL,
    name                text        NOT NULL,
    display_name        text        NOT NULL DEFAULT '',
    labels              jsonb       NOT NULL DEFAULT '{}',
    creator             text        NOT NULL DEFAULT '',
    spec                jsonb       NOT NULL,
    -- status.state always equals the state column; cancelRequested is not
    -- kept in the JSON: the column is the truth.
    status              jsonb       NOT NULL,
    state               text        NOT NULL
                                    CHECK (state IN ('QUEUED', 'STARTING', 'RUNNING', 'RESTARTING',
                                                     'SUCCEEDED', 'FAILED', 'CANCELLED')),
    priority            integer     NOT NULL DEFAULT 0,
    cancel_requested    boolean     NOT NULL DEFAULT false,
    -- Deleted by the user; the row stays until the worker has removed what is
    -- left in Kubernetes and purges it.
    deleted             boolean     NOT NULL DEFAULT false,
    -- Counted against the tenant's quota (while not final and not deleted).
    admitted            boolean     NOT NULL DEFAULT false,
    demand_gpu          bigint      NOT NULL DEFAULT 0,
    demand_cpu_milli    bigint      NOT NULL DEFAULT 0,
    demand_memory_bytes bigint      NOT NULL DEFAULT 0,
    demand_pods         bigint      NOT NULL DEFAULT 0,
    -- Needs a worker. Claimable when active and unowned or its lease expired.
    active              boolean     NOT NULL DEFAULT true,
    worker_id           text,
    lease_expires_at    timestamptz,
    -- Bumped on every write except lease renewal: the fence for JobSave.
    version             bigint      NOT NULL DEFAULT 1,
    create_time         timestamptz NOT NULL,
    update_time         timestamptz NOT NULL,
    finish_time         timestamptz,
    PRIMARY KEY (tenant_id, uid)
);

-- Names are unique among a tenant's live jobs; a deleted job's name is free
-- at once. Also serves JobGet.
CREATE UNIQUE INDEX jobs_tenant_name_key ON jobs (tenant_id, name) WHERE NOT deleted;

-- JobList newest first, with and without a state filter: an index range scan
-- in order, stopped by LIMIT, whatever the table size.
CREATE INDEX jobs_tenant_seq_idx ON jobs (tenant_id, seq DESC) WHERE NOT deleted;
CREATE INDEX jobs_tenant_state_seq_idx ON jobs (tenant_id, state, seq DESC) WHERE NOT deleted;

-- Label filters (@> for key=value, ?& for key exists).
CREATE INDEX jobs_labels_idx ON jobs USING gin (labels) WHERE NOT deleted;

-- The claim query: active rows in priority, then FIFO, order. Small because
-- finished jobs drop out of it.
CREATE INDEX jobs_claim_idx ON jobs (priority DESC, seq) WHERE active;

-- Lease renewal and release by worker.
CREATE INDEX jobs_worker_idx ON jobs (worker_id) WHERE worker_id IS NOT NULL;

-- Admission sums the demand of a tenant's admitted, unfinished jobs.
CREATE INDEX jobs_admitted_idx ON jobs (tenant_id)
    WHERE admitted AND NOT deleted AND state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED');

-- Offboarding: a tenant's jobs that still need a worker.
CREATE INDEX jobs_tenant_active_idx ON jobs (tenant_id) WHERE active;

-- Events. Ids increase across all jobs; within a tenant they are assigned in
-- commit order (writers hold a per-tenant advisory lock from id assignment to
-- commit), so "everything after id N" is a safe resume point.
CREATE TABLE job_events (
    id          bigserial   PRIMARY KEY,
    tenant_id   text        NOT NULL,
    job_uid     uuid        NOT NULL,
    job_name    text        NOT NULL,
    type        text        NOT NULL CHECK (type IN ('Normal', 'Warning')),
    reason      text        NOT NULL,
    message     text        NOT NULL DEFAULT '',
    state       text        NOT NULL,
    create_time timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, job_uid) REFERENCES jobs (tenant_id, uid) ON DELETE CASCADE
);

CREATE INDEX job_events_job_idx ON job_events (tenant_id, job_uid, id);
CREATE INDEX job_events_tenant_idx ON job_events (tenant_id, id);

-- AIP-155 request ids. Written before the job row in the same transaction,
-- so concurrent retries of one request queue up on this key.
CREATE TABLE idempotency_keys (
    tenant_id   text        NOT NULL,
    request_id  text        NOT NULL,
    job_uid     uuid        NOT NULL,
    create_time timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, request_id),
    FOREIGN KEY (tenant_id, job_uid) REFERENCES jobs (tenant_id, uid)
        ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
);

CREATE INDEX idempotency_keys_job_idx ON idempotency_keys (tenant_id, job_uid);

-- Secret metadata. Values live only in Kubernetes Secrets.
CREATE TABLE secrets (
    tenant_id   text        NOT NULL REFERENCES tenants (id),
    name        text        NOT NULL,
    keys        text[]      NOT NULL DEFAULT '{}',
    create_time timestamptz NOT NULL,
    update_time timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
