package tune

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// space8 has eight parameters of every kind and scale.
var space8 = Space{Params: []Param{
	{Name: "lr", Kind: KindDouble, Scale: ScaleLog, Min: 1e-5, Max: 1e-1},
	{Name: "momentum", Kind: KindDouble, Min: 0, Max: 0.99},
	{Name: "dropout", Kind: KindDouble, Min: 0, Max: 0.5},
	{Name: "weight_decay", Kind: KindDouble, Scale: ScaleLog, Min: 1e-6, Max: 1e-2},
	{Name: "batch", Kind: KindInt, Scale: ScaleLog, Min: 16, Max: 1024},
	{Name: "layers", Kind: KindInt, Min: 1, Max: 12},
	{Name: "optimizer", Kind: KindCategorical, Values: []string{"sgd", "adam", "adamw", "rmsprop"}},
	{Name: "width", Kind: KindDiscrete, Points: []float64{64, 128, 256, 512, 1024}},
}}

// finishedTrials are n succeeded random trials of space with a made-up
// objective.
func finishedTrials(tb testing.TB, space Space, n int, seed uint64) []Trial {
	as, err := Random{}.Suggest(space, Objective{}, nil, n, rand.New(rand.NewPCG(seed, 0)))
	require.NoError(tb, err)
	trials := make([]Trial, n)
	for i, a := range as {
		lr, err := strconv.ParseFloat(a["lr"], 64)
		require.NoError(tb, err)
		trials[i] = Trial{ID: strconv.Itoa(i), Assignment: a, State: Succeeded, Value: math.Abs(math.Log10(lr) + 3)}
	}
	return trials
}

// BenchmarkTPESuggest is one suggestion with 500 finished trials in eight
// dimensions (issue 46: under 100 ms).
func BenchmarkTPESuggest(b *testing.B) {
	history := finishedTrials(b, space8, 500, 1)
	obj := Objective{Metric: "loss", Direction: Minimize}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for b.Loop() {
		if _, err := (TPE{}).Suggest(space8, obj, history, 1, rng); err != nil {
			b.Fatal(err)
		}
	}
}
