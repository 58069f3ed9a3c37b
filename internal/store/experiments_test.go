//go:build integration

package store

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/experiment"
	"github.com/trainyard/trainyard/internal/tune"
)

func testExperiment(tenantID, name string) experiment.Experiment {
	return experiment.Experiment{Tenant: tenantID, Name: name, Creator: "alice", Spec: experiment.Spec{
		Template:   experiment.Template{Spec: testSpec()},
		Parameters: []experiment.Parameter{{Name: "lr", Kind: tune.KindDouble, Scale: tune.ScaleLog, Min: 1e-4, Max: 1e-1}},
		Objective:  experiment.Objective{Metric: "loss", Direction: tune.Minimize},
		Algorithm:  experiment.Algorithm{Name: experiment.AlgorithmRandom}, Parallelism: 2, MaxTrials: 4, Seed: 7,
	}.Defaulted()}
}

func (b *testBundle) trialCreate(t testing.TB, e experiment.Experiment, index int) experiment.Trial {
	t.Helper()
	tr := experiment.Trial{ExperimentUID: e.UID, Index: index, Tenant: e.Tenant, JobUID: uuid.NewString(),
		JobName: experiment.JobName(e.Name, index), Assignment: tune.Assignment{"lr": "0.01"}}
	ok, err := b.store.TrialCreate(b.ctx, tr)
	require.NoError(t, err)
	require.True(t, ok)
	return tr
}

func TestExperimentCreateGetListAreTenantScoped(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	e, err := b.store.ExperimentCreate(b.ctx, testExperiment("a", "sweep"))
	require.NoError(t, err)
	require.Equal(t, experiment.Running, e.State)
	require.Equal(t, -1, e.BestTrial)
	require.Equal(t, 4, e.Spec.MaxTrials)
	require.Equal(t, "loss", e.Spec.Objective.Metric)

	_, err = b.store.ExperimentCreate(b.ctx, testExperiment("a", "sweep"))
	require.ErrorIs(t, err, ErrAlreadyExists)
	_, err = b.store.ExperimentGet(b.ctx, "b", "sweep")
	require.ErrorIs(t, err, ErrNotFound)
	got, err := b.store.ExperimentGet(b.ctx, "a", "sweep")
	require.NoError(t, err)
	require.Equal(t, e.UID, got.UID)

	_, err = b.store.ExperimentCreate(b.ctx, testExperiment("a", "another"))
	require.NoError(t, err)
	list, err := b.store.ExperimentList(b.ctx, "a", "", 10)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "another", list[0].Name)
	list, err = b.store.ExperimentList(b.ctx, "a", "another", 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	list, err = b.store.ExperimentList(b.ctx, "b", "", 10)
	require.NoError(t, err)
	require.Empty(t, list)

	// Trials of tenant a are not b's.
	b.trialCreate(t, e, 0)
	trials, err := b.store.TrialList(b.ctx, "b", e.UID)
	require.NoError(t, err)
	require.Empty(t, trials)
}

