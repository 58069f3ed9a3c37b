//go:build integration

package experimentctl

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/experiment"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/pgtest"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/tune"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Run(m, "experimentctl", func(ctx context.Context, url string) error { return store.Migrate(ctx, url, "up") }))
}

type bundle struct {
	ctx   context.Context
	store *store.Store
	pool  *pgxpool.Pool
	url   string
	ctl   *Controller
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	pool, url := pgtest.Schema(t)
	st := store.New(pool)
	_, err := st.TenantCreate(ctx, tenant.Tenant{ID: "a", Namespace: "ty-a"})
	require.NoError(t, err)
	ctl, err := NewController(Config{Store: st})
	require.NoError(t, err)
	return &bundle{ctx: ctx, store: st, pool: pool, url: url, ctl: ctl}
}

func spec(maxTrials, parallelism int) experiment.Spec {
	return experiment.Spec{
		Template: experiment.Template{Labels: map[string]string{"team": "nlp"}, Spec: job.Spec{Replicas: []job.ReplicaSpec{{
			Type: job.Worker, Count: 1, Image: "tensorflow/tensorflow:2.16.1",
			Command: []string{"python", "train.py", "--lr=${trial.lr}", "--width=${trial.width}"},
		}}}},
		Parameters: []experiment.Parameter{
			{Name: "lr", Kind: tune.KindDouble, Scale: tune.ScaleLog, Min: 1e-4, Max: 1e-1},
			{Name: "width", Kind: tune.KindInt, Min: 16, Max: 256},
		},
		Objective:   experiment.Objective{Metric: "loss", Direction: tune.Minimize},
		Algorithm:   experiment.Algorithm{Name: experiment.AlgorithmRandom},
		Parallelism: parallelism, MaxTrials: maxTrials, Seed: 42,
	}
}

func (b *bundle) create(t *testing.T, name string, s experiment.Spec) experiment.Experiment {
	t.Helper()
	e := experiment.Experiment{Tenant: "a", Name: name, Creator: "alice", Spec: s.Defaulted()}
	require.Empty(t, experiment.Validate(&e))
	e, err := b.store.ExperimentCreate(b.ctx, e)
	require.NoError(t, err)
	return e
}

func (b *bundle) pass(t *testing.T, e experiment.Experiment) (experiment.Experiment, []experiment.Trial) {
	t.Helper()
	require.NoError(t, b.ctl.Pass(b.ctx))
	got, err := b.store.ExperimentGet(b.ctx, "a", e.Name)
	require.NoError(t, err)
	trials, err := b.store.TrialList(b.ctx, "a", e.UID)
	require.NoError(t, err)
	return got, trials
}

// report stores a trial's points of loss, one per step from 1.
func (b *bundle) report(t *testing.T, tr experiment.Trial, losses ...float64) {
	t.Helper()
	var ps []experiment.MetricPoint
	for i, v := range losses {
		ps = append(ps, experiment.MetricPoint{Name: "loss", Step: int64(i + 1), Value: v, Time: time.Now()})
	}
	_, err := b.store.TrialMetricsAdd(b.ctx, tr.JobUID, ps)
	require.NoError(t, err)
}

// end fakes the outcome of a trial's job, as its worker would save it.
func (b *bundle) end(t *testing.T, tr experiment.Trial, state job.State) {
	t.Helper()
	tag, err := b.pool.Exec(b.ctx, `UPDATE jobs SET state = $2, active = false,
		status = jsonb_set(jsonb_set(status, '{state}', to_jsonb($2::text)), '{reason}', to_jsonb($3::text))
		WHERE uid = $1`, tr.JobUID, string(state), "Simulated")
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
}

func (b *bundle) job(t *testing.T, tr experiment.Trial) job.Job {
	t.Helper()
	j, err := b.store.JobGet(b.ctx, "a", tr.JobName)
	require.NoError(t, err)
	return j
}

func running(trials []experiment.Trial) []experiment.Trial {
	var out []experiment.Trial
	for _, t := range trials {
		if t.State == experiment.TrialRunning {
			out = append(out, t)
		}
	}
	return out
}

