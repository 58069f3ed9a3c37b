package tune

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRandomIsReproducible(t *testing.T) {
	draw := func(seed uint64) []Assignment {
		as, err := Random{}.Suggest(space8, Objective{}, nil, 20, rand.New(rand.NewPCG(seed, 7)))
		require.NoError(t, err)
		return as
	}
	require.Equal(t, draw(1), draw(1))
	require.NotEqual(t, draw(1), draw(2))
}

// TestRandomDistribution: every draw is a value of its parameter, and the
// draws spread as the scale says: uniformly over a linear range, over the
// decades of a log range, over the choices.
func TestRandomDistribution(t *testing.T) {
	const n = 20000
	as, err := Random{}.Suggest(space8, Objective{}, nil, n, rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, err)
	decades := map[int]int{}   // lr by decade: 1e-5.., 1e-4.., 1e-3.., 1e-2..
	counts := map[string]int{} // the values of the choice and int parameters
	var lowMomentum, smallBatch int
	for _, a := range as {
		require.NoError(t, space8.Check(a))
		lr := num(t, a["lr"])
		decades[int(math.Floor(math.Log10(lr)))]++
		if num(t, a["momentum"]) < 0.99/2 {
			lowMomentum++
		}
		if num(t, a["batch"]) < 128 { // 16..127 is half of 16..1024 in log terms
			smallBatch++
		}
		counts["optimizer="+a["optimizer"]]++
		counts["width="+a["width"]]++
		counts["layers="+a["layers"]]++
	}
	for d := -5; d <= -2; d++ {
		require.InDelta(t, 0.25, float64(decades[d])/n, 0.02, "share of lr in decade 1e%d", d)
	}
	require.InDelta(t, 0.5, float64(lowMomentum)/n, 0.02, "share of momentum below the middle")
	require.InDelta(t, 0.5, float64(smallBatch)/n, 0.02, "share of batch below 128")
	for _, v := range []string{"sgd", "adam", "adamw", "rmsprop"} {
		require.InDelta(t, 0.25, float64(counts["optimizer="+v])/n, 0.02, "share of optimizer %s", v)
	}
	for _, v := range []string{"64", "128", "256", "512", "1024"} {
		require.InDelta(t, 0.2, float64(counts["width="+v])/n, 0.02, "share of width %s", v)
	}
	for v := 1; v <= 12; v++ { // the ends as likely as the middle
		require.InDelta(t, 1.0/12, float64(counts["layers="+strconv.Itoa(v)])/n, 0.015, "share of layers %d", v)
	}
}

func num(t testing.TB, s string) float64 {
	x, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return x
}

var gridSpace = Space{Params: []Param{
	{Name: "x", Kind: KindDouble, Min: 0, Max: 1},
	{Name: "lr", Kind: KindDouble, Scale: ScaleLog, Min: 1e-3, Max: 1e-1},
	{Name: "n", Kind: KindInt, Scale: ScaleLog, Min: 1, Max: 3},
	{Name: "opt", Kind: KindCategorical, Values: []string{"sgd", "adam"}},
	{Name: "w", Kind: KindDiscrete, Points: []float64{0.5, 64}},
}}

// TestGridCoversTheSpaceExactly: asked in batches, with the trials so far
// as history, grid search suggests every point of the grid once, then says
// it is exhausted.
func TestGridCoversTheSpaceExactly(t *testing.T) {
	want := map[string]bool{}
	for _, x := range []string{"0", "0.5", "1"} {
		for _, lr := range []string{"0.001", "0.01", "0.1"} {
			for _, n := range []string{"1", "2", "3"} {
				for _, opt := range []string{"sgd", "adam"} {
					for _, w := range []string{"0.5", "64"} {
						want[fmt.Sprint(x, " ", lr, " ", n, " ", opt, " ", w)] = true
					}
				}
			}
		}
	}
	g := Grid{PointsPerDouble: 3}
	size, err := g.Size(gridSpace)
	require.NoError(t, err)
	require.Equal(t, len(want), size)

	var history []Trial
	got := map[string]bool{}
	for {
		as, err := g.Suggest(gridSpace, Objective{}, history, 10, nil)
		for _, a := range as {
			require.NoError(t, gridSpace.Check(a))
			k := fmt.Sprint(a["x"], " ", a["lr"], " ", a["n"], " ", a["opt"], " ", a["w"])
			require.False(t, got[k], "suggested twice: %s", k)
			got[k] = true
			// Some trials fail: a failed point is not suggested again.
			state := Succeeded
			if len(history)%7 == 0 {
				state = Failed
			}
			history = append(history, Trial{Assignment: a, State: state})
		}
		if errors.Is(err, ErrExhausted) {
			require.Len(t, as, size%10)
			break
		}
		require.NoError(t, err)
		require.Len(t, as, 10)
	}
	require.Equal(t, want, got)
	as, err := g.Suggest(gridSpace, Objective{}, history, 1, nil)
	require.ErrorIs(t, err, ErrExhausted)
	require.Empty(t, as)
}

func TestGridSkipsWhatTheHistoryHas(t *testing.T) {
	space := Space{Params: []Param{{Name: "x", Kind: KindInt, Min: 1, Max: 4}}}
	history := []Trial{{Assignment: Assignment{"x": "2"}, State: Running}, {Assignment: Assignment{"x": "4"}, State: Failed}}
	as, err := Grid{}.Suggest(space, Objective{}, history, 5, nil)
	require.ErrorIs(t, err, ErrExhausted)
	require.Equal(t, []Assignment{{"x": "1"}, {"x": "3"}}, as)
}

func TestGridSize(t *testing.T) {
	_, err := Grid{PointsPerDouble: 1}.Size(gridSpace)
	require.EqualError(t, err, "grid points per double parameter: 1 is not in [2, 100000]")
	n, err := Grid{}.Size(gridSpace) // five points per double by default
	require.NoError(t, err)
	require.Equal(t, 5*5*3*2*2, n)
	wide := Space{Params: []Param{{Name: "seed", Kind: KindInt, Min: 0, Max: 1e6}}}
	_, err = Grid{}.Size(wide)
	require.EqualError(t, err, `grid: int parameter "seed" has 1000001 values; a grid has at most 100000 points`)
	many := Space{Params: []Param{
		{Name: "a", Kind: KindInt, Min: 1, Max: 1000},
		{Name: "b", Kind: KindInt, Min: 1, Max: 1000},
	}}
	_, err = Grid{}.Size(many)
	require.EqualError(t, err, `grid: more than 100000 points (at parameter "b"); lower the points per double or narrow the ranges`)
}

func TestSuggestChecksItsInput(t *testing.T) {
	bad := Space{Params: []Param{{Name: "opt", Kind: KindCategorical}}}
	for _, alg := range []Algorithm{Random{}, Grid{}, TPE{}} {
		_, err := alg.Suggest(bad, Objective{}, nil, 1, rand.New(rand.NewPCG(1, 1)))
		require.EqualError(t, err, `invalid search space: parameters[0].values: parameter "opt": at least one value is required`, "%T", alg)
		_, err = alg.Suggest(gridSpace, Objective{}, nil, -1, rand.New(rand.NewPCG(1, 1)))
		require.EqualError(t, err, "-1 suggestions asked for", "%T", alg)
	}
}
