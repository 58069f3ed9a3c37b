package experimentctl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/trainyard/trainyard/internal/experiment"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tune"
)

// Store is the part of *store.Store the controller uses.
type Store interface {
	ExperimentListRunning(ctx context.Context) ([]experiment.Experiment, error)
	ExperimentSetBest(ctx context.Context, uid string, best int, state experiment.State, reason string) ([]experiment.Trial, bool, error)
	TrialList(ctx context.Context, tenantID, expUID string) ([]experiment.Trial, error)
	TrialCreate(ctx context.Context, t experiment.Trial) (bool, error)
	TrialFinish(ctx context.Context, expUID string, index int, state experiment.TrialState, reason string, objective *float64) (bool, error)
	TrialMetrics(ctx context.Context, tenantID string, jobUIDs []string, name string) (map[string][]experiment.MetricPoint, error)
	JobGetMany(ctx context.Context, tenantID string, uids []string) ([]job.Job, error)
	JobCreate(ctx context.Context, p store.JobCreateParams) (job.Job, bool, error)
	JobCancel(ctx context.Context, tenantID, name string) (job.Job, error)
}

// Config configures a Controller.
type Config struct {
	Store Store
	// Period is the time between passes. Defaults to 5 s.
	Period time.Duration
	// Listener, optional, wakes the controller when jobs change
	// (store.ChannelEvents), so a trial that ended is replaced within
	// MinGap rather than a Period. Nil: passes every Period only.
	Listener store.Subscriber
	// MinGap is the least time from a pass's start to the next one a
	// notification starts. Defaults to 250 ms.
	MinGap time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Controller runs experiments (see the package doc). Run it where one
// runs at a time: Lead, from the scheduler lease's OnLead.
type Controller struct {
	cfg Config
	log *slog.Logger
}

// NewController returns a Controller.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Store == nil {
		return nil, errors.New("experiment: Config.Store is required")
	}
	if cfg.Period == 0 {
		cfg.Period = 5 * time.Second
	}
	if cfg.MinGap == 0 {
		cfg.MinGap = 250 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Controller{cfg: cfg, log: cfg.Logger.With("component", "experiments")}, nil
}

