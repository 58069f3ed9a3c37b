package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/experiment"
	"github.com/trainyard/trainyard/internal/resname"
)

// Experiments, their trials and the trials' metric points (migration
// 000019; internal/experiment/doc.go). The API's methods are tenant-scoped
// and audited; the controller's (ExperimentListRunning, ExperimentFinish,
// Trial*) and the worker's (TrialMetricsAdd) are cross-tenant by nature,
// like the worker's queue, and record nothing.

const experimentCols = `e.tenant_id, e.name, e.uid, e.creator, e.spec, e.state, e.state_reason,
	e.best_trial, e.create_time, e.update_time`

func scanExperiment(row pgx.Row) (experiment.Experiment, error) {
	var (
		e     experiment.Experiment
		uid   uuid.UUID
		spec  []byte
		state string
		best  *int32
	)
	if err := row.Scan(&e.Tenant, &e.Name, &uid, &e.Creator, &spec, &state, &e.Reason, &best, &e.CreateTime, &e.UpdateTime); err != nil {
		return e, err
	}
	e.UID, e.State, e.BestTrial = uid.String(), experiment.State(state), -1
	if best != nil {
		e.BestTrial = int(*best)
	}
	if err := json.Unmarshal(spec, &e.Spec); err != nil {
		return e, fmt.Errorf("experiment %q: its spec: %w", e.Name, err)
	}
	return e, nil
}

func experimentWhat(tenantID, name string) string {
	return fmt.Sprintf("experiment %q in tenant %q", name, tenantID)
}

