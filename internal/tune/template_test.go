package tune

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExpand(t *testing.T) {
	a := Assignment{"lr": "0.001", "opt": "adam", "batch": "64"}
	for name, tc := range map[string]struct {
		in, want, err string
	}{
		"no placeholder":               {in: "python train.py", want: "python train.py"},
		"one":                          {in: "--lr=${trial.lr}", want: "--lr=0.001"},
		"several and repeat":           {in: "${trial.opt}-${trial.batch}-${trial.opt}", want: "adam-64-adam"},
		"whole string":                 {in: "${trial.batch}", want: "64"},
		"shell variables pass through": {in: `echo ${HOME} $PATH ${trial.lr}`, want: "echo ${HOME} $PATH 0.001"},
		"escape":                       {in: "$${trial.lr} is ${trial.lr}", want: "${trial.lr} is 0.001"},
		"escape of an unknown name":    {in: "$${trial.nope}", want: "${trial.nope}"},
		"unknown":                      {in: "--x=${trial.momentum}", err: `placeholder ${trial.momentum}: the search space has no parameter "momentum"`},
		"not closed":                   {in: "--lr=${trial.lr", err: `placeholder "${trial.lr" is not closed with }`},
		"not an identifier":            {in: "${trial.learning-rate}", err: `placeholder "${trial.learning-rate}": "learning-rate" is not a parameter name`},
		"empty name":                   {in: "${trial.}", err: `placeholder "${trial.}": "" is not a parameter name`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Expand(tc.in, a)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestExpandDoesNotExpandValues(t *testing.T) {
	got, err := Expand("${trial.a}", Assignment{"a": "${trial.b}", "b": "x"})
	require.NoError(t, err)
	require.Equal(t, "${trial.b}", got)
}

func TestPlaceholders(t *testing.T) {
	names, err := Placeholders("--lr=${trial.lr} --b=${trial.batch} $${trial.skip} ${HOME} ${trial.lr}")
	require.NoError(t, err)
	require.Equal(t, []string{"lr", "batch", "lr"}, names)
	_, err = Placeholders("${trial.1x}")
	require.EqualError(t, err, `placeholder "${trial.1x}": "1x" is not a parameter name`)
}
