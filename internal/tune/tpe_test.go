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

func suggestN(t *testing.T, alg Algorithm, space Space, obj Objective, history []Trial, n int, seed uint64) []Assignment {
	as, err := alg.Suggest(space, obj, history, n, rand.New(rand.NewPCG(seed, 0)))
	require.NoError(t, err)
	require.Len(t, as, n)
	for _, a := range as {
		require.NoError(t, space.Check(a))
	}
	return as
}

func TestTPEIsReproducibleAndValid(t *testing.T) {
	history := finishedTrials(t, space8, 60, 5)
	obj := Objective{Metric: "loss", Direction: Minimize}
	a := suggestN(t, TPE{}, space8, obj, history, 8, 1)
	require.Equal(t, a, suggestN(t, TPE{}, space8, obj, history, 8, 1))
	require.NotEqual(t, a, suggestN(t, TPE{}, space8, obj, history, 8, 2))
}

func TestTPEStartsRandom(t *testing.T) {
	obj := Objective{Metric: "loss", Direction: Minimize}
	history := finishedTrials(t, space8, 9, 5)
	// Running and failed trials have no objective value: still nine.
	history = append(history, Trial{ID: "r", State: Running, Assignment: history[0].Assignment},
		Trial{ID: "f", State: Failed, Assignment: history[1].Assignment})
	require.Equal(t, suggestN(t, Random{}, space8, obj, history, 3, 1), suggestN(t, TPE{}, space8, obj, history, 3, 1))
	history = finishedTrials(t, space8, 10, 5)
	require.NotEqual(t, suggestN(t, Random{}, space8, obj, history, 3, 1), suggestN(t, TPE{}, space8, obj, history, 3, 1))
}

// oneDim is forty random trials of x in [0, 1] valued by f.
func oneDim(t *testing.T, f func(x float64) float64) (Space, []Trial) {
	space := Space{Params: []Param{{Name: "x", Kind: KindDouble, Min: 0, Max: 1}}}
	var history []Trial
	for i, a := range suggestN(t, Random{}, space, Objective{}, nil, 40, 9) {
		history = append(history, Trial{ID: strconv.Itoa(i), Assignment: a, State: Succeeded, Value: f(num(t, a["x"]))})
	}
	return space, history
}

func meanOf(t *testing.T, as []Assignment, f func(Assignment) float64) float64 {
	sum := 0.0
	for _, a := range as {
		sum += f(a)
	}
	return sum / float64(len(as))
}

// TestTPEDirection: the same values lead TPE to their largest when
// maximising and to their smallest when minimising.
func TestTPEDirection(t *testing.T) {
	space, history := oneDim(t, func(x float64) float64 { return -(x - 0.8) * (x - 0.8) })
	x := func(a Assignment) float64 { return num(t, a["x"]) }
	up := suggestN(t, TPE{}, space, Objective{Metric: "score", Direction: Maximize}, history, 50, 1)
	require.Less(t, meanOf(t, up, func(a Assignment) float64 { return (x(a) - 0.8) * (x(a) - 0.8) }), 0.03,
		"maximising: mean squared distance from the peak at 0.8 (random: 0.17)")
	down := suggestN(t, TPE{}, space, Objective{Metric: "score", Direction: Minimize}, history, 50, 1)
	require.Less(t, meanOf(t, down, x), 0.3, "minimising: toward 0, the farthest from the peak")
}