func TestTrialLifecycleAndMetrics(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	e, err := b.store.ExperimentCreate(b.ctx, testExperiment("a", "sweep"))
	require.NoError(t, err)
	t0 := b.trialCreate(t, e, 0)
	t1 := b.trialCreate(t, e, 1)

	// The same index again creates nothing.
	again, err := b.store.TrialCreate(b.ctx, experiment.Trial{ExperimentUID: e.UID, Index: 0, Tenant: "a",
		JobUID: uuid.NewString(), JobName: "x", Assignment: tune.Assignment{}})
	require.NoError(t, err)
	require.False(t, again)

	// Points are idempotent by (job, name, step): the first value stays.
	now := b.store.timestamp()
	n, err := b.store.TrialMetricsAdd(b.ctx, t0.JobUID, []experiment.MetricPoint{
		{Name: "loss", Step: 1, Value: 0.9, Time: now}, {Name: "loss", Step: 2, Value: 0.5, Time: now}, {Name: "acc", Step: 2, Value: 0.7, Time: now}})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = b.store.TrialMetricsAdd(b.ctx, t0.JobUID, []experiment.MetricPoint{
		{Name: "loss", Step: 2, Value: 0.1, Time: now}, {Name: "loss", Step: 3, Value: 0.4, Time: now}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	m, err := b.store.TrialMetrics(b.ctx, "a", []string{t0.JobUID, t1.JobUID}, "loss")
	require.NoError(t, err)
	require.Len(t, m, 1)
	var vals []float64
	for _, p := range m[t0.JobUID] {
		vals = append(vals, p.Value)
	}
	require.Equal(t, []float64{0.9, 0.5, 0.4}, vals)
	all, err := b.store.TrialMetrics(b.ctx, "a", []string{t0.JobUID}, "")
	require.NoError(t, err)
	require.Len(t, all[t0.JobUID], 4)
	other, err := b.store.TrialMetrics(b.ctx, "b", []string{t0.JobUID}, "")
	require.NoError(t, err)
	require.Empty(t, other)

	runningJobs, err := b.store.TrialRunningJobs(b.ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{t0.JobUID: true, t1.JobUID: true}, runningJobs)

	obj := 0.4
	ok, err := b.store.TrialFinish(b.ctx, e.UID, 0, experiment.TrialSucceeded, "", &obj)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = b.store.TrialFinish(b.ctx, e.UID, 0, experiment.TrialFailed, "", nil)
	require.NoError(t, err)
	require.False(t, ok, "a finished trial stays finished")
	runningJobs, err = b.store.TrialRunningJobs(b.ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{t1.JobUID: true}, runningJobs)

	// Deleting a running experiment is refused; cancelling ends its running trials.
	require.ErrorIs(t, b.store.ExperimentDelete(b.ctx, "a", "sweep"), ErrFailedPrecondition)
	got, running, err := b.store.ExperimentCancel(b.ctx, "a", "sweep")
	require.NoError(t, err)
	require.Equal(t, experiment.Cancelled, got.State)
	require.Len(t, running, 1)
	require.Equal(t, 1, running[0].Index)
	trials, err := b.store.TrialList(b.ctx, "a", e.UID)
	require.NoError(t, err)
	require.Equal(t, experiment.TrialSucceeded, trials[0].State)
	require.InDelta(t, 0.4, *trials[0].Objective, 0)
	require.Equal(t, experiment.TrialCancelled, trials[1].State)
	_, _, err = b.store.ExperimentCancel(b.ctx, "a", "sweep")
	require.ErrorIs(t, err, ErrFailedPrecondition)

	// An ended experiment takes no trials.
	created, err := b.store.TrialCreate(b.ctx, experiment.Trial{ExperimentUID: e.UID, Index: 2, Tenant: "a",
		JobUID: uuid.NewString(), JobName: "x", Assignment: tune.Assignment{}})
	require.NoError(t, err)
	require.False(t, created)

	require.NoError(t, b.store.ExperimentDelete(b.ctx, "a", "sweep"))
	var left int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM experiment_trials) + (SELECT count(*) FROM trial_metrics)`).Scan(&left))
	require.Zero(t, left)
}

func TestExperimentSetBestEndsOnce(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	e, err := b.store.ExperimentCreate(b.ctx, testExperiment("a", "sweep"))
	require.NoError(t, err)
	b.trialCreate(t, e, 0)
	running, ended, err := b.store.ExperimentSetBest(b.ctx, e.UID, -1, experiment.Running, "")
	require.NoError(t, err)
	require.True(t, ended)
	require.Empty(t, running)
	list, err := b.store.ExperimentListRunning(b.ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)

	running, ended, err = b.store.ExperimentSetBest(b.ctx, e.UID, 0, experiment.Succeeded, "the goal was reached")
	require.NoError(t, err)
	require.True(t, ended)
	require.Len(t, running, 1)
	got, err := b.store.ExperimentGet(b.ctx, "a", "sweep")
	require.NoError(t, err)
	require.Equal(t, experiment.Succeeded, got.State)
	require.Equal(t, 0, got.BestTrial)
	_, ended, err = b.store.ExperimentSetBest(b.ctx, e.UID, 0, experiment.Failed, "late")
	require.NoError(t, err)
	require.False(t, ended)
	list, err = b.store.ExperimentListRunning(b.ctx)
	require.NoError(t, err)
	require.Empty(t, list)
}

func TestExperimentChangesAreAudited(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	ctx := as(b.ctx, "alice")
	e, err := b.store.ExperimentCreate(ctx, testExperiment("a", "sweep"))
	require.NoError(t, err)
	_, _, err = b.store.ExperimentCancel(ctx, "a", "sweep")
	require.NoError(t, err)
	require.NoError(t, b.store.ExperimentDelete(ctx, "a", "sweep"))
	// The controller's writes (no caller) record nothing.
	_, _, err = b.store.ExperimentSetBest(b.ctx, e.UID, -1, experiment.Running, "")
	require.NoError(t, err)
	require.ElementsMatch(t, []audit.Action{audit.ExperimentCreate, audit.ExperimentCancel, audit.ExperimentDelete},
		actions(t, b, AuditListParams{Tenant: "a"}))
	got, err := b.store.ExperimentGet(b.ctx, "a", "sweep")
	require.ErrorIs(t, err, ErrNotFound, "%v", got)
}
