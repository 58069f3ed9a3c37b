package tune

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Stop is a decision to stop a running trial early.
type Stop struct {
	TrialID string
	// Reason says which rule stopped the trial, citing the figures.
	Reason string
}

// Stopper decides which running trials to stop now, from every trial's
// curve of the objective metric. It is pure: the experiment controller
// calls it whenever new points arrive and stops what it returns.
type Stopper interface {
	Stop(obj Objective, trials []Trial) []Stop
}

// MedianStop is the median stopping rule: a running trial whose latest
// point is at step s is stopped when the best value it has reported so far
// is worse than the median of the running averages, up to step s, of the
// other trials that reached step s (have a point at or past it). Failed
// trials do not count.
type MedianStop struct {
	// MinTrials is how many other trials must have reached step s before
	// the rule judges a trial there. Defaults to 5.
	MinTrials int
	// GraceSteps: a trial is not judged before this step.
	GraceSteps int64
}

// Validate returns the rule's problems at paths under "medianStop".
func (r MedianStop) Validate() []FieldViolation {
	var v []FieldViolation
	if r.MinTrials < 0 {
		v = append(v, FieldViolation{Field: "medianStop.minTrials", Description: fmt.Sprintf("%d is negative", r.MinTrials)})
	}
	if r.GraceSteps < 0 {
		v = append(v, FieldViolation{Field: "medianStop.graceSteps", Description: fmt.Sprintf("%d is negative", r.GraceSteps)})
	}
	return v
}

// Stop implements Stopper.
func (r MedianStop) Stop(obj Objective, trials []Trial) []Stop {
	minTrials := r.MinTrials
	if minTrials == 0 {
		minTrials = 5
	}
	var stops []Stop
	for i, t := range trials {
		if t.State != Running || len(t.Curve) == 0 {
			continue
		}
		s := t.Curve[len(t.Curve)-1].Step
		if s < r.GraceSteps {
			continue
		}
		var averages []float64
		for j, o := range trials {
			if j == i || o.State == Failed || len(o.Curve) == 0 || o.Curve[len(o.Curve)-1].Step < s {
				continue
			}
			averages = append(averages, runningAverage(obj, o.Curve, s))
		}
		if len(averages) < minTrials {
			continue
		}
		best := bestLoss(obj, t.Curve)
		if median := median(averages); best > median {
			stops = append(stops, Stop{TrialID: t.ID, Reason: fmt.Sprintf(
				"median stopping: at step %d the best %s so far, %v, is worse than %v, the median of %d other trials' running averages to step %d",
				s, obj.Metric, obj.value(best), obj.value(median), len(averages), s)})
		}
	}
	return stops
}

// runningAverage is the mean loss of the points of curve up to step s.
func runningAverage(obj Objective, curve []Point, s int64) float64 {
	sum, n := 0.0, 0
	for _, p := range curve {
		if p.Step > s {
			break
		}
		sum += obj.loss(p.Value)
		n++
	}
	return sum / float64(n)
}

func bestLoss(obj Objective, curve []Point) float64 {
	best := math.Inf(1)
	for _, p := range curve {
		best = math.Min(best, obj.loss(p.Value))
	}
	return best
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// ASHA is asynchronous successive halving as a stopping rule. Rungs are at
// steps MinResource·Eta^k (k = 0, 1, …, below MaxResource if set). A trial
// reaches a rung when it reports a point at or past the rung's step; its
// value there is the first such point's. A running trial is judged at the
// highest rung it has reached, against every trial (but failed ones) that
// reached that rung: it continues only if it is in the top 1/Eta of them,
// that is if fewer than n/Eta of the n trials there did strictly better.
// So the first trial at a rung always continues, and ties continue
// together. A trial is judged again whenever others reach its rung, so a
// trial that was in the top early may be stopped later, before it reaches
// the next rung.
type ASHA struct {
	// MinResource is the step of the first rung, at least 1.
	MinResource int64
	// Eta is the reduction factor, at least 2. Defaults to 3.
	Eta int64
	// MaxResource: no rung at or past this step; 0 for no bound.
	MaxResource int64
}

func (r ASHA) eta() int64 {
	if r.Eta == 0 {
		return 3
	}
	return r.Eta
}

// Validate returns the rule's problems at paths under "asha".
func (r ASHA) Validate() []FieldViolation {
	var v []FieldViolation
	if r.MinResource < 1 {
		v = append(v, FieldViolation{Field: "asha.minResource", Description: fmt.Sprintf("%d is less than 1", r.MinResource)})
	}
	if r.eta() < 2 {
		v = append(v, FieldViolation{Field: "asha.eta", Description: fmt.Sprintf("%d is less than 2", r.Eta)})
	}
	if r.MaxResource < 0 || (r.MaxResource > 0 && r.MaxResource <= r.MinResource) {
		v = append(v, FieldViolation{Field: "asha.maxResource",
			Description: fmt.Sprintf("%d is not 0 or greater than minResource %d", r.MaxResource, r.MinResource)})
	}
	return v
}

// rung is the step of the highest rung a curve has reached, and the
// trial's value there; ok is false before the first rung.
func (r ASHA) rung(curve []Point) (step int64, at Point, ok bool) {
	if len(curve) == 0 || r.MinResource < 1 || r.eta() < 2 {
		return 0, Point{}, false
	}
	last := curve[len(curve)-1].Step
	for rung := r.MinResource; rung <= last && (r.MaxResource == 0 || rung < r.MaxResource); {
		step, ok = rung, true
		if rung > math.MaxInt64/r.eta() {
			break
		}
		rung *= r.eta()
	}
	if !ok {
		return 0, Point{}, false
	}
	at, ok = valueAt(curve, step)
	return step, at, ok
}

// valueAt is the point at which a curve reached the step: its first point
// at or past it.
func valueAt(curve []Point, step int64) (Point, bool) {
	i, _ := slices.BinarySearchFunc(curve, step, func(p Point, s int64) int { return cmp.Compare(p.Step, s) })
	if i == len(curve) {
		return Point{}, false
	}
	return curve[i], true
}

// Stop implements Stopper.
func (r ASHA) Stop(obj Objective, trials []Trial) []Stop {
	var stops []Stop
	for i, t := range trials {
		if t.State != Running {
			continue
		}
		rung, mine, ok := r.rung(t.Curve)
		if !ok {
			continue
		}
		n, better := 1, 0
		for j, o := range trials {
			if j == i || o.State == Failed {
				continue
			}
			p, reached := valueAt(o.Curve, rung)
			if !reached {
				continue
			}
			n++
			if obj.loss(p.Value) < obj.loss(mine.Value) {
				better++
			}
		}
		if better*int(r.eta()) >= n {
			stops = append(stops, Stop{TrialID: t.ID, Reason: fmt.Sprintf(
				"successive halving: at the rung of step %d, %d of the %d trials there have a better %s than this trial's %v (step %d); only the top 1/%d continue",
				rung, better, n, obj.Metric, mine.Value, mine.Step, r.eta())})
		}
	}
	return stops
}
