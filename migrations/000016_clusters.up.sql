-- The Kubernetes clusters one Trainyard drives (issue 45). The operator's
-- state (admin_state: ACTIVE, DRAINING, CORDONED) and health (reachable,
-- set only by the sweep from heartbeat_time) are separate columns, so a
-- heartbeat never undoes a drain; the API derives READY / UNREACHABLE /
-- DRAINING / CORDONED from both (package cluster). capacity and usage are
-- cluster.Resources: amounts by Kubernetes resource name.
CREATE TABLE clusters (
    name           text        PRIMARY KEY,
    display_name   text        NOT NULL DEFAULT '',
    labels         jsonb       NOT NULL DEFAULT '{}',
    admin_state    text        NOT NULL DEFAULT 'ACTIVE' CHECK (admin_state IN ('ACTIVE', 'DRAINING', 'CORDONED')),
    reachable      boolean     NOT NULL DEFAULT false,
    heartbeat_time timestamptz,
    agent          text        NOT NULL DEFAULT '',
    capacity       jsonb       NOT NULL DEFAULT '{}',
    usage          jsonb       NOT NULL DEFAULT '{}',
    node_count     integer     NOT NULL DEFAULT 0,
    create_time    timestamptz NOT NULL,
    update_time    timestamptz NOT NULL
);

-- The cluster that existed before: a one-cluster installation needs no
-- configuration. It is reachable from the start, as it was; the sweep
-- marks it otherwise if no agent reports for it.
INSERT INTO clusters (name, display_name, reachable, create_time, update_time)
VALUES ('default', 'Default', true, now(), now());

-- The schedulable picture of each cluster's nodes, as its agent last
-- published it: a JSON array of cluster.Node (short keys), rewritten only
-- when its digest changes, one row per cluster.
CREATE TABLE cluster_nodes (
    cluster     text        PRIMARY KEY REFERENCES clusters (name) ON DELETE CASCADE,
    nodes       jsonb       NOT NULL,
    digest      text        NOT NULL,
    update_time timestamptz NOT NULL
);
