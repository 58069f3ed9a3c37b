package tune

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// branin is the Branin–Hoo function: three global minima of 0.397887 on
// x1 ∈ [-5, 10], x2 ∈ [0, 15], a standard test of optimisers.
func branin(x1, x2 float64) float64 {
	const (
		a = 1.0
		r = 6.0
		s = 10.0
	)
	b := 5.1 / (4 * math.Pi * math.Pi)
	c := 5 / math.Pi
	t := 1 / (8 * math.Pi)
	return a*math.Pow(x2-b*x1*x1+c*x1-r, 2) + s*(1-t)*math.Cos(x1) + s
}

var braninSpace = Space{Params: []Param{
	{Name: "x1", Kind: KindDouble, Min: -5, Max: 10},
	{Name: "x2", Kind: KindDouble, Min: 0, Max: 15},
}}

// optimise runs trials one at a time and returns the best value found.
func optimise(t testing.TB, alg Algorithm, trials int, seed uint64) float64 {
	obj := Objective{Metric: "f", Direction: Minimize}
	var history []Trial
	best := math.Inf(1)
	for i := range trials {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		as, err := alg.Suggest(braninSpace, obj, history, 1, rng)
		require.NoError(t, err)
		require.Len(t, as, 1)
		x1, err := strconv.ParseFloat(as[0]["x1"], 64)
		require.NoError(t, err)
		x2, err := strconv.ParseFloat(as[0]["x2"], 64)
		require.NoError(t, err)
		f := branin(x1, x2)
		best = math.Min(best, f)
		history = append(history, Trial{ID: strconv.Itoa(i), Assignment: as[0], State: Succeeded, Value: f})
	}
	return best
}

// TestTPEBeatsRandomOnBranin: over 50 trials, the model-based method gets
// closer to Branin's minimum than random search does. Regret is the best
// value found less the minimum; the median regret over 15 seeds of TPE
// must be under half of random's (it is about a quarter).
func TestTPEBeatsRandomOnBranin(t *testing.T) {
	const seeds, trials, minimum = 15, 50, 0.397887
	var tpe, random []float64
	for seed := range uint64(seeds) {
		tpe = append(tpe, optimise(t, TPE{}, trials, seed)-minimum)
		random = append(random, optimise(t, Random{}, trials, seed)-minimum)
	}
	slices.Sort(tpe)
	slices.Sort(random)
	t.Logf("regret of TPE:    %.3f", tpe)
	t.Logf("regret of random: %.3f", random)
	require.Less(t, tpe[seeds/2], random[seeds/2]/2, "median regret of TPE against half of random's")
}