// Lead makes a pass every Period, and when jobs change, until ctx ends.
// A notification starts a pass at once when the last one began MinGap
// ago or more, else when MinGap has passed since it began: passes follow
// a trial's end without delay when they are few, and a burst of changes
// costs at most one pass every MinGap.
func (c *Controller) Lead(ctx context.Context) {
	c.log.Info("experiments controller leading")
	var events <-chan string
	if c.cfg.Listener != nil {
		ch, stop := c.cfg.Listener.Subscribe(store.ChannelEvents)
		defer stop()
		events = ch
	}
	t := time.NewTicker(c.cfg.Period)
	defer t.Stop()
	for {
		began := time.Now()
		if err := c.Pass(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("experiments pass failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-events:
			if wait := time.Until(began.Add(c.cfg.MinGap)); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			// Drain what came meanwhile: this pass reads it.
			for drained := false; !drained; {
				select {
				case <-events:
				default:
					drained = true
				}
			}
		}
	}
}

// Pass reconciles every RUNNING experiment once. An experiment's error is
// logged and the pass goes on; the last one is returned.
func (c *Controller) Pass(ctx context.Context) error {
	exps, err := c.cfg.Store.ExperimentListRunning(ctx)
	if err != nil {
		return err
	}
	var last error
	for i := range exps {
		if err := c.Reconcile(ctx, &exps[i]); err != nil {
			c.log.Warn("experiment not reconciled", "tenant", exps[i].Tenant, "experiment", exps[i].Name, "error", err)
			last = err
		}
	}
	return last
}

// Reconcile makes one pass over a RUNNING experiment: trials whose jobs
// ended finish, the early stopping rule stops trials, the best trial is
// recorded, the experiment ends or new trials start.
func (c *Controller) Reconcile(ctx context.Context, e *experiment.Experiment) error {
	st := c.cfg.Store
	spec := e.Spec.Defaulted()
	obj := spec.TuneObjective()
	trials, err := st.TrialList(ctx, e.Tenant, e.UID)
	if err != nil {
		return err
	}
	uids := make([]string, len(trials))
	for i, t := range trials {
		uids[i] = t.JobUID
	}
	curves, err := st.TrialMetrics(ctx, e.Tenant, uids, spec.Objective.Metric)
	if err != nil {
		return err
	}
	if err := c.finishTrials(ctx, e, trials, curves); err != nil {
		return err
	}
	if stopper := spec.Stopper(); stopper != nil {
		if err := c.stopTrials(ctx, e, stopper, obj, trials, curves); err != nil {
			return err
		}
	}

	history := tuneTrials(trials, curves)
	best := tune.Best(obj, history)
	state, reason := verdict(spec, trials, history, best)
	if state == experiment.Running && best == e.BestTrial {
		// Nothing to write (TrialCreate checks the experiment still runs).
		return c.startTrials(ctx, e, spec, trials, history)
	}
	running, ended, err := st.ExperimentSetBest(ctx, e.UID, best, state, reason)
	if err != nil || !ended {
		return err // !ended: cancelled meanwhile; its trials were ended with it
	}
	if state != experiment.Running {
		c.log.Info("experiment ended", "tenant", e.Tenant, "experiment", e.Name, "state", state, "reason", reason)
		c.cancelJobs(ctx, e.Tenant, running)
		return nil
	}
	return c.startTrials(ctx, e, spec, trials, history)
}

// finishTrials ends the running trials whose jobs ended, and creates the
// jobs of trials that have none yet.
func (c *Controller) finishTrials(ctx context.Context, e *experiment.Experiment, trials []experiment.Trial, curves map[string][]experiment.MetricPoint) error {
	st := c.cfg.Store
	var uids []string
	for _, t := range trials {
		if t.State == experiment.TrialRunning {
			uids = append(uids, t.JobUID)
		}
	}
	jobs, err := st.JobGetMany(ctx, e.Tenant, uids)
	if err != nil {
		return err
	}
	byUID := make(map[string]job.Job, len(jobs))
	for _, j := range jobs {
		byUID[j.UID] = j
	}
	for i := range trials {
		t := &trials[i]
		if t.State != experiment.TrialRunning {
			continue
		}
		j, ok := byUID[t.JobUID]
		if !ok {
			if err := c.createJob(ctx, e, t); err != nil {
				return err
			}
			continue
		}
		if !j.Status.State.Final() {
			continue
		}
		state, reason, value := outcome(e.Spec.Objective.Metric, j, curves[t.JobUID])
		ok, err := st.TrialFinish(ctx, e.UID, t.Index, state, reason, value)
		if err != nil {
			return err
		}
		if ok {
			t.State, t.Reason, t.Objective = state, reason, value
		}
	}
	return nil
}

// outcome is what an ended job makes of its trial.
func outcome(metric string, j job.Job, curve []experiment.MetricPoint) (experiment.TrialState, string, *float64) {
	var last *float64
	if n := len(curve); n > 0 {
		v := curve[n-1].Value
		last = &v
	}
	switch j.Status.State {
	case job.Succeeded:
		if last == nil {
			return experiment.TrialFailed, fmt.Sprintf("its job succeeded but reported no %s", metric), nil
		}
		return experiment.TrialSucceeded, "", last
	case job.Failed:
		return experiment.TrialFailed, "its job failed: " + j.Status.Reason, last
	}
	return experiment.TrialCancelled, "its job was cancelled: " + j.Status.Reason, last
}

// createJob creates a trial's job, or adopts it when a pass before made
// it; a trial whose job was deleted before this pass saw it fails.
func (c *Controller) createJob(ctx context.Context, e *experiment.Experiment, t *experiment.Trial) error {
	j, err := experiment.TrialJob(e, t.Index, t.Assignment)
	if err != nil {
		_, ferr := c.cfg.Store.TrialFinish(ctx, e.UID, t.Index, experiment.TrialFailed, "its job could not be made: "+err.Error(), nil)
		t.State = experiment.TrialFailed
		return ferr
	}
	j.UID = t.JobUID
	_, _, err = c.cfg.Store.JobCreate(ctx, store.JobCreateParams{Job: j, RequestID: experiment.RequestID(e.UID, t.Index)})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrAlreadyExists) || errors.Is(err, store.ErrFailedPrecondition) {
		// None of these passes with a retry: a deleted job stays deleted, a
		// taken id taken, a tenant that is not ACTIVE takes no jobs (so an
		// offboarded tenant's experiment fails its trials and ends).
		reason := "its job was deleted"
		switch {
		case errors.Is(err, store.ErrAlreadyExists):
			reason = fmt.Sprintf("job id %q is taken by another job", j.Name)
		case errors.Is(err, store.ErrFailedPrecondition):
			reason = "its job could not be created: " + err.Error()
		}
		_, ferr := c.cfg.Store.TrialFinish(ctx, e.UID, t.Index, experiment.TrialFailed, reason, nil)
		t.State = experiment.TrialFailed
		return ferr
	}
	return err
}

// stopTrials applies the early stopping rule: each trial it names ends
// EARLY_STOPPED, with its last value as its objective, and its job is
// cancelled (its pods get their grace period).
func (c *Controller) stopTrials(ctx context.Context, e *experiment.Experiment, stopper tune.Stopper, obj tune.Objective, trials []experiment.Trial, curves map[string][]experiment.MetricPoint) error {
	for _, s := range stopper.Stop(obj, tuneTrials(trials, curves)) {
		i, err := strconv.Atoi(s.TrialID)
		if err != nil || i < 0 || i >= len(trials) {
			continue
		}
		t := &trials[i]
		var last *float64
		if cv := curves[t.JobUID]; len(cv) > 0 {
			last = &cv[len(cv)-1].Value
		}
		ok, err := c.cfg.Store.TrialFinish(ctx, e.UID, t.Index, experiment.TrialEarlyStopped, s.Reason, last)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		t.State, t.Reason, t.Objective = experiment.TrialEarlyStopped, s.Reason, last
		c.log.Info("trial stopped early", "tenant", e.Tenant, "experiment", e.Name, "trial", t.Index, "reason", s.Reason)
		c.cancelJobs(ctx, e.Tenant, []experiment.Trial{*t})
	}
	return nil
}

