package tune

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Direction says whether smaller or larger objective values are better.
type Direction string

// Directions.
const (
	Minimize Direction = "minimize"
	Maximize Direction = "maximize"
)

// Objective is what an experiment optimises: a metric its trials report,
// and which way is better.
type Objective struct {
	Metric    string
	Direction Direction
}

// Validate returns the objective's problems at paths under "objective".
func (o Objective) Validate() []FieldViolation {
	var v []FieldViolation
	if err := ValidMetricName(o.Metric); err != nil {
		v = append(v, FieldViolation{Field: "objective.metric", Description: err.Error()})
	}
	if o.Direction != Minimize && o.Direction != Maximize {
		v = append(v, FieldViolation{Field: "objective.direction",
			Description: fmt.Sprintf("%q is not a direction (minimize or maximize)", o.Direction)})
	}
	return v
}

// loss turns an objective value into one where smaller is better. It is the
// only place the direction is looked at: every algorithm and stopping rule
// works on losses.
func (o Objective) loss(value float64) float64 {
	if o.Direction == Maximize {
		return -value
	}
	return value
}

// value is loss's inverse, for messages that quote a figure.
func (o Objective) value(loss float64) float64 { return o.loss(loss) }

// Better reports whether value a is strictly better than value b.
func (o Objective) Better(a, b float64) bool { return o.loss(a) < o.loss(b) }

// Reached reports whether value meets the goal: at most it when
// minimising, at least it when maximising. An experiment with a goal ends
// at the first succeeded trial that reaches it.
func (o Objective) Reached(value, goal float64) bool { return o.loss(value) <= o.loss(goal) }

// Best returns the index of the succeeded trial with the best value, the
// earliest of equals; -1 when no trial has succeeded.
func Best(obj Objective, trials []Trial) int {
	best := -1
	for i, t := range trials {
		if t.State == Succeeded && !math.IsNaN(t.Value) && (best < 0 || obj.Better(t.Value, trials[best].Value)) {
			best = i
		}
	}
	return best
}

// State is where a trial is in its life.
type State string

// States of a trial.
const (
	Running      State = "running"
	Succeeded    State = "succeeded"
	Failed       State = "failed"
	EarlyStopped State = "early-stopped"
)

// Point is one reported value of the objective metric.
type Point struct {
	Step  int64
	Value float64
}

// Trial is one run of the job template with an assignment, as the
// algorithms and stopping rules see it.
type Trial struct {
	// ID names the trial in Stop decisions and in errors.
	ID         string
	Assignment Assignment
	State      State
	// Value is the final objective value of a Succeeded trial.
	Value float64
	// Curve is the trial's intermediate objective values, by increasing
	// step (one point per step).
	Curve []Point
}

// ErrExhausted is returned by an algorithm that has no new assignment to
// suggest: a grid whose every point has been tried.
var ErrExhausted = errors.New("the search space is exhausted")

// Algorithm suggests assignments to try next.
//
// Suggest returns up to n new assignments for space, given every trial of
// the experiment so far (running, finished and failed). It draws all its
// randomness from rng, so a caller that seeds rng the same way (say, from
// the experiment's seed and the number of trials so far) gets the same
// suggestions. Fewer than n, with ErrExhausted, when the space has no more
// to offer. An invalid space (see Space.Validate) is an error.
type Algorithm interface {
	Suggest(space Space, obj Objective, history []Trial, n int, rng *rand.Rand) ([]Assignment, error)
}

// checkRequest is what every Suggest checks first: an invalid space would
// make the algorithms index past a list or take the log of zero.
func checkRequest(space Space, n int) error {
	if n < 0 {
		return fmt.Errorf("%d suggestions asked for", n)
	}
	if v := space.Validate(); len(v) > 0 {
		return fmt.Errorf("invalid search space: %s: %s", v[0].Field, v[0].Description)
	}
	return nil
}

// observation is a finished trial as a point of the search space (one
// number per parameter: see Param.parse) and its loss.
type observation struct {
	x    []float64
	loss float64
	// stopped: the trial was stopped early, so its loss is an intermediate
	// one and only says it was worse than its peers.
	stopped bool
}

// observations decodes the trials with an objective value: succeeded
// trials, and early-stopped trials that reported a point. Running and
// failed trials say nothing about the objective yet.
func observations(space Space, obj Objective, history []Trial) ([]observation, error) {
	var out []observation
	for i, t := range history {
		var o observation
		switch {
		case t.State == Succeeded:
			o.loss = obj.loss(t.Value)
		case t.State == EarlyStopped && len(t.Curve) > 0:
			o.loss = obj.loss(t.Curve[len(t.Curve)-1].Value)
			o.stopped = true
		default:
			continue
		}
		if math.IsNaN(o.loss) || math.IsInf(o.loss, 0) {
			continue
		}
		o.x = make([]float64, len(space.Params))
		for j, p := range space.Params {
			s, ok := t.Assignment[p.Name]
			if !ok {
				return nil, fmt.Errorf("trial %d (%s): no value for parameter %q", i, t.ID, p.Name)
			}
			x, err := p.parse(s)
			if err != nil {
				return nil, fmt.Errorf("trial %d (%s): %w", i, t.ID, err)
			}
			o.x[j] = x
		}
		out = append(out, o)
	}
	return out, nil
}
