package experiment

import (
	"strconv"
	"time"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tune"
)

// Labels on every trial's job: which experiment, which trial.
const (
	LabelExperiment = "trainyard.dev/experiment"
	LabelTrial      = "trainyard.dev/trial"
)

// Bounds of a spec.
const (
	MaxTrials      = 1000
	MaxParallelism = 100
	MaxParameters  = 32
	// MaxNameLength leaves room for a trial's suffix (-999) in its job's id.
	MaxNameLength = 40
)

// State is where an experiment is in its life.
type State string

// States of an experiment.
const (
	Running   State = "RUNNING"
	Succeeded State = "SUCCEEDED"
	Failed    State = "FAILED"
	Cancelled State = "CANCELLED"
)

// TrialState is where a trial is in its life.
type TrialState string

// States of a trial.
const (
	TrialRunning      TrialState = "RUNNING"
	TrialSucceeded    TrialState = "SUCCEEDED"
	TrialFailed       TrialState = "FAILED"
	TrialEarlyStopped TrialState = "EARLY_STOPPED"
	// TrialCancelled: the experiment ended (cancelled, goal reached, too
	// many failures) while the trial ran, or its job was cancelled by hand.
	TrialCancelled TrialState = "CANCELLED"
)

// Finished reports whether the trial has ended.
func (s TrialState) Finished() bool { return s != TrialRunning }

// Experiment is one hyperparameter search.
type Experiment struct {
	Tenant  string
	Name    string // a DNS-1035 label of at most MaxNameLength characters
	UID     string
	Creator string
	Spec    Spec
	State   State
	Reason  string
	// BestTrial is the index of the best succeeded trial; -1 when none.
	BestTrial  int
	CreateTime time.Time
	UpdateTime time.Time
}

// Spec is what an experiment searches and how. Its JSON form is stored
// in Postgres: add fields, never rename.
type Spec struct {
	// Template is each trial's job, with ${trial.NAME} placeholders in
	// command, args, env values and pod annotation values.
	Template   Template    `json:"template"`
	Parameters []Parameter `json:"parameters"`
	Objective  Objective   `json:"objective"`
	Algorithm  Algorithm   `json:"algorithm"`
	// Parallelism is how many trials run at once. Defaults to 1.
	Parallelism int `json:"parallelism,omitempty"`
	// MaxTrials is how many trials the experiment runs at most. Required.
	MaxTrials int `json:"maxTrials"`
	// MaxFailedTrials: the experiment fails when more trials than this
	// have failed. Defaults to MaxTrials (failures never end it early).
	MaxFailedTrials int            `json:"maxFailedTrials,omitempty"`
	EarlyStopping   *EarlyStopping `json:"earlyStopping,omitempty"`
	// Seed makes the suggestions reproducible.
	Seed uint64 `json:"seed,omitempty"`
}

// Template is a trial job's labels and spec.
type Template struct {
	Labels map[string]string `json:"labels,omitempty"`
	Spec   job.Spec          `json:"spec"`
}

// Parameter is one dimension of the search space (tune.Param).
type Parameter struct {
	Name   string     `json:"name"`
	Kind   tune.Kind  `json:"kind"`
	Scale  tune.Scale `json:"scale,omitempty"`
	Min    float64    `json:"min,omitempty"`
	Max    float64    `json:"max,omitempty"`
	Values []string   `json:"values,omitempty"`
	Points []float64  `json:"points,omitempty"`
}

// Objective is the metric optimised, its direction, and an optional goal
// that ends the experiment at the first succeeded trial reaching it.
type Objective struct {
	Metric    string         `json:"metric"`
	Direction tune.Direction `json:"direction"`
	Goal      *float64       `json:"goal,omitempty"`
}

// Algorithm names.
const (
	AlgorithmRandom = "random"
	AlgorithmGrid   = "grid"
	AlgorithmTPE    = "tpe"
)

// Algorithm is the suggestion algorithm and its settings.
type Algorithm struct {
	// Name is random, grid or tpe.
	Name string        `json:"name"`
	Grid *GridSettings `json:"grid,omitempty"`
	TPE  *TPESettings  `json:"tpe,omitempty"`
}

// GridSettings are tune.Grid's.
type GridSettings struct {
	PointsPerDouble int `json:"pointsPerDouble,omitempty"`
}

