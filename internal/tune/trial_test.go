package tune

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestObjectiveDirection(t *testing.T) {
	lower := Objective{Metric: "loss", Direction: Minimize}
	higher := Objective{Metric: "accuracy", Direction: Maximize}
	require.True(t, lower.Better(1, 2))
	require.False(t, lower.Better(2, 2))
	require.True(t, higher.Better(2, 1))
	require.True(t, lower.Reached(0.1, 0.1))
	require.False(t, lower.Reached(0.2, 0.1))
	require.True(t, higher.Reached(0.95, 0.9))
	require.False(t, higher.Reached(0.85, 0.9))

	trials := []Trial{
		{ID: "a", State: Succeeded, Value: 0.5},
		{ID: "b", State: EarlyStopped, Value: 0.1},
		{ID: "c", State: Succeeded, Value: 0.3},
		{ID: "d", State: Failed, Value: 0.0},
		{ID: "e", State: Succeeded, Value: 0.7},
		{ID: "f", State: Succeeded, Value: 0.3},
		{ID: "g", State: Succeeded, Value: math.NaN()},
	}
	require.Equal(t, 2, Best(lower, trials), "the earliest of equals")
	require.Equal(t, 4, Best(higher, trials))
	require.Equal(t, -1, Best(lower, trials[1:2]))
}