// ExperimentCreate inserts a RUNNING experiment; its UID is generated when
// empty. ErrAlreadyExists when the name is taken; ErrNotFound without the
// tenant.
func (s *Store) ExperimentCreate(ctx context.Context, e experiment.Experiment) (experiment.Experiment, error) {
	what := experimentWhat(e.Tenant, e.Name)
	if e.UID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return e, err
		}
		e.UID = id.String()
	}
	spec, err := json.Marshal(e.Spec)
	if err != nil {
		return e, err
	}
	var out experiment.Experiment
	err = s.inTx(ctx, func(tx *txn) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM tenants WHERE id = $1 FOR SHARE`, e.Tenant).Scan(&one); err != nil {
			return err
		}
		now := s.timestamp()
		var err error
		out, err = scanExperiment(tx.QueryRow(ctx, `
			INSERT INTO experiments AS e (tenant_id, name, uid, creator, spec, create_time, update_time)
			VALUES ($1, $2, $3, $4, $5, $6, $6)
			RETURNING `+experimentCols, e.Tenant, e.Name, e.UID, e.Creator, spec, now))
		if err != nil {
			return err
		}
		// Wakes the experiments controller (it passes when jobs change), so
		// the first trials start now rather than on its next period.
		tx.notify(ChannelEvents, e.Tenant)
		return auditInsert(ctx, tx, e.Tenant, audit.ExperimentCreate, resname.Experiment.Format(e.Tenant, e.Name), map[string]any{
			"uid": out.UID, "algorithm": out.Spec.Algorithm.Name, "maxTrials": out.Spec.MaxTrials,
			"parallelism": out.Spec.Parallelism,
		})
	})
	return out, translate(err, what)
}

// ExperimentGet returns an experiment.
func (s *Store) ExperimentGet(ctx context.Context, tenantID, name string) (experiment.Experiment, error) {
	e, err := scanExperiment(s.pool.QueryRow(ctx, `SELECT `+experimentCols+` FROM experiments e
		WHERE e.tenant_id = $1 AND e.name = $2`, tenantID, name))
	return e, translate(err, experimentWhat(tenantID, name))
}

// ExperimentList returns up to limit of the tenant's experiments by name,
// after the name after.
func (s *Store) ExperimentList(ctx context.Context, tenantID, after string, limit int) ([]experiment.Experiment, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+experimentCols+` FROM experiments e
		WHERE e.tenant_id = $1 AND e.name > $2 ORDER BY e.name LIMIT $3`, tenantID, after, limit)
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (experiment.Experiment, error) { return scanExperiment(r) })
	return list, translate(err, "experiments")
}

// ExperimentCancel ends a RUNNING experiment CANCELLED, and returns it with
// its trials that still run: the caller cancels their jobs (JobCancel).
// ErrFailedPrecondition when it has already ended.
func (s *Store) ExperimentCancel(ctx context.Context, tenantID, name string) (experiment.Experiment, []experiment.Trial, error) {
	what := experimentWhat(tenantID, name)
	var (
		out     experiment.Experiment
		running []experiment.Trial
	)
	err := s.inTx(ctx, func(tx *txn) error {
		e, err := scanExperiment(tx.QueryRow(ctx, `SELECT `+experimentCols+` FROM experiments e
			WHERE e.tenant_id = $1 AND e.name = $2 FOR UPDATE`, tenantID, name))
		if err != nil {
			return err
		}
		if e.State != experiment.Running {
			return fmt.Errorf("%w: %s has ended (%s)", ErrFailedPrecondition, what, e.State)
		}
		reason := "cancelled"
		if a, ok := audit.ActorFrom(ctx); ok {
			reason = "cancelled by " + a.Subject
		}
		if out, err = scanExperiment(tx.QueryRow(ctx, `UPDATE experiments e SET state = 'CANCELLED', state_reason = $3, update_time = $4
			WHERE e.tenant_id = $1 AND e.name = $2 RETURNING `+experimentCols, tenantID, name, reason, s.timestamp())); err != nil {
			return err
		}
		if running, err = trialsFinish(ctx, tx, e.UID, experiment.TrialCancelled, "the experiment was cancelled", s.timestamp()); err != nil {
			return err
		}
		return auditInsert(ctx, tx, tenantID, audit.ExperimentCancel, resname.Experiment.Format(tenantID, name), map[string]any{"uid": e.UID})
	})
	return out, running, translate(err, what)
}

// trialsFinish ends every RUNNING trial of an experiment in state, and
// returns them as they were.
func trialsFinish(ctx context.Context, tx pgx.Tx, expUID string, state experiment.TrialState, reason string, now time.Time) ([]experiment.Trial, error) {
	rows, _ := tx.Query(ctx, `UPDATE experiment_trials t SET state = $2, state_reason = $3, update_time = $4
		WHERE t.experiment_uid = $1 AND t.state = 'RUNNING' RETURNING `+trialCols, expUID, string(state), reason, now)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (experiment.Trial, error) { return scanTrial(r) })
}

// ExperimentDelete removes an experiment that has ended, its trials and
// their metric points. The trials' jobs stay: they are the tenant's jobs.
// ErrFailedPrecondition while it runs.
func (s *Store) ExperimentDelete(ctx context.Context, tenantID, name string) error {
	what := experimentWhat(tenantID, name)
	err := s.inTx(ctx, func(tx *txn) error {
		var (
			uid   uuid.UUID
			state string
		)
		if err := tx.QueryRow(ctx, `SELECT uid, state FROM experiments WHERE tenant_id = $1 AND name = $2 FOR UPDATE`,
			tenantID, name).Scan(&uid, &state); err != nil {
			return err
		}
		if experiment.State(state) == experiment.Running {
			return fmt.Errorf("%w: %s is running; cancel it first", ErrFailedPrecondition, what)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM trial_metrics m USING experiment_trials t
			WHERE t.experiment_uid = $1 AND m.job_uid = t.job_uid`, uid); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM experiments WHERE uid = $1`, uid); err != nil {
			return err
		}
		return auditInsert(ctx, tx, tenantID, audit.ExperimentDelete, resname.Experiment.Format(tenantID, name), map[string]any{"uid": uid.String()})
	})
	return translate(err, what)
}

// ExperimentListRunning returns every tenant's RUNNING experiments, oldest
// first: the controller's pass.
func (s *Store) ExperimentListRunning(ctx context.Context) ([]experiment.Experiment, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+experimentCols+` FROM experiments e
		WHERE e.state = 'RUNNING' ORDER BY e.create_time, e.uid`)
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (experiment.Experiment, error) { return scanExperiment(r) })
	return list, translate(err, "experiments")
}

// ExperimentSetBest records the best trial (-1: none) of a RUNNING
// experiment, and, when state is not RUNNING, ends it with reason, ending
// its running trials CANCELLED; those are returned, for the caller to
// cancel their jobs. ended is false when the experiment had already ended
// (a cancel came first): nothing is changed.
func (s *Store) ExperimentSetBest(ctx context.Context, uid string, best int, state experiment.State, reason string) (running []experiment.Trial, ended bool, err error) {
	err = s.inTx(ctx, func(tx *txn) error {
		var b *int
		if best >= 0 {
			b = &best
		}
		now := s.timestamp()
		tag, err := tx.Exec(ctx, `UPDATE experiments SET best_trial = $2, state = $3, state_reason = $4,
			update_time = CASE WHEN best_trial IS DISTINCT FROM $2 OR state <> $3 THEN $5 ELSE update_time END
			WHERE uid = $1 AND state = 'RUNNING'`, uid, b, string(state), reason, now)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		ended = true
		if state != experiment.Running {
			running, err = trialsFinish(ctx, tx, uid, experiment.TrialCancelled, "the experiment ended: "+reason, now)
		}
		return err
	})
	return running, ended, translate(err, "experiment "+uid)
}

const trialCols = `t.experiment_uid, t.trial_index, t.tenant_id, t.job_uid, t.job_name, t.assignment, t.state,
	t.state_reason, t.final_objective, t.create_time, t.update_time`

func scanTrial(row pgx.Row) (experiment.Trial, error) {
	var (
		t           experiment.Trial
		expUID, job uuid.UUID
		state       string
	)
	err := row.Scan(&expUID, &t.Index, &t.Tenant, &job, &t.JobName, &t.Assignment, &state, &t.Reason, &t.Objective,
		&t.CreateTime, &t.UpdateTime)
	t.ExperimentUID, t.JobUID, t.State = expUID.String(), job.String(), experiment.TrialState(state)
	return t, err
}

// TrialCreate inserts a RUNNING trial of a RUNNING experiment. created is
// false when the index was taken or the experiment has ended.
func (s *Store) TrialCreate(ctx context.Context, t experiment.Trial) (created bool, err error) {
	now := s.timestamp()
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO experiment_trials (experiment_uid, trial_index, tenant_id, job_uid, job_name, assignment, create_time, update_time)
		SELECT $1, $2, $3, $4, $5, $6, $7, $7
		WHERE EXISTS (SELECT FROM experiments WHERE uid = $1 AND state = 'RUNNING')
		ON CONFLICT (experiment_uid, trial_index) DO NOTHING`,
		t.ExperimentUID, t.Index, t.Tenant, t.JobUID, t.JobName, t.Assignment, now)
	if err != nil {
		return false, translate(err, "trial")
	}
	return tag.RowsAffected() == 1, nil
}

