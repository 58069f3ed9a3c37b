package tune_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/trainyard/trainyard/internal/tune"
)

// The experiments controller's use of the package, one step each.
func Example() {
	space := tune.Space{Params: []tune.Param{
		{Name: "lr", Kind: tune.KindDouble, Scale: tune.ScaleLog, Min: 1e-4, Max: 1e-1},
		{Name: "batch", Kind: tune.KindDiscrete, Points: []float64{32, 64, 128}},
	}}
	obj := tune.Objective{Metric: "loss", Direction: tune.Minimize}
	fmt.Println("violations:", len(space.Validate()), len(obj.Validate()))

	// Suggest from a seed and the number of trials so far: reproducible.
	const seed, trialsSoFar = 42, 0
	rng := rand.New(rand.NewPCG(seed, trialsSoFar))
	as, err := tune.Grid{PointsPerDouble: 4}.Suggest(space, obj, nil, 2, rng)
	if err != nil {
		panic(err)
	}
	arg, err := tune.Expand("--lr=${trial.lr} --batch=${trial.batch}", as[1])
	fmt.Println(arg, err)

	// A trial's pod prints metric lines; other lines are not metrics.
	for _, line := range []string{"epoch 1", "trainyard-metric loss=0.9 step=100", "trainyard-metric loss=NaN step=200"} {
		m, ok, err := tune.ParseMetricLine(line)
		fmt.Println(ok, m.Samples, err)
	}

	trials := []tune.Trial{
		{ID: "t1", State: tune.Running, Curve: []tune.Point{{Step: 100, Value: 0.9}}},
		{ID: "t2", State: tune.Running, Curve: []tune.Point{{Step: 100, Value: 0.5}}},
	}
	for _, s := range (tune.ASHA{MinResource: 100, Eta: 2}).Stop(obj, trials) {
		fmt.Println(s.TrialID, s.Reason)
	}
	// Output:
	// violations: 0 0
	// --lr=0.0001 --batch=64 <nil>
	// false [] <nil>
	// true [{loss 0.9}] <nil>
	// true [] loss=NaN: NaN is not accepted
	// t1 successive halving: at the rung of step 100, 1 of the 2 trials there have a better loss than this trial's 0.9 (step 100); only the top 1/2 continue
}
