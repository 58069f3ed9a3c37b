-- The audit log (internal/audit): one row per change a caller made through
-- the API, written in the transaction of the change.
CREATE TABLE audit_records (
    id          bigserial   PRIMARY KEY,
    time        timestamptz NOT NULL DEFAULT now(),
    -- No foreign key: records outlive what they describe.
    tenant_id   text        NOT NULL,
    subject     text        NOT NULL,
    groups      text[]      NOT NULL DEFAULT '{}',
    issuer      text        NOT NULL DEFAULT '',
    address     text        NOT NULL DEFAULT '',
    request_id  text        NOT NULL DEFAULT '',
    action      text        NOT NULL,
    resource    text        NOT NULL,
    details     jsonb       NOT NULL DEFAULT '{}'
);

-- Newest first, per tenant and across tenants (keyset pages on id), and
-- retention by time.
CREATE INDEX audit_records_tenant_idx ON audit_records (tenant_id, id DESC);
CREATE INDEX audit_records_time_idx ON audit_records (time);

-- Records are never changed: not through the API (it has no method for it),
-- and not by a bug or a hand in the database either. Retention deletes
-- whole rows.
CREATE FUNCTION audit_records_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit records cannot be changed' USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_records_immutable BEFORE UPDATE ON audit_records
    FOR EACH ROW EXECUTE FUNCTION audit_records_immutable();
