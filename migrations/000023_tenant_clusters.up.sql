-- The clusters a tenant is allowed (issue 45): its jobs are placed only
-- there and its namespace exists only there. Empty, as every tenant before
-- this migration has it, is every cluster.
ALTER TABLE tenants ADD COLUMN clusters text[] NOT NULL DEFAULT '{}';