// TPESettings are tune.TPE's.
type TPESettings struct {
	Gamma         float64 `json:"gamma,omitempty"`
	StartupTrials int     `json:"startupTrials,omitempty"`
	Candidates    int     `json:"candidates,omitempty"`
	PriorWeight   float64 `json:"priorWeight,omitempty"`
}

// Early stopping rules.
const (
	RuleMedian = "median"
	RuleASHA   = "asha"
)

// EarlyStopping is the rule that stops lagging trials.
type EarlyStopping struct {
	// Rule is median or asha.
	Rule       string          `json:"rule"`
	MedianStop *MedianSettings `json:"medianStop,omitempty"`
	ASHA       *ASHASettings   `json:"asha,omitempty"`
}

// MedianSettings are tune.MedianStop's.
type MedianSettings struct {
	MinTrials  int   `json:"minTrials,omitempty"`
	GraceSteps int64 `json:"graceSteps,omitempty"`
}

// ASHASettings are tune.ASHA's.
type ASHASettings struct {
	MinResource int64 `json:"minResource"`
	Eta         int64 `json:"eta,omitempty"`
	MaxResource int64 `json:"maxResource,omitempty"`
}

// Trial is one run of the template with an assignment: one job.
type Trial struct {
	ExperimentUID string
	Index         int
	Tenant        string
	JobUID        string
	JobName       string
	Assignment    tune.Assignment
	State         TrialState
	Reason        string
	// Objective is the last reported value of the objective metric when
	// the trial ended; nil when it reported none.
	Objective  *float64
	CreateTime time.Time
	UpdateTime time.Time
}

// MetricPoint is one reported value of a trial's metric.
type MetricPoint struct {
	Name  string
	Step  int64
	Value float64
	Time  time.Time
}

// JobName is the id of trial index's job: deterministic, so a retried
// create adopts the job rather than making a second.
func JobName(experiment string, index int) string {
	return experiment + "-" + strconv.Itoa(index)
}

// RequestID is the idempotency key of trial index's job create.
func RequestID(experimentUID string, index int) string {
	return "experiment-" + experimentUID + "-" + strconv.Itoa(index)
}

// Defaulted returns s with its defaults filled in.
func (s Spec) Defaulted() Spec {
	if s.Parallelism == 0 {
		s.Parallelism = 1
	}
	if s.MaxFailedTrials == 0 {
		s.MaxFailedTrials = s.MaxTrials
	}
	if s.Algorithm.Name == "" {
		s.Algorithm.Name = AlgorithmRandom
	}
	return s
}

// Space is the search space as tune sees it.
func (s Spec) Space() tune.Space {
	ps := make([]tune.Param, len(s.Parameters))
	for i, p := range s.Parameters {
		ps[i] = tune.Param{Name: p.Name, Kind: p.Kind, Scale: p.Scale, Min: p.Min, Max: p.Max, Values: p.Values, Points: p.Points}
	}
	return tune.Space{Params: ps}
}

// TuneObjective is the objective as tune sees it.
func (s Spec) TuneObjective() tune.Objective {
	return tune.Objective{Metric: s.Objective.Metric, Direction: s.Objective.Direction}
}

// Suggester is the spec's algorithm.
func (s Spec) Suggester() tune.Algorithm {
	switch s.Algorithm.Name {
	case AlgorithmGrid:
		var g tune.Grid
		if s.Algorithm.Grid != nil {
			g.PointsPerDouble = s.Algorithm.Grid.PointsPerDouble
		}
		return g
	case AlgorithmTPE:
		var t tune.TPE
		if c := s.Algorithm.TPE; c != nil {
			t = tune.TPE{Gamma: c.Gamma, StartupTrials: c.StartupTrials, Candidates: c.Candidates, PriorWeight: c.PriorWeight}
		}
		return t
	}
	return tune.Random{}
}

// Stopper is the spec's early stopping rule; nil when it has none.
func (s Spec) Stopper() tune.Stopper {
	e := s.EarlyStopping
	if e == nil {
		return nil
	}
	switch e.Rule {
	case RuleMedian:
		var m tune.MedianStop
		if e.MedianStop != nil {
			m = tune.MedianStop{MinTrials: e.MedianStop.MinTrials, GraceSteps: e.MedianStop.GraceSteps}
		}
		return m
	case RuleASHA:
		var a tune.ASHA
		if e.ASHA != nil {
			a = tune.ASHA{MinResource: e.ASHA.MinResource, Eta: e.ASHA.Eta, MaxResource: e.ASHA.MaxResource}
		}
		return a
	}
	return nil
}
