package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/api"
	"github.com/trainyard/trainyard/internal/experiment"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// keepingExperiments is the ExperimentStore of the example test: it keeps
// what the handler would store.
type keepingExperiments struct {
	api.ExperimentStore
	created *experiment.Experiment
}

func (s *keepingExperiments) ExperimentCreate(_ context.Context, e experiment.Experiment) (experiment.Experiment, error) {
	s.created = &e
	return e, nil
}

func TestExperimentExampleAcceptedByServer(t *testing.T) {
	data, err := os.ReadFile("examples/experiment.yaml")
	require.NoError(t, err)
	name, spec, err := parseExperimentFile(data)
	require.NoError(t, err)
	require.Equal(t, "lr-sweep", name)
	require.Equal(t, pb.ReplicaType_REPLICA_TYPE_WORKER, spec.GetTemplate().GetSpec().GetReplicas()[0].GetType(), "short enums, as in job files")

	exps := &keepingExperiments{}
	srv := api.NewExperimentServer(api.Deps{Store: &acceptingStore{}}, exps)
	_, err = srv.CreateExperiment(context.Background(), &pb.CreateExperimentRequest{Parent: "tenants/vision", ExperimentId: name,
		Experiment: &pb.Experiment{Spec: spec}})
	require.NoError(t, err)
	e := exps.created
	require.Equal(t, "tpe", e.Spec.Algorithm.Name)
	require.Equal(t, 20, e.Spec.MaxTrials)
	require.Len(t, e.Spec.Parameters, 3)
	require.InDelta(t, 0.05, *e.Spec.Objective.Goal, 0)
	require.Equal(t, experiment.RuleMedian, e.Spec.EarlyStopping.Rule)
	require.Equal(t, uint64(7), e.Spec.Seed)
}

func TestTrialsTableIsBestFirst(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	trials := []*pb.Trial{
		{Index: 0, State: pb.TrialState_TRIAL_STATE_SUCCEEDED, Objective: v(0.5), Parameters: map[string]string{"lr": "0.1"}},
		{Index: 1, State: pb.TrialState_TRIAL_STATE_EARLY_STOPPED, Objective: v(0.01), Parameters: map[string]string{"lr": "0.2"}},
		{Index: 2, State: pb.TrialState_TRIAL_STATE_SUCCEEDED, Objective: v(0.2), BestValue: v(0.19), BestStep: 300, LastStep: 400,
			Parameters: map[string]string{"lr": "0.01"}},
		{Index: 3, State: pb.TrialState_TRIAL_STATE_RUNNING, Parameters: map[string]string{"lr": "0.3"}},
	}
	sortTrialsBestFirst(trials, false)
	var order []int32
	for _, tr := range trials {
		order = append(order, tr.GetIndex())
	}
	require.Equal(t, []int32{2, 0, 1, 3}, order, "succeeded by loss, then the rest by index")

	spec := &pb.ExperimentSpec{Parameters: []*pb.Parameter{{Name: "lr"}}, Objective: &pb.Objective{Metric: "loss"}}
	var buf bytes.Buffer
	writeTrialTable(&buf, spec, trials)
	require.Equal(t, `TRIAL   STATE           LOSS   BEST LOSS (STEP)   LAST STEP   LR
2       SUCCEEDED       0.2    0.19 (300)         400         0.01
0       SUCCEEDED       0.5    -                  0           0.1
1       EARLY_STOPPED   0.01   -                  0           0.2
3       RUNNING         -      -                  0           0.3
`, buf.String())

	sortTrialsBestFirst(trials, true)
	require.Equal(t, int32(0), trials[0].GetIndex(), "maximize: the larger first")
}

// The local cluster's example is accepted too, its placeholder in a pod
// annotation.
func TestLocalExperimentExampleAcceptedByServer(t *testing.T) {
	data, err := os.ReadFile("examples/experiment-local.yaml")
	require.NoError(t, err)
	name, spec, err := parseExperimentFile(data)
	require.NoError(t, err)
	require.Equal(t, "curves", name)
	exps := &keepingExperiments{}
	srv := api.NewExperimentServer(api.Deps{Store: &acceptingStore{}}, exps)
	_, err = srv.CreateExperiment(context.Background(), &pb.CreateExperimentRequest{Parent: "tenants/vision", ExperimentId: name,
		Experiment: &pb.Experiment{Spec: spec}})
	require.NoError(t, err)
	e := exps.created
	require.Equal(t, "grid", e.Spec.Algorithm.Name)
	require.Equal(t, 10, e.Spec.MaxTrials)
	require.Equal(t, experiment.RuleASHA, e.Spec.EarlyStopping.Rule)
}
