ALTER TABLE clusters DROP COLUMN agent_identity;