func TestExperimentRunsToMaxTrialsWithinParallelism(t *testing.T) {
	b := setup(t)
	e := b.create(t, "sweep", spec(5, 2))

	e, trials := b.pass(t, e)
	require.Len(t, trials, 2)
	j := b.job(t, trials[0])
	require.Equal(t, "sweep", j.Labels[experiment.LabelExperiment])
	require.Equal(t, "0", j.Labels[experiment.LabelTrial])
	require.Equal(t, "nlp", j.Labels["team"])
	require.Equal(t, "alice", j.Creator)
	require.Equal(t, job.Queued, j.Status.State)
	require.Equal(t, "--lr="+trials[0].Assignment["lr"], j.Spec.Replicas[0].Command[2], "the template is expanded")

	// A pass with nothing finished starts nothing more.
	_, again := b.pass(t, e)
	require.Len(t, again, 2)

	losses := map[int]float64{}
	for round := 0; ; round++ {
		require.Less(t, round, 10)
		r := running(trials)
		require.LessOrEqual(t, len(r), 2, "parallelism")
		if e.State != experiment.Running {
			break
		}
		tr := r[0]
		loss := float64(10 - tr.Index)
		losses[tr.Index] = loss
		b.report(t, tr, loss+1, loss)
		b.end(t, tr, job.Succeeded)
		e, trials = b.pass(t, e)
	}
	require.Equal(t, experiment.Succeeded, e.State, e.Reason)
	require.Len(t, trials, 5)
	for _, tr := range trials {
		require.Equal(t, experiment.TrialSucceeded, tr.State)
		require.InDelta(t, losses[tr.Index], *tr.Objective, 0, "the last reported value")
	}
	require.Equal(t, 4, e.BestTrial, "the lowest loss")

	// The same seed suggests the same first trials.
	e2 := b.create(t, "sweep2", spec(5, 2))
	_, trials2 := b.pass(t, e2)
	require.Equal(t, trials[0].Assignment, trials2[0].Assignment)
	require.Equal(t, trials[1].Assignment, trials2[1].Assignment)
}

func TestEarlyStoppingCancelsTheTrialTheRuleSays(t *testing.T) {
	b := setup(t)
	s := spec(3, 3)
	s.EarlyStopping = &experiment.EarlyStopping{Rule: experiment.RuleMedian, MedianStop: &experiment.MedianSettings{MinTrials: 2}}
	e := b.create(t, "stop", s)
	_, trials := b.pass(t, e)
	require.Len(t, trials, 3)
	b.report(t, trials[0], 0.5, 0.5)
	b.report(t, trials[1], 0.6, 0.6)
	b.report(t, trials[2], 0.9, 0.9)

	e, trials = b.pass(t, e)
	require.Equal(t, experiment.Running, e.State)
	require.Equal(t, experiment.TrialRunning, trials[0].State)
	require.Equal(t, experiment.TrialRunning, trials[1].State)
	require.Equal(t, experiment.TrialEarlyStopped, trials[2].State)
	require.Contains(t, trials[2].Reason, "median")
	require.InDelta(t, 0.9, *trials[2].Objective, 0)
	require.Equal(t, job.Cancelled, b.job(t, trials[2]).Status.State, "its job is cancelled")
	require.Equal(t, job.Queued, b.job(t, trials[0]).Status.State)
	require.Len(t, trials, 3, "maxTrials: no replacement")
}

func TestGoalEndsTheExperimentEarly(t *testing.T) {
	b := setup(t)
	s := spec(10, 3)
	goal := 0.25
	s.Objective.Goal = &goal
	e := b.create(t, "goal", s)
	_, trials := b.pass(t, e)
	require.Len(t, trials, 3)
	b.report(t, trials[1], 0.4, 0.2)
	b.end(t, trials[1], job.Succeeded)

	e, trials = b.pass(t, e)
	require.Equal(t, experiment.Succeeded, e.State)
	require.Contains(t, e.Reason, "reached the goal")
	require.Equal(t, 1, e.BestTrial)
	require.Len(t, trials, 3, "no trial starts after the goal")
	for _, i := range []int{0, 2} {
		require.Equal(t, experiment.TrialCancelled, trials[i].State)
		require.Equal(t, job.Cancelled, b.job(t, trials[i]).Status.State)
	}
}

func TestTooManyFailedTrialsFailTheExperiment(t *testing.T) {
	b := setup(t)
	s := spec(10, 2)
	s.MaxFailedTrials = 1
	e := b.create(t, "fails", s)
	_, trials := b.pass(t, e)
	b.end(t, trials[0], job.Failed)
	e, trials = b.pass(t, e)
	require.Equal(t, experiment.Running, e.State)
	require.Equal(t, experiment.TrialFailed, trials[0].State)
	require.Len(t, trials, 3, "a failed trial is replaced")
	// Succeeded without the objective metric is a failure too.
	b.end(t, trials[1], job.Succeeded)
	e, trials = b.pass(t, e)
	require.Equal(t, experiment.TrialFailed, trials[1].State)
	require.Contains(t, trials[1].Reason, "reported no loss")
	require.Equal(t, experiment.Failed, e.State)
	require.Contains(t, e.Reason, "2 trials failed")
	require.Equal(t, experiment.TrialCancelled, trials[2].State)
}

