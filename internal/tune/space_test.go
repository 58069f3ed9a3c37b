package tune

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSpaceValidate(t *testing.T) {
	one := func(p Param) Space { return Space{Params: []Param{p}} }
	for name, tc := range map[string]struct {
		space Space
		want  []FieldViolation // nil: valid
	}{
		"every kind": {space: space8},
		"no parameters": {space: Space{},
			want: []FieldViolation{{Field: "parameters", Description: "at least one parameter is required"}}},
		"min not below max": {space: one(Param{Name: "lr", Kind: KindDouble, Min: 0.1, Max: 0.01}),
			want: []FieldViolation{{Field: "parameters[0].max", Description: `parameter "lr": max 0.01 must be greater than min 0.1`}}},
		"equal bounds": {space: one(Param{Name: "n", Kind: KindInt, Min: 3, Max: 3}),
			want: []FieldViolation{{Field: "parameters[0].max", Description: `parameter "n": max 3 must be greater than min 3`}}},
		"log scale from zero": {space: one(Param{Name: "lr", Kind: KindDouble, Scale: ScaleLog, Min: 0, Max: 1}),
			want: []FieldViolation{{Field: "parameters[0].min", Description: `parameter "lr": min 0 must be greater than 0 on a log scale`}}},
		"fractional int": {space: one(Param{Name: "n", Kind: KindInt, Min: 0.5, Max: 3}),
			want: []FieldViolation{{Field: "parameters[0].min", Description: `parameter "n": 0.5 is not an integer of at most 2^53 in magnitude`}}},
		"infinite max": {space: one(Param{Name: "x", Kind: KindDouble, Min: 0, Max: math.Inf(1)}),
			want: []FieldViolation{{Field: "parameters[0].max", Description: `parameter "x": +Inf is not a finite number`}}},
		"empty categorical": {space: one(Param{Name: "opt", Kind: KindCategorical}),
			want: []FieldViolation{{Field: "parameters[0].values", Description: `parameter "opt": at least one value is required`}}},
		"repeated value": {space: one(Param{Name: "opt", Kind: KindCategorical, Values: []string{"sgd", "adam", "sgd"}}),
			want: []FieldViolation{{Field: "parameters[0].values[2]", Description: `parameter "opt": "sgd" is listed twice`}}},
		"empty value": {space: one(Param{Name: "opt", Kind: KindCategorical, Values: []string{""}}),
			want: []FieldViolation{{Field: "parameters[0].values[0]", Description: `parameter "opt": is empty`}}},
		"empty discrete": {space: one(Param{Name: "w", Kind: KindDiscrete}),
			want: []FieldViolation{{Field: "parameters[0].points", Description: `parameter "w": at least one point is required`}}},
		"NaN point": {space: one(Param{Name: "w", Kind: KindDiscrete, Points: []float64{1, math.NaN()}}),
			want: []FieldViolation{{Field: "parameters[0].points[1]", Description: `parameter "w": NaN is not a finite number`}}},
		"name not an identifier": {space: one(Param{Name: "learning-rate", Kind: KindDouble, Min: 0, Max: 1}),
			want: []FieldViolation{{Field: "parameters[0].name",
				Description: `"learning-rate" is not an identifier (letters, digits and underscores, not starting with a digit)`}}},
		"name twice": {space: Space{Params: []Param{{Name: "x", Kind: KindDouble, Min: 0, Max: 1}, {Name: "x", Kind: KindInt, Min: 0, Max: 1}}},
			want: []FieldViolation{{Field: "parameters[1].name", Description: `"x" is also the name of parameters[0]`}}},
		"no kind": {space: one(Param{Name: "x"}),
			want: []FieldViolation{{Field: "parameters[0].kind", Description: `parameter "x": is required (double, int, categorical or discrete)`}}},
		"scale of a categorical, and bounds": {space: one(Param{Name: "c", Kind: KindCategorical, Scale: ScaleLog, Max: 2, Values: []string{"a"}}),
			want: []FieldViolation{
				{Field: "parameters[0].scale", Description: `parameter "c": only double and int parameters have a scale`},
				{Field: "parameters[0].min", Description: `parameter "c": only double and int parameters have min and max`},
			}},
		"unknown scale": {space: one(Param{Name: "x", Kind: KindDouble, Scale: "sqrt", Min: 0, Max: 1}),
			want: []FieldViolation{{Field: "parameters[0].scale", Description: `parameter "x": "sqrt" is not a scale (linear or log)`}}},
		"points on a double": {space: one(Param{Name: "x", Kind: KindDouble, Min: 0, Max: 1, Points: []float64{1}}),
			want: []FieldViolation{{Field: "parameters[0].points", Description: `parameter "x": only discrete parameters have points`}}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.space.Validate())
		})
	}
}

func TestSpaceCheck(t *testing.T) {
	good := Assignment{"lr": "0.001", "momentum": "0.9", "dropout": "0", "weight_decay": "1e-05",
		"batch": "64", "layers": "3", "optimizer": "adam", "width": "256"}
	require.NoError(t, space8.Check(good))
	for name, tc := range map[string]struct {
		change func(Assignment)
		want   string
	}{
		"missing":      {func(a Assignment) { delete(a, "lr") }, `no value for parameter "lr"`},
		"extra":        {func(a Assignment) { a["seed"] = "1" }, `"seed" is not a parameter of the search space`},
		"out of range": {func(a Assignment) { a["lr"] = "0.5" }, `"0.5" is not a number in [1e-05, 0.1] for parameter "lr"`},
		"fractional":   {func(a Assignment) { a["layers"] = "2.5" }, `"2.5" is not an integer in [1, 12] for parameter "layers"`},
		"not a choice": {func(a Assignment) { a["optimizer"] = "lbfgs" }, `"lbfgs" is not one of the values of parameter "optimizer"`},
		"not a point":  {func(a Assignment) { a["width"] = "300" }, `"300" is not one of the points of parameter "width"`},
		"not a number": {func(a Assignment) { a["momentum"] = "high" }, `"high" is not a number in [0, 0.99] for parameter "momentum"`},
	} {
		t.Run(name, func(t *testing.T) {
			a := Assignment{}
			for k, v := range good {
				a[k] = v
			}
			tc.change(a)
			require.EqualError(t, space8.Check(a), tc.want)
		})
	}
}
