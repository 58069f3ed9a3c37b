ALTER TABLE jobs DROP COLUMN admitted_model, DROP COLUMN preemptor_tenant;
DROP TABLE tenant_budget_days;
DROP TABLE tenant_usage;
DROP INDEX tenants_cohort_idx;
ALTER TABLE tenants DROP COLUMN cohort, DROP COLUMN sharing;