func TestTPELearnsEveryKind(t *testing.T) {
	var history []Trial
	for i, a := range suggestN(t, Random{}, space8, Objective{}, nil, 100, 11) {
		loss := math.Abs(math.Log10(num(t, a["lr"]))+3) + math.Abs(num(t, a["layers"])-9)/3
		if a["optimizer"] != "adamw" {
			loss++
		}
		if a["width"] != "512" {
			loss++
		}
		history = append(history, Trial{ID: strconv.Itoa(i), Assignment: a, State: Succeeded, Value: loss})
	}
	as := suggestN(t, TPE{}, space8, Objective{Metric: "loss", Direction: Minimize}, history, 100, 3)
	count := func(name, value string) float64 {
		return meanOf(t, as, func(a Assignment) float64 {
			if a[name] == value {
				return 1
			}
			return 0
		})
	}
	require.Greater(t, count("optimizer", "adamw"), 0.5, "share of the best optimizer (random: 0.25)")
	require.Greater(t, count("width", "512"), 0.4, "share of the best width (random: 0.2)")
	// lr matters less than the choices here: it is learnt more slowly.
	require.Less(t, meanOf(t, as, func(a Assignment) float64 { return math.Abs(math.Log10(num(t, a["lr"])) + 3) }), 0.8,
		"mean distance in decades of lr from 1e-3 (random: 1)")
	require.Less(t, meanOf(t, as, func(a Assignment) float64 { return math.Abs(num(t, a["layers"]) - 9) }), 2.0,
		"mean distance of layers from 9 (random: 3.5)")
}

// TestTPESplit: the good group is the best quarter; an early-stopped
// trial is never in it, however good its last value.
func TestTPESplit(t *testing.T) {
	var obs []observation
	for i, loss := range []float64{5, 1, 4, 2, 8, 7, 6, 3} {
		obs = append(obs, observation{x: []float64{float64(i)}, loss: loss})
	}
	obs = append(obs, observation{x: []float64{8}, loss: 0, stopped: true})
	good, bad := TPE{Gamma: 0.25}.withDefaults().split(obs)
	require.Equal(t, []float64{1, 3, 7}, column(good, 0)) // ceil(0.25·9) = 3: losses 1, 2, 3
	require.Equal(t, []float64{2, 0, 6, 5, 4, 8}, column(bad, 0))
}

func TestTPEBadHistory(t *testing.T) {
	obj := Objective{Metric: "loss", Direction: Minimize}
	history := finishedTrials(t, space8, 12, 5)
	history[4].Assignment = Assignment{"lr": "0.5"}
	_, err := TPE{}.Suggest(space8, obj, history, 1, rand.New(rand.NewPCG(1, 1)))
	require.EqualError(t, err, `trial 4 (4): "0.5" is not a number in [1e-05, 0.1] for parameter "lr"`)
}

func TestTPEValidate(t *testing.T) {
	require.Empty(t, TPE{}.Validate())
	require.Equal(t, []FieldViolation{
		{Field: "tpe.gamma", Description: "1.5 is not in (0, 1)"},
		{Field: "tpe.startupTrials", Description: "-1 is less than 1"},
		{Field: "tpe.candidates", Description: "20000 is not in [1, 10000]"},
		{Field: "tpe.priorWeight", Description: "-1 is not in (0, 1000]"},
	}, TPE{Gamma: 1.5, StartupTrials: -1, Candidates: 20000, PriorWeight: -1}.Validate())
}

func TestObjectiveValidate(t *testing.T) {
	require.Empty(t, Objective{Metric: "val/loss", Direction: Minimize}.Validate())
	require.Equal(t, []FieldViolation{
		{Field: "objective.metric", Description: "step is the step of a metric line, not a metric"},
		{Field: "objective.direction", Description: `"down" is not a direction (minimize or maximize)`},
	}, Objective{Metric: "step", Direction: "down"}.Validate())
}

// TestTPELogScale: on a log scale TPE homes in on a decade.
func TestTPELogScale(t *testing.T) {
	space := Space{Params: []Param{{Name: "lr", Kind: KindDouble, Scale: ScaleLog, Min: 1e-6, Max: 1}}}
	decadesFrom := func(a Assignment) float64 { return math.Abs(math.Log10(num(t, a["lr"])) + 4) }
	var history []Trial
	for i, a := range suggestN(t, Random{}, space, Objective{}, nil, 30, 4) {
		history = append(history, Trial{ID: strconv.Itoa(i), Assignment: a, State: Succeeded, Value: decadesFrom(a)})
	}
	as := suggestN(t, TPE{}, space, Objective{Metric: "loss", Direction: Minimize}, history, 50, 1)
	require.Less(t, meanOf(t, as, decadesFrom), 0.5, "mean distance in decades from 1e-4 (random: 1.67)")
}
