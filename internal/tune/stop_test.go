package tune

import (
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// curve builds a metric curve from step, value pairs.
func curve(pairs ...float64) []Point {
	c := make([]Point, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		c = append(c, Point{Step: int64(pairs[i]), Value: pairs[i+1]})
	}
	return c
}

func tr(id string, state State, c []Point) Trial { return Trial{ID: id, State: state, Curve: c} }

// values is a curve with a point at each of steps 1, 2, 3, ….
func values(vs ...float64) []Point {
	c := make([]Point, len(vs))
	for i, v := range vs {
		c[i] = Point{Step: int64(i + 1), Value: v}
	}
	return c
}

func stopped(stops []Stop) []string {
	ids := []string{}
	for _, s := range stops {
		ids = append(ids, s.TrialID)
	}
	slices.Sort(ids)
	return ids
}

// negate turns a loss curve into the curve of a metric to maximise.
func negate(trials []Trial) []Trial {
	out := make([]Trial, len(trials))
	for i, t := range trials {
		t.Curve = slices.Clone(t.Curve)
		for k := range t.Curve {
			t.Curve[k].Value = -t.Curve[k].Value
		}
		out[i] = t
	}
	return out
}

var minLoss = Objective{Metric: "loss", Direction: Minimize}

func TestMedianStop(t *testing.T) {
	// Three finished trials; at step 3 their running averages are 0.8,
	// 0.7 and 1.033.
	finished := []Trial{
		tr("a", Succeeded, values(1.0, 0.8, 0.6, 0.5)),
		tr("b", Succeeded, values(0.9, 0.7, 0.5, 0.4)),
		tr("c", EarlyStopped, values(1.2, 1.0, 0.9)),
	}
	bad := tr("bad", Running, values(1.5, 1.4, 1.3))    // best 1.3, average 1.4
	good := tr("good", Running, values(1.0, 0.7, 0.65)) // best 0.65, average 0.783
	with := func(ts ...Trial) []Trial { return append(slices.Clone(finished), ts...) }
	for name, tc := range map[string]struct {
		rule   MedianStop
		trials []Trial
		want   []string
	}{
		// For bad, the median of a, b, c and good is 0.79; for good, that
		// of a, b, c and bad is 0.92.
		"stops the trial worse than the median": {MedianStop{MinTrials: 3}, with(bad, good), []string{"bad"}},
		"within the grace steps":                {MedianStop{MinTrials: 3, GraceSteps: 4}, with(bad, good), []string{}},
		"grace ends at the step":                {MedianStop{MinTrials: 3, GraceSteps: 3}, with(bad, good), []string{"bad"}},
		"too few other trials":                  {MedianStop{MinTrials: 5}, with(bad, good), []string{}},
		"failed trials do not count": {MedianStop{MinTrials: 5},
			with(bad, good, tr("f", Failed, values(0.1, 0.1, 0.1))), []string{}},
		// An early trial is judged at its own step, against the running
		// averages to that step (at step 1: 1.0, 0.9, 1.2, 1.5, 1.0).
		"a trial at an early step": {MedianStop{MinTrials: 3},
			with(bad, good, tr("early", Running, values(5))), []string{"bad", "early"}},
		"others that have not reached the step do not count": {MedianStop{MinTrials: 5},
			with(bad, good, tr("early", Running, values(0.1))), []string{}}, // bad has four others at step 3
		"best so far equal to the median continues": {MedianStop{MinTrials: 3}, []Trial{
			tr("a", Succeeded, values(1, 0.5)),     // average 0.75
			tr("b", Succeeded, values(0.5, 0.5)),   // 0.5, the median
			tr("c", Succeeded, values(0.25, 0.25)), // 0.25
			tr("even", Running, values(1, 0.5)),    // best 0.5
		}, []string{}},
		"only running trials are stopped": {MedianStop{MinTrials: 2},
			[]Trial{tr("a", Succeeded, values(1)), tr("b", Succeeded, values(1)), tr("c", Succeeded, values(9))}, []string{}},
		"the default needs five others": {MedianStop{}, with(bad, good), []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, stopped(tc.rule.Stop(minLoss, tc.trials)))
			max := Objective{Metric: "accuracy", Direction: Maximize}
			require.Equal(t, tc.want, stopped(tc.rule.Stop(max, negate(tc.trials))), "maximising the negated curves")
		})
	}
}

func TestMedianStopReason(t *testing.T) {
	trials := []Trial{
		tr("a", Succeeded, values(0.9, 0.8)),
		tr("b", Succeeded, values(0.8, 0.6)),
		tr("x", Running, values(0.1, 0.2)),
	}
	max := Objective{Metric: "accuracy", Direction: Maximize}
	require.Equal(t, []Stop{{TrialID: "x", Reason: "median stopping: at step 2 the best accuracy so far, 0.2, " +
		"is worse than 0.775, the median of 2 other trials' running averages to step 2"}},
		MedianStop{MinTrials: 2}.Stop(max, trials))
}

