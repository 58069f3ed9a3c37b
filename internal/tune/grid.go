package tune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/floats"
)

// MaxGridSize bounds the points of a grid search; a bigger grid is an error,
// not a suggestion loop that never reaches its end.
const MaxGridSize = 100_000

// DefaultPointsPerDouble is Grid.PointsPerDouble when it is zero.
const DefaultPointsPerDouble = 5

// Grid suggests every combination of parameter values once, in a fixed
// order (the last parameter varies fastest), skipping those any trial of
// the history already has. A double takes PointsPerDouble evenly spaced
// values, both ends included (evenly spaced in the logarithm on a log
// scale); an int every integer of its range; a categorical or discrete
// parameter each of its choices.
type Grid struct {
	// PointsPerDouble is the number of values of each double parameter, at
	// least 2. Defaults to DefaultPointsPerDouble.
	PointsPerDouble int
}

// Size is the number of points of the grid over space, or an error when the
// grid is bigger than MaxGridSize or PointsPerDouble is out of range.
func (g Grid) Size(space Space) (int, error) {
	axes, err := g.axes(space)
	if err != nil {
		return 0, err
	}
	size := 1
	for _, ax := range axes {
		size *= len(ax)
	}
	return size, nil
}

// axes are each parameter's values, formatted.
func (g Grid) axes(space Space) ([][]string, error) {
	per := g.PointsPerDouble
	if per == 0 {
		per = DefaultPointsPerDouble
	}
	if per < 2 || per > MaxGridSize {
		return nil, fmt.Errorf("grid points per double parameter: %d is not in [2, %d]", per, MaxGridSize)
	}
	axes := make([][]string, len(space.Params))
	size := 1
	for i, p := range space.Params {
		var xs []float64
		switch p.Kind {
		case KindDouble:
			xs = make([]float64, per)
			if p.Scale == ScaleLog {
				floats.LogSpan(xs, p.Min, p.Max)
			} else {
				floats.Span(xs, p.Min, p.Max)
			}
		case KindInt:
			if p.Max-p.Min+1 > MaxGridSize {
				return nil, fmt.Errorf("grid: int parameter %q has %d values; a grid has at most %d points",
					p.Name, int64(p.Max-p.Min)+1, MaxGridSize)
			}
			xs = make([]float64, int(p.Max-p.Min)+1)
			for k := range xs {
				xs[k] = p.Min + float64(k)
			}
		case KindCategorical:
			xs = indices(len(p.Values))
		case KindDiscrete:
			xs = indices(len(p.Points))
		default:
			return nil, fmt.Errorf("grid: parameter %q has kind %q", p.Name, p.Kind)
		}
		if size > MaxGridSize/len(xs) {
			return nil, fmt.Errorf("grid: more than %d points (at parameter %q); lower the points per double or narrow the ranges",
				MaxGridSize, p.Name)
		}
		size *= len(xs)
		axes[i] = make([]string, len(xs))
		for k, x := range xs {
			if p.Kind == KindDouble {
				// Twelve significant digits make 0.01 of a log grid read
				// 0.01, not 0.010000000000000002; the clamp keeps the ends
				// inside the range.
				x, _ = strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
				x = math.Max(p.Min, math.Min(p.Max, x))
			}
			axes[i][k] = p.Format(x)
		}
	}
	return axes, nil
}

func indices(n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i)
	}
	return xs
}

// Suggest implements Algorithm. It draws nothing from rng. It returns
// ErrExhausted, with the points that were left, when fewer than n remain.
func (g Grid) Suggest(space Space, _ Objective, history []Trial, n int, _ *rand.Rand) ([]Assignment, error) {
	if err := checkRequest(space, n); err != nil {
		return nil, err
	}
	axes, err := g.axes(space)
	if err != nil {
		return nil, err
	}
	tried := make(map[string]bool, len(history))
	for _, t := range history {
		tried[gridKey(space, t.Assignment)] = true
	}
	var out []Assignment
	idx := make([]int, len(axes)) // a mixed-radix counter, last digit fastest
	for len(out) < n {
		a := make(Assignment, len(axes))
		for i, p := range space.Params {
			a[p.Name] = axes[i][idx[i]]
		}
		if k := gridKey(space, a); !tried[k] {
			tried[k] = true
			out = append(out, a)
		}
		if !increment(idx, axes) {
			break
		}
	}
	if len(out) < n {
		return out, ErrExhausted
	}
	return out, nil
}

func increment(idx []int, axes [][]string) bool {
	for i := len(idx) - 1; i >= 0; i-- {
		idx[i]++
		if idx[i] < len(axes[i]) {
			return true
		}
		idx[i] = 0
	}
	return false
}

func gridKey(space Space, a Assignment) string {
	var b strings.Builder
	for _, p := range space.Params {
		b.WriteString(a[p.Name])
		b.WriteByte(0)
	}
	return b.String()
}
