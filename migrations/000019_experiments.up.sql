-- Hyperparameter experiments (issue 46): an experiment runs trials, each an
-- ordinary job of its tenant; trials report metric points by printing
-- trainyard-metric lines, which the worker stores in trial_metrics.
-- internal/experiment/doc.go explains the design.

CREATE TABLE experiments (
    tenant_id    text        NOT NULL REFERENCES tenants (id),
    name         text        NOT NULL,
    uid          uuid        NOT NULL UNIQUE,
    creator      text        NOT NULL DEFAULT '',
    -- experiment.Spec as JSON: the job template, the search space, the
    -- objective, the algorithm and its settings, parallelism, max trials,
    -- max failed trials, the early stopping rule, the seed.
    spec         jsonb       NOT NULL,
    state        text        NOT NULL DEFAULT 'RUNNING'
                             CHECK (state IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
    state_reason text        NOT NULL DEFAULT '',
    -- The index of the best succeeded trial, NULL while there is none.
    best_trial   integer,
    create_time  timestamptz NOT NULL,
    update_time  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, name)
);

-- The controller's pass: running experiments, oldest first.
CREATE INDEX experiments_running_idx ON experiments (create_time) WHERE state = 'RUNNING';

CREATE TABLE experiment_trials (
    experiment_uid  uuid        NOT NULL REFERENCES experiments (uid) ON DELETE CASCADE,
    trial_index     integer     NOT NULL CHECK (trial_index >= 0),
    tenant_id       text        NOT NULL,
    job_uid         uuid        NOT NULL UNIQUE,
    job_name        text        NOT NULL,
    -- tune.Assignment: parameter name to its value as the template shows it.
    assignment      jsonb       NOT NULL,
    state           text        NOT NULL DEFAULT 'RUNNING'
                                CHECK (state IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'EARLY_STOPPED', 'CANCELLED')),
    state_reason    text        NOT NULL DEFAULT '',
    -- The last reported value of the objective metric when the trial ended.
    final_objective double precision,
    create_time     timestamptz NOT NULL,
    update_time     timestamptz NOT NULL,
    PRIMARY KEY (experiment_uid, trial_index)
);

-- The workers' metric reads: every running trial's job.
CREATE INDEX experiment_trials_running_idx ON experiment_trials (job_uid) WHERE state = 'RUNNING';

-- Every reported point of every metric of a trial's job. The key makes a
-- resumed (preempted, restarted) trial's repeated lines idempotent: a
-- point is its step's first report.
CREATE TABLE trial_metrics (
    job_uid     uuid             NOT NULL,
    name        text             NOT NULL,
    step        bigint           NOT NULL,
    value       double precision NOT NULL,
    report_time timestamptz      NOT NULL,
    PRIMARY KEY (job_uid, name, step)
);