func TestASHA(t *testing.T) {
	at := func(step float64, vs ...float64) []Trial {
		var ts []Trial
		for i, v := range vs {
			ts = append(ts, tr("t"+strconv.Itoa(i), Running, curve(step, v)))
		}
		return ts
	}
	for name, tc := range map[string]struct {
		rule   ASHA
		trials []Trial
		want   []string
	}{
		"the top half of a rung continues": {ASHA{MinResource: 1, Eta: 2}, at(1, 1, 2, 3, 4), []string{"t2", "t3"}},
		"the top third":                    {ASHA{MinResource: 1, Eta: 3}, at(1, 4, 1, 2, 3, 5, 6), []string{"t0", "t3", "t4", "t5"}},
		"the first at a rung continues":    {ASHA{MinResource: 1, Eta: 2}, at(5, 100), []string{}},
		"ties continue together":           {ASHA{MinResource: 1, Eta: 2}, at(1, 1, 1, 1, 1), []string{}},
		"before the first rung":            {ASHA{MinResource: 10, Eta: 2}, at(9, 1, 2, 3, 4), []string{}},
		"the default eta is 3":             {ASHA{MinResource: 1}, at(1, 1, 2, 3), []string{"t1", "t2"}},
		// p was the worst at rung 1 but is the best at rung 2, the highest
		// it reached, and is judged there only.
		"judged at the highest rung reached": {ASHA{MinResource: 1, Eta: 2}, []Trial{
			tr("p", Running, curve(1, 10, 2, 0.1, 3, 0.1)),
			tr("q", Succeeded, curve(1, 1, 2, 1, 4, 1)),
			tr("r", Succeeded, curve(1, 1, 2, 1)),
		}, []string{}},
		// Rung 10 is reached at the first point at or past step 10: u at
		// step 12 with 2, v at 10 with 3, w at 11 with 4.
		"the value where a trial reached the rung": {ASHA{MinResource: 10, Eta: 3}, []Trial{
			tr("u", Running, curve(5, 9, 12, 2)),
			tr("v", Succeeded, curve(10, 3, 30, 1)),
			tr("w", Running, curve(11, 4)),
		}, []string{"w"}},
		// With no rung at 4 or above, the trials at step 6 are judged at
		// rung 2, where z was best.
		"no rung at or past the max resource": {ASHA{MinResource: 1, Eta: 2, MaxResource: 4}, []Trial{
			tr("y", Running, curve(2, 2, 6, 1)),
			tr("z", Running, curve(2, 1, 6, 2)),
		}, []string{"y"}},
		"failed trials do not count": {ASHA{MinResource: 1, Eta: 2}, []Trial{
			tr("alone", Running, curve(1, 1)),
			tr("f", Failed, curve(1, 0)),
		}, []string{}},
		"early-stopped trials count": {ASHA{MinResource: 1, Eta: 2}, []Trial{
			tr("x", Running, curve(1, 1)),
			tr("s", EarlyStopped, curve(1, 0)),
		}, []string{"x"}},
		"only running trials are stopped": {ASHA{MinResource: 1, Eta: 2}, []Trial{
			tr("a", Succeeded, curve(1, 1)),
			tr("b", Succeeded, curve(1, 5)),
		}, []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Empty(t, tc.rule.Validate())
			require.Equal(t, tc.want, stopped(tc.rule.Stop(minLoss, tc.trials)))
			max := Objective{Metric: "accuracy", Direction: Maximize}
			require.Equal(t, tc.want, stopped(tc.rule.Stop(max, negate(tc.trials))), "maximising the negated curves")
		})
	}
}

func TestASHAReason(t *testing.T) {
	trials := []Trial{
		tr("a", Succeeded, curve(3, 0.5, 9, 0.4)),
		tr("b", Running, curve(3, 0.6)),
		tr("c", Running, curve(2, 0.9, 4, 0.9)),
	}
	require.Equal(t, []Stop{
		{TrialID: "b", Reason: "successive halving: at the rung of step 3, 1 of the 3 trials there have a better loss than this trial's 0.6 (step 3); only the top 1/3 continue"},
		{TrialID: "c", Reason: "successive halving: at the rung of step 3, 2 of the 3 trials there have a better loss than this trial's 0.9 (step 4); only the top 1/3 continue"},
	}, ASHA{MinResource: 3, Eta: 3}.Stop(minLoss, trials))
}

func TestStopperValidate(t *testing.T) {
	require.Equal(t, []FieldViolation{
		{Field: "asha.minResource", Description: "0 is less than 1"},
		{Field: "asha.eta", Description: "1 is less than 2"},
	}, ASHA{Eta: 1}.Validate())
	require.Equal(t, []FieldViolation{
		{Field: "asha.maxResource", Description: "4 is not 0 or greater than minResource 4"},
	}, ASHA{MinResource: 4, MaxResource: 4}.Validate())
	require.Equal(t, []FieldViolation{
		{Field: "medianStop.minTrials", Description: "-1 is negative"},
		{Field: "medianStop.graceSteps", Description: "-2 is negative"},
	}, MedianStop{MinTrials: -1, GraceSteps: -2}.Validate())
}
