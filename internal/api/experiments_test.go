package api

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/experiment"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// fakeExperiments keeps created experiments; the rest is unused here.
type fakeExperiments struct {
	ExperimentStore
	created []experiment.Experiment
}

func (f *fakeExperiments) ExperimentCreate(_ context.Context, e experiment.Experiment) (experiment.Experiment, error) {
	e.UID, e.State, e.BestTrial = "u1", experiment.Running, -1
	f.created = append(f.created, e)
	return e, nil
}

func experimentPB() *pb.Experiment {
	return &pb.Experiment{Spec: &pb.ExperimentSpec{
		Template: &pb.JobTemplate{Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{
			Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Image: "tensorflow/tensorflow:2.16.1",
			Command: []string{"python", "train.py", "--lr=${trial.lr}"},
		}}}},
		Parameters: []*pb.Parameter{{Name: "lr", Kind: "double", Scale: "log", Min: 1e-4, Max: 1e-1}},
		Objective:  &pb.Objective{Metric: "loss", Direction: "minimize"},
		Algorithm:  &pb.Algorithm{Name: "tpe"},
		MaxTrials:  20, Parallelism: 4,
	}}
}

func TestCreateExperiment(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "team-a", State: tenant.Active}
	exps := &fakeExperiments{}
	srv := NewExperimentServer(Deps{Store: st}, exps)
	ctx := context.Background()

	got, err := srv.CreateExperiment(ctx, &pb.CreateExperimentRequest{Parent: "tenants/a", ExperimentId: "sweep", Experiment: experimentPB()})
	require.NoError(t, err)
	require.Equal(t, "tenants/a/experiments/sweep", got.GetName())
	require.Equal(t, pb.ExperimentState_EXPERIMENT_STATE_RUNNING, got.GetState())
	require.Equal(t, int32(20), got.GetSpec().GetMaxFailedTrials(), "defaulted to maxTrials")
	require.Len(t, exps.created, 1)
	require.Equal(t, "tpe", exps.created[0].Spec.Algorithm.Name)

	// Every problem at once, each naming its field.
	bad := experimentPB()
	bad.Spec.Parameters[0].Min = -1
	bad.Spec.Template.Spec.Replicas[0].Args = []string{"--width=${trial.width}"}
	bad.Spec.Objective.Direction = "down"
	bad.Spec.Parallelism = 500
	bad.Spec.EarlyStopping = &pb.EarlyStopping{Rule: "asha"}
	_, err = srv.CreateExperiment(ctx, &pb.CreateExperimentRequest{Parent: "tenants/a", ExperimentId: "Bad_Name", Experiment: bad})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	var fields []string
	for _, v := range badRequest(t, err).GetFieldViolations() {
		fields = append(fields, v.GetField())
	}
	require.ElementsMatch(t, []string{"experimentId", "spec.parameters[0].min", "spec.objective.direction", "spec.parallelism",
		"spec.earlyStopping.asha", "spec.template.spec.replicas[0].args[0]"}, fields)
	require.Len(t, exps.created, 1)

	// The template must make a valid job: an image is required.
	noImage := experimentPB()
	noImage.Spec.Template.Spec.Replicas[0].Image = ""
	_, err = srv.CreateExperiment(ctx, &pb.CreateExperimentRequest{Parent: "tenants/a", ExperimentId: "x", Experiment: noImage})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, "spec.template.spec.replicas[0].image", badRequest(t, err).GetFieldViolations()[0].GetField())
}
