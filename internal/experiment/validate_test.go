package experiment

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tune"
)

func validExperiment() Experiment {
	return Experiment{Tenant: "a", Name: "sweep", Creator: "alice", Spec: Spec{
		Template: Template{Labels: map[string]string{"team": "nlp"}, Spec: job.Spec{Replicas: []job.ReplicaSpec{{
			Type: job.Worker, Count: 1, Image: "tensorflow/tensorflow:2.16.1",
			Command:        []string{"python", "train.py", "--lr=${trial.lr}"},
			Env:            []job.EnvVar{{Name: "OPT", Value: "${trial.opt}"}, {Name: "SHELL_VAR", Value: "${HOME}"}},
			PodAnnotations: map[string]string{"example.com/lr": "${trial.lr}"},
		}}}},
		Parameters: []Parameter{
			{Name: "lr", Kind: tune.KindDouble, Scale: tune.ScaleLog, Min: 1e-4, Max: 1e-1},
			{Name: "opt", Kind: tune.KindCategorical, Values: []string{"adam", "sgd"}},
		},
		Objective: Objective{Metric: "loss", Direction: tune.Minimize},
		MaxTrials: 10,
	}.Defaulted()}
}

func TestValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		edit   func(*Experiment)
		fields []string
	}{
		"valid": {edit: func(*Experiment) {}},
		"long name": {edit: func(e *Experiment) { e.Name = "a-name-that-is-longer-than-forty-characters-x" },
			fields: []string{"experimentId"}},
		"no parameters": {edit: func(e *Experiment) {
			e.Spec.Parameters = nil
			e.Spec.Template.Spec.Replicas[0].Command = nil
			e.Spec.Template.Spec.Replicas[0].Env = nil
			e.Spec.Template.Spec.Replicas[0].PodAnnotations = nil
		},
			fields: []string{"spec.parameters"}},
		"unknown placeholder": {edit: func(e *Experiment) { e.Spec.Template.Spec.Replicas[0].Env[0].Value = "${trial.momentum}" },
			fields: []string{"spec.template.spec.replicas[0].env[0].value"}},
		"unknown placeholder in an annotation": {edit: func(e *Experiment) {
			e.Spec.Template.Spec.Replicas[0].PodAnnotations["example.com/x"] = "${trial.x}"
		}, fields: []string{`spec.template.spec.replicas[0].podAnnotations["example.com/x"]`}},
		"bad algorithm": {edit: func(e *Experiment) { e.Spec.Algorithm.Name = "bayes" }, fields: []string{"spec.algorithm.name"}},
		"tpe settings": {edit: func(e *Experiment) {
			e.Spec.Algorithm = Algorithm{Name: AlgorithmTPE, TPE: &TPESettings{Gamma: 2}}
		}, fields: []string{"spec.algorithm.tpe.gamma"}},
		"grid settings on random": {edit: func(e *Experiment) { e.Spec.Algorithm.Grid = &GridSettings{PointsPerDouble: 3} },
			fields: []string{"spec.algorithm.grid"}},
		"asha without settings": {edit: func(e *Experiment) { e.Spec.EarlyStopping = &EarlyStopping{Rule: RuleASHA} },
			fields: []string{"spec.earlyStopping.asha"}},
		"asha eta": {edit: func(e *Experiment) {
			e.Spec.EarlyStopping = &EarlyStopping{Rule: RuleASHA, ASHA: &ASHASettings{MinResource: 1, Eta: 1}}
		}, fields: []string{"spec.earlyStopping.asha.eta"}},
		"bounds": {edit: func(e *Experiment) { e.Spec.MaxTrials, e.Spec.Parallelism, e.Spec.MaxFailedTrials = 0, 0, -1 },
			fields: []string{"spec.maxTrials", "spec.parallelism", "spec.maxFailedTrials"}},
		"reserved label": {edit: func(e *Experiment) { e.Spec.Template.Labels = map[string]string{LabelTrial: "7"} },
			fields: []string{"spec.template.labels"}},
	} {
		t.Run(name, func(t *testing.T) {
			e := validExperiment()
			tc.edit(&e)
			var got []string
			for _, v := range Validate(&e) {
				got = append(got, v.Field)
			}
			require.ElementsMatch(t, tc.fields, got)
		})
	}
}

func TestTrialJobExpandsACopy(t *testing.T) {
	e := validExperiment()
	j, err := TrialJob(&e, 3, tune.Assignment{"lr": "0.001", "opt": "sgd"})
	require.NoError(t, err)
	require.Equal(t, "sweep-3", j.Name)
	require.Equal(t, map[string]string{"team": "nlp", LabelExperiment: "sweep", LabelTrial: "3"}, j.Labels)
	require.Equal(t, "alice", j.Creator)
	require.Equal(t, "--lr=0.001", j.Spec.Replicas[0].Command[2])
	require.Equal(t, "sgd", j.Spec.Replicas[0].Env[0].Value)
	require.Equal(t, "${HOME}", j.Spec.Replicas[0].Env[1].Value, "a shell's variables pass through")
	require.Equal(t, "0.001", j.Spec.Replicas[0].PodAnnotations["example.com/lr"])
	require.Equal(t, "${trial.lr}", e.Spec.Template.Spec.Replicas[0].PodAnnotations["example.com/lr"])
	require.Equal(t, "--lr=${trial.lr}", e.Spec.Template.Spec.Replicas[0].Command[2], "the template is untouched")
	require.Equal(t, map[string]string{"team": "nlp"}, e.Spec.Template.Labels)

	_, err = TrialJob(&e, 0, tune.Assignment{"lr": "0.001"})
	require.ErrorContains(t, err, "opt")
}