// TrialList returns an experiment's trials by index. tenantID scopes it.
func (s *Store) TrialList(ctx context.Context, tenantID, expUID string) ([]experiment.Trial, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+trialCols+` FROM experiment_trials t
		WHERE t.tenant_id = $1 AND t.experiment_uid = $2 ORDER BY t.trial_index`, tenantID, expUID)
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (experiment.Trial, error) { return scanTrial(r) })
	return list, translate(err, "trials")
}

// TrialFinish ends a RUNNING trial in state with reason and its final
// objective (nil: none). ok is false when it had already ended.
func (s *Store) TrialFinish(ctx context.Context, expUID string, index int, state experiment.TrialState, reason string, objective *float64) (ok bool, err error) {
	tag, err := s.pool.Exec(ctx, `UPDATE experiment_trials SET state = $3, state_reason = $4, final_objective = $5, update_time = $6
		WHERE experiment_uid = $1 AND trial_index = $2 AND state = 'RUNNING'`,
		expUID, index, string(state), reason, objective, s.timestamp())
	if err != nil {
		return false, translate(err, "trial")
	}
	return tag.RowsAffected() == 1, nil
}

// TrialMetricsAdd stores a job's metric points; a (name, step) stored
// before keeps its first value. It returns how many were new.
func (s *Store) TrialMetricsAdd(ctx context.Context, jobUID string, points []experiment.MetricPoint) (int, error) {
	if len(points) == 0 {
		return 0, nil
	}
	names := make([]string, len(points))
	steps := make([]int64, len(points))
	values := make([]float64, len(points))
	times := make([]time.Time, len(points))
	for i, p := range points {
		names[i], steps[i], values[i], times[i] = p.Name, p.Step, p.Value, p.Time.UTC()
	}
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO trial_metrics (job_uid, name, step, value, report_time)
		SELECT $1, n, st, v, tm FROM unnest($2::text[], $3::bigint[], $4::float8[], $5::timestamptz[]) AS x(n, st, v, tm)
		ON CONFLICT (job_uid, name, step) DO NOTHING`, jobUID, names, steps, values, times)
	if err != nil {
		return 0, translate(err, "trial metrics")
	}
	return int(tag.RowsAffected()), nil
}

// TrialMetrics returns the points of the jobs' metric name (every metric
// when name is empty) by job uid, each job's by name and step. tenantID
// scopes it: only jobs that are trials of the tenant's experiments.
func (s *Store) TrialMetrics(ctx context.Context, tenantID string, jobUIDs []string, name string) (map[string][]experiment.MetricPoint, error) {
	if len(jobUIDs) == 0 {
		return map[string][]experiment.MetricPoint{}, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT m.job_uid, m.name, m.step, m.value, m.report_time
		FROM trial_metrics m JOIN experiment_trials t ON t.job_uid = m.job_uid AND t.tenant_id = $1
		WHERE m.job_uid = ANY ($2::uuid[]) AND ($3 = '' OR m.name = $3)
		ORDER BY m.job_uid, m.name, m.step`, tenantID, jobUIDs, name)
	if err != nil {
		return nil, translate(err, "trial metrics")
	}
	out := map[string][]experiment.MetricPoint{}
	for rows.Next() {
		var (
			uid uuid.UUID
			p   experiment.MetricPoint
		)
		if err := rows.Scan(&uid, &p.Name, &p.Step, &p.Value, &p.Time); err != nil {
			rows.Close()
			return nil, translate(err, "trial metrics")
		}
		out[uid.String()] = append(out[uid.String()], p)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "trial metrics")
	}
	return out, nil
}

// TrialRunningJobs returns the job uids of every tenant's RUNNING trials
// (the workers' metric reads).
func (s *Store) TrialRunningJobs(ctx context.Context) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT job_uid FROM experiment_trials WHERE state = 'RUNNING'`)
	if err != nil {
		return nil, translate(err, "trials")
	}
	uids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, translate(err, "trials")
	}
	out := make(map[string]bool, len(uids))
	for _, u := range uids {
		out[u.String()] = true
	}
	return out, nil
}
