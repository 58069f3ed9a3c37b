package tune

import (
	"math"
	"math/rand/v2"
)

// Random suggests assignments drawn independently and uniformly: doubles
// and ints uniformly in their range, or in the logarithm of their range on a
// log scale; categorical values and discrete points each with the same
// probability. It ignores the history.
type Random struct{}

// Suggest implements Algorithm.
func (Random) Suggest(space Space, _ Objective, _ []Trial, n int, rng *rand.Rand) ([]Assignment, error) {
	if err := checkRequest(space, n); err != nil {
		return nil, err
	}
	out := make([]Assignment, n)
	for i := range out {
		out[i] = randomAssignment(space, rng)
	}
	return out, nil
}

func randomAssignment(space Space, rng *rand.Rand) Assignment {
	a := make(Assignment, len(space.Params))
	for _, p := range space.Params {
		a[p.Name] = p.Format(p.fromUnit(rng.Float64()))
	}
	return a
}

// fromUnit maps u in [0, 1) onto p's values so that a uniform u gives the
// distribution Random promises: a number for a double or int (rounded and
// clamped), an index into Values or Points for the others.
func (p Param) fromUnit(u float64) float64 {
	switch p.Kind {
	case KindCategorical:
		return math.Min(math.Floor(u*float64(len(p.Values))), float64(len(p.Values)-1))
	case KindDiscrete:
		return math.Min(math.Floor(u*float64(len(p.Points))), float64(len(p.Points)-1))
	}
	lo, hi := p.bounds()
	x := p.fromModel(lo + u*(hi-lo))
	if p.Kind == KindInt {
		x = math.Round(x)
	}
	return math.Max(p.Min, math.Min(p.Max, x))
}

// bounds is the interval a double or int is modelled on: its range, in
// logarithms on a log scale, widened by half a unit each side for an int so
// that both ends are as likely as every value between.
func (p Param) bounds() (lo, hi float64) {
	lo, hi = p.Min, p.Max
	if p.Kind == KindInt {
		// Positive on a log scale too: there an int's min is at least 1.
		lo, hi = lo-0.5, hi+0.5
	}
	if p.Scale == ScaleLog {
		return math.Log(lo), math.Log(hi)
	}
	return lo, hi
}

// toModel and fromModel convert between a value and the axis it is
// modelled on (its logarithm on a log scale).
func (p Param) toModel(x float64) float64 {
	if p.Scale == ScaleLog {
		return math.Log(x)
	}
	return x
}

func (p Param) fromModel(y float64) float64 {
	if p.Scale == ScaleLog {
		return math.Exp(y)
	}
	return y
}
