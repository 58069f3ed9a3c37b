-- How a remote cluster's agent authenticates (issue 45): the cluster's
-- service-account issuer, the agent's ServiceAccount (subject) and the
-- issuer's keys (an inline JWKS, or where to fetch it), as a JSON
-- cluster.AgentIdentity. NULL: the cluster has no remote agent (its
-- workers reach Postgres themselves, as the default cluster's do).
ALTER TABLE clusters ADD COLUMN agent_identity jsonb;