func (c *Controller) cancelJobs(ctx context.Context, tenantID string, trials []experiment.Trial) {
	for _, t := range trials {
		if _, err := c.cfg.Store.JobCancel(ctx, tenantID, t.JobName); err != nil &&
			!errors.Is(err, store.ErrFailedPrecondition) && !errors.Is(err, store.ErrNotFound) {
			c.log.Warn("trial job not cancelled", "tenant", tenantID, "job", t.JobName, "error", err)
		}
	}
}

// tuneTrials is the history as tune sees it, in index order (trials are
// listed by index, and index i is at position i).
func tuneTrials(trials []experiment.Trial, curves map[string][]experiment.MetricPoint) []tune.Trial {
	out := make([]tune.Trial, len(trials))
	for i, t := range trials {
		tt := tune.Trial{ID: strconv.Itoa(t.Index), Assignment: t.Assignment}
		switch t.State {
		case experiment.TrialRunning:
			tt.State = tune.Running
		case experiment.TrialSucceeded:
			tt.State = tune.Succeeded
			if t.Objective != nil {
				tt.Value = *t.Objective
			}
		case experiment.TrialEarlyStopped:
			tt.State = tune.EarlyStopped
		default:
			tt.State = tune.Failed
		}
		for _, p := range curves[t.JobUID] {
			tt.Curve = append(tt.Curve, tune.Point{Step: p.Step, Value: p.Value})
		}
		out[i] = tt
	}
	return out
}

// limit is how many trials the experiment runs at most: maxTrials, or a
// smaller grid's size.
func limit(spec experiment.Spec) int {
	n := spec.MaxTrials
	if g, ok := spec.Suggester().(tune.Grid); ok {
		if size, err := g.Size(spec.Space()); err == nil && size < n {
			n = size
		}
	}
	return n
}

// verdict says whether the experiment goes on (RUNNING) or how it ends.
func verdict(spec experiment.Spec, trials []experiment.Trial, history []tune.Trial, best int) (experiment.State, string) {
	obj := spec.TuneObjective()
	if g := spec.Objective.Goal; g != nil && best >= 0 && obj.Reached(history[best].Value, *g) {
		return experiment.Succeeded, fmt.Sprintf("trial %d reached the goal: %s %v (goal %v)", best, obj.Metric, history[best].Value, *g)
	}
	failed, unfinished := 0, 0
	for _, t := range trials {
		switch t.State {
		case experiment.TrialFailed:
			failed++
		case experiment.TrialRunning:
			unfinished++
		}
	}
	if failed > spec.MaxFailedTrials {
		return experiment.Failed, fmt.Sprintf("%d trials failed; at most %d may (maxFailedTrials)", failed, spec.MaxFailedTrials)
	}
	if len(trials) >= limit(spec) && unfinished == 0 {
		if best < 0 {
			return experiment.Failed, fmt.Sprintf("all %d trials ended and none succeeded", len(trials))
		}
		return experiment.Succeeded, fmt.Sprintf("all %d trials ended; the best is trial %d with %s %v", len(trials), best, obj.Metric, history[best].Value)
	}
	return experiment.Running, ""
}

// startTrials starts trials up to parallelism, from the algorithm's
// suggestions: the rng is seeded from the experiment's seed and the number
// of trials so far, so a restarted controller suggests the same.
func (c *Controller) startTrials(ctx context.Context, e *experiment.Experiment, spec experiment.Spec, trials []experiment.Trial, history []tune.Trial) error {
	unfinished := 0
	for _, t := range trials {
		if t.State == experiment.TrialRunning {
			unfinished++
		}
	}
	n := min(spec.Parallelism-unfinished, limit(spec)-len(trials))
	if n <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(spec.Seed, uint64(len(trials))))
	as, err := spec.Suggester().Suggest(spec.Space(), spec.TuneObjective(), history, n, rng)
	if err != nil && !errors.Is(err, tune.ErrExhausted) {
		return fmt.Errorf("suggest: %w", err)
	}
	for k, a := range as {
		id, err := uuid.NewV7()
		if err != nil {
			return err
		}
		t := experiment.Trial{ExperimentUID: e.UID, Index: len(trials) + k, Tenant: e.Tenant, JobUID: id.String(),
			JobName: experiment.JobName(e.Name, len(trials)+k), Assignment: a, State: experiment.TrialRunning}
		created, err := c.cfg.Store.TrialCreate(ctx, t)
		if err != nil || !created {
			return err // !created: cancelled meanwhile, or another controller was first
		}
		if err := c.createJob(ctx, e, &t); err != nil {
			return err
		}
	}
	return nil
}
