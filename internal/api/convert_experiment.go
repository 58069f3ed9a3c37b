package api

import (
	"strconv"

	"github.com/trainyard/trainyard/internal/experiment"
	"github.com/trainyard/trainyard/internal/resname"
	"github.com/trainyard/trainyard/internal/tune"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

var experimentStateToPB = map[experiment.State]pb.ExperimentState{
	experiment.Running: pb.ExperimentState_EXPERIMENT_STATE_RUNNING, experiment.Succeeded: pb.ExperimentState_EXPERIMENT_STATE_SUCCEEDED,
	experiment.Failed: pb.ExperimentState_EXPERIMENT_STATE_FAILED, experiment.Cancelled: pb.ExperimentState_EXPERIMENT_STATE_CANCELLED,
}

var trialStateToPB = map[experiment.TrialState]pb.TrialState{
	experiment.TrialRunning: pb.TrialState_TRIAL_STATE_RUNNING, experiment.TrialSucceeded: pb.TrialState_TRIAL_STATE_SUCCEEDED,
	experiment.TrialFailed: pb.TrialState_TRIAL_STATE_FAILED, experiment.TrialEarlyStopped: pb.TrialState_TRIAL_STATE_EARLY_STOPPED,
	experiment.TrialCancelled: pb.TrialState_TRIAL_STATE_CANCELLED,
}

func experimentSpecFromPB(s *pb.ExperimentSpec) experiment.Spec {
	out := experiment.Spec{
		Template: experiment.Template{Labels: s.GetTemplate().GetLabels(), Spec: specFromPB(s.GetTemplate().GetSpec())},
		Objective: experiment.Objective{Metric: s.GetObjective().GetMetric(), Direction: tune.Direction(s.GetObjective().GetDirection()),
			Goal: s.GetObjective().Goal},
		Algorithm:       experiment.Algorithm{Name: s.GetAlgorithm().GetName()},
		Parallelism:     int(s.GetParallelism()),
		MaxTrials:       int(s.GetMaxTrials()),
		MaxFailedTrials: int(s.GetMaxFailedTrials()),
		Seed:            s.GetSeed(),
	}
	for _, p := range s.GetParameters() {
		out.Parameters = append(out.Parameters, experiment.Parameter{Name: p.GetName(), Kind: tune.Kind(p.GetKind()),
			Scale: tune.Scale(p.GetScale()), Min: p.GetMin(), Max: p.GetMax(), Values: p.GetValues(), Points: p.GetPoints()})
	}
	if g := s.GetAlgorithm().GetGrid(); g != nil {
		out.Algorithm.Grid = &experiment.GridSettings{PointsPerDouble: int(g.GetPointsPerDouble())}
	}
	if t := s.GetAlgorithm().GetTpe(); t != nil {
		out.Algorithm.TPE = &experiment.TPESettings{Gamma: t.GetGamma(), StartupTrials: int(t.GetStartupTrials()),
			Candidates: int(t.GetCandidates()), PriorWeight: t.GetPriorWeight()}
	}
	if es := s.GetEarlyStopping(); es != nil {
		out.EarlyStopping = &experiment.EarlyStopping{Rule: es.GetRule()}
		if m := es.GetMedianStop(); m != nil {
			out.EarlyStopping.MedianStop = &experiment.MedianSettings{MinTrials: int(m.GetMinTrials()), GraceSteps: m.GetGraceSteps()}
		}
		if a := es.GetAsha(); a != nil {
			out.EarlyStopping.ASHA = &experiment.ASHASettings{MinResource: a.GetMinResource(), Eta: a.GetEta(), MaxResource: a.GetMaxResource()}
		}
	}
	return out
}

func experimentSpecToPB(s experiment.Spec) *pb.ExperimentSpec {
	out := &pb.ExperimentSpec{
		Template:    &pb.JobTemplate{Labels: s.Template.Labels, Spec: specToPB(s.Template.Spec)},
		Objective:   &pb.Objective{Metric: s.Objective.Metric, Direction: string(s.Objective.Direction), Goal: s.Objective.Goal},
		Algorithm:   &pb.Algorithm{Name: s.Algorithm.Name},
		Parallelism: int32(s.Parallelism), MaxTrials: int32(s.MaxTrials), MaxFailedTrials: int32(s.MaxFailedTrials), //nolint:gosec // bounded by Validate
		Seed: s.Seed,
	}
	for _, p := range s.Parameters {
		out.Parameters = append(out.Parameters, &pb.Parameter{Name: p.Name, Kind: string(p.Kind), Scale: string(p.Scale),
			Min: p.Min, Max: p.Max, Values: p.Values, Points: p.Points})
	}
	if g := s.Algorithm.Grid; g != nil {
		out.Algorithm.Grid = &pb.GridSettings{PointsPerDouble: int32(g.PointsPerDouble)} //nolint:gosec // small
	}
	if t := s.Algorithm.TPE; t != nil {
		out.Algorithm.Tpe = &pb.TpeSettings{Gamma: t.Gamma, StartupTrials: int32(t.StartupTrials), Candidates: int32(t.Candidates), //nolint:gosec // small
			PriorWeight: t.PriorWeight}
	}
	if es := s.EarlyStopping; es != nil {
		out.EarlyStopping = &pb.EarlyStopping{Rule: es.Rule}
		if m := es.MedianStop; m != nil {
			out.EarlyStopping.MedianStop = &pb.MedianStopSettings{MinTrials: int32(m.MinTrials), GraceSteps: m.GraceSteps} //nolint:gosec // small
		}
		if a := es.ASHA; a != nil {
			out.EarlyStopping.Asha = &pb.AshaSettings{MinResource: a.MinResource, Eta: a.Eta, MaxResource: a.MaxResource}
		}
	}
	return out
}

// experimentToPB is e; with its trials, also its best trial and counts.
func experimentToPB(e experiment.Experiment, trials []experiment.Trial) *pb.Experiment {
	out := &pb.Experiment{
		Name: resname.Experiment.Format(e.Tenant, e.Name), Uid: e.UID, Spec: experimentSpecToPB(e.Spec),
		State: experimentStateToPB[e.State], StateReason: e.Reason, Creator: e.Creator,
		CreateTime: ts(e.CreateTime), UpdateTime: ts(e.UpdateTime),
	}
	if trials == nil {
		return out
	}
	c := &pb.TrialCounts{}
	for _, t := range trials {
		switch t.State {
		case experiment.TrialRunning:
			c.Running++
		case experiment.TrialSucceeded:
			c.Succeeded++
		case experiment.TrialFailed:
			c.Failed++
		case experiment.TrialEarlyStopped:
			c.EarlyStopped++
		case experiment.TrialCancelled:
			c.Cancelled++
		}
	}
	out.TrialCounts = c
	if b := e.BestTrial; b >= 0 && b < len(trials) {
		out.BestTrial = trialToPB(e, trials[b], nil)
	}
	return out
}

// trialToPB is t, with the best and last step of its objective curve.
func trialToPB(e experiment.Experiment, t experiment.Trial, curve []experiment.MetricPoint) *pb.Trial {
	out := &pb.Trial{
		Name:  resname.Trial.Format(e.Tenant, e.Name, strconv.Itoa(t.Index)),
		Index: int32(t.Index), Job: jobName(e.Tenant, t.JobName), Parameters: t.Assignment, //nolint:gosec // at most MaxTrials
		State: trialStateToPB[t.State], StateReason: t.Reason, Objective: t.Objective,
		CreateTime: ts(t.CreateTime), UpdateTime: ts(t.UpdateTime),
	}
	obj := e.Spec.TuneObjective()
	for _, p := range curve {
		if out.BestValue == nil || obj.Better(p.Value, *out.BestValue) {
			v := p.Value
			out.BestValue, out.BestStep = &v, p.Step
		}
		out.LastStep = p.Step
	}
	return out
}
