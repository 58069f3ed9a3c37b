-- The event horizon per tenant: retention raises only the horizon of the
-- tenants whose events it deleted. With one horizon for the installation,
-- a quiet tenant's watch position (its last event, older than the
-- retention age) fell below every other tenant's deleted events, and each
-- resume of its watch was refused (OUT_OF_RANGE) though nothing of its own
-- after that position had gone. event_horizon stays as the floor: what
-- retention deleted before this migration, per tenant unknown. A tenant's
-- horizon is the greater of the two (store.EventHorizon).
CREATE TABLE tenant_event_horizons (
    tenant_id       text   PRIMARY KEY,
    deleted_through bigint NOT NULL
);