func TestATrialWhoseJobIsMissingGetsItOnTheNextPass(t *testing.T) {
	b := setup(t)
	e := b.create(t, "adopt", spec(1, 1))
	// A pass that wrote the trial and died before its job.
	ok, err := b.store.TrialCreate(b.ctx, experiment.Trial{ExperimentUID: e.UID, Index: 0, Tenant: "a",
		JobUID: "0190b0c0-0000-7000-8000-000000000001", JobName: experiment.JobName("adopt", 0),
		Assignment: tune.Assignment{"lr": "0.01", "width": "32"}})
	require.NoError(t, err)
	require.True(t, ok)
	_, trials := b.pass(t, e)
	require.Len(t, trials, 1)
	j := b.job(t, trials[0])
	require.Equal(t, "0190b0c0-0000-7000-8000-000000000001", j.UID)
	require.Equal(t, "--width=32", j.Spec.Replicas[0].Command[3])
}

// chanSubscriber hands out one channel for store.ChannelEvents.
type chanSubscriber chan string

func (c chanSubscriber) Subscribe(channel string) (<-chan string, func()) {
	if channel != store.ChannelEvents {
		return nil, func() {}
	}
	return c, func() {}
}

func TestLeadPassesWhenJobsChange(t *testing.T) {
	b := setup(t)
	events := make(chanSubscriber, 4)
	ctl, err := NewController(Config{Store: b.store, Period: time.Hour, Listener: events, MinGap: 10 * time.Millisecond})
	require.NoError(t, err)
	e := b.create(t, "wake", spec(3, 1))
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { defer close(done); ctl.Lead(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	trials := func() []experiment.Trial {
		ts, err := b.store.TrialList(b.ctx, "a", e.UID)
		require.NoError(t, err)
		return ts
	}
	require.Eventually(t, func() bool {
		if len(trials()) != 1 {
			return false
		}
		_, err := b.store.JobGet(b.ctx, "a", trials()[0].JobName) // written after its trial
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the first pass")
	b.report(t, trials()[0], 0.5)
	b.end(t, trials()[0], job.Succeeded)
	events <- "a"
	require.Eventually(t, func() bool { return len(trials()) == 2 }, 10*time.Second, 20*time.Millisecond,
		"a notification starts a pass long before the period")
	require.Equal(t, experiment.TrialSucceeded, trials()[0].State)
}

// A new experiment wakes a leading controller (store.ExperimentCreate
// notifies store.ChannelEvents): its first trial starts long before the
// period.
func TestANewExperimentStartsAtOnce(t *testing.T) {
	b := setup(t)
	l, err := store.NewListener(b.url, store.ListenerConfig{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(b.ctx)
	ldone := make(chan struct{})
	go func() { defer close(ldone); _ = l.Run(ctx) }()
	ctl, err := NewController(Config{Store: b.store, Period: time.Hour, Listener: l})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); ctl.Lead(ctx) }()
	t.Cleanup(func() { cancel(); <-done; <-ldone })
	require.Eventually(t, func() bool { return l.Listening(store.ChannelEvents) }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // the first pass, of no experiment, and MinGap

	e := b.create(t, "now", spec(2, 1))
	require.Eventually(t, func() bool {
		ts, err := b.store.TrialList(b.ctx, "a", e.UID)
		require.NoError(t, err)
		return len(ts) == 1
	}, 10*time.Second, 20*time.Millisecond, "the notification starts a pass")
}

func TestAnOffboardedTenantsExperimentFails(t *testing.T) {
	b := setup(t)
	e := b.create(t, "gone", spec(3, 1))
	_, err := b.store.TenantUpdate(b.ctx, "a", func(tn *tenant.Tenant) error { tn.State = tenant.Offboarding; return nil })
	require.NoError(t, err)
	var trials []experiment.Trial
	for range 4 {
		e, trials = b.pass(t, e)
	}
	require.Equal(t, experiment.Failed, e.State, e.Reason)
	require.Len(t, trials, 3)
	for _, tr := range trials {
		require.Equal(t, experiment.TrialFailed, tr.State)
		require.Contains(t, tr.Reason, "could not be created")
	}
}

// setJob fakes a state of a trial's job that is not an end, as its worker
// would save it: RUNNING, or QUEUED again after a requeue.
func (b *bundle) setJob(t *testing.T, tr experiment.Trial, state job.State, reason string, requeues int) {
	t.Helper()
	tag, err := b.pool.Exec(b.ctx, `UPDATE jobs SET state = $2,
		status = jsonb_set(jsonb_set(jsonb_set(status, '{state}', to_jsonb($2::text)), '{reason}', to_jsonb($3::text)),
			'{requeues}', to_jsonb($4::int))
		WHERE uid = $1 AND active`, tr.JobUID, string(state), reason, requeues)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
}

// points are loss points from step first on.
func points(first int64, losses ...float64) []experiment.MetricPoint {
	var ps []experiment.MetricPoint
	for i, v := range losses {
		ps = append(ps, experiment.MetricPoint{Name: "loss", Step: first + int64(i), Value: v, Time: time.Now()})
	}
	return ps
}

// A trial whose job is preempted goes on: its job is requeued (QUEUED
// again, the same job), the trial stays RUNNING and nothing replaces it,
// and when the job runs again from its checkpoint the steps it reports
// twice (the resumed run's, and the worker's overlapping log reads) are
// stored once, so its curve has each step once and its objective is the
// last step's.
func TestAPreemptedTrialResumesWithItsMetrics(t *testing.T) {
	b := setup(t)
	e := b.create(t, "resume", spec(2, 1))
	_, trials := b.pass(t, e)
	require.Len(t, trials, 1)
	tr := trials[0]

	b.setJob(t, tr, job.Running, job.ReasonRunning, 0)
	n, err := b.store.TrialMetricsAdd(b.ctx, tr.JobUID, points(1, 0.9, 0.8, 0.7))
	require.NoError(t, err)
	require.Equal(t, 3, n)

	// Preempted: its pods are stopped and the job is back in the queue
	// (job.planRequeue), with a checkpoint of step 2.
	b.setJob(t, tr, job.Queued, job.ReasonPreempted, 1)
	e, trials = b.pass(t, e)
	require.Equal(t, experiment.Running, e.State)
	require.Len(t, trials, 1, "nothing replaces a requeued trial")
	require.Equal(t, experiment.TrialRunning, trials[0].State, trials[0].Reason)
	j := b.job(t, trials[0])
	require.Equal(t, tr.JobUID, j.UID, "the same job, not a new one")
	require.Equal(t, job.Queued, j.Status.State, "requeued, not cancelled")

	// Admitted again, it resumes from step 2's checkpoint and prints steps
	// 3 to 5; the worker's first read of the new pod overlaps the last.
	b.setJob(t, tr, job.Running, job.ReasonRunning, 1)
	n, err = b.store.TrialMetricsAdd(b.ctx, tr.JobUID, points(3, 0.69, 0.6, 0.5))
	require.NoError(t, err)
	require.Equal(t, 2, n, "step 3 was stored before")
	n, err = b.store.TrialMetricsAdd(b.ctx, tr.JobUID, points(4, 0.6, 0.5))
	require.NoError(t, err)
	require.Zero(t, n, "an overlapping read stores nothing")
	e, trials = b.pass(t, e)
	require.Equal(t, experiment.TrialRunning, trials[0].State)
	require.Len(t, trials, 1)

	b.end(t, tr, job.Succeeded)
	e, trials = b.pass(t, e)
	require.Equal(t, experiment.TrialSucceeded, trials[0].State, trials[0].Reason)
	require.InDelta(t, 0.5, *trials[0].Objective, 0, "the last step's value")
	require.Equal(t, 0, e.BestTrial)
	require.Len(t, trials, 2, "the next trial starts once it has ended")

	curves, err := b.store.TrialMetrics(b.ctx, "a", []string{tr.JobUID}, "loss")
	require.NoError(t, err)
	var steps []int64
	var values []float64
	for _, p := range curves[tr.JobUID] {
		steps = append(steps, p.Step)
		values = append(values, p.Value)
	}
	require.Equal(t, []int64{1, 2, 3, 4, 5}, steps, "each step once, across the requeue")
	require.Equal(t, []float64{0.9, 0.8, 0.7, 0.6, 0.5}, values, "a step reported twice keeps its first value")
}
