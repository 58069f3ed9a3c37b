-- The installation's horizon becomes the highest of the tenants' again.
UPDATE event_horizon SET deleted_through = greatest(deleted_through,
    (SELECT coalesce(max(deleted_through), 0) FROM tenant_event_horizons));
DROP TABLE tenant_event_horizons;
