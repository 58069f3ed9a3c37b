ALTER TABLE tenants DROP COLUMN clusters;
