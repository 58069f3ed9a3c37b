package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/experiment"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/resname"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tune"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// ExperimentStore is the part of *store.Store ExperimentServer uses.
type ExperimentStore interface {
	ExperimentCreate(ctx context.Context, e experiment.Experiment) (experiment.Experiment, error)
	ExperimentGet(ctx context.Context, tenantID, name string) (experiment.Experiment, error)
	ExperimentList(ctx context.Context, tenantID, after string, limit int) ([]experiment.Experiment, error)
	ExperimentCancel(ctx context.Context, tenantID, name string) (experiment.Experiment, []experiment.Trial, error)
	ExperimentDelete(ctx context.Context, tenantID, name string) error
	TrialList(ctx context.Context, tenantID, expUID string) ([]experiment.Trial, error)
	TrialMetrics(ctx context.Context, tenantID string, jobUIDs []string, name string) (map[string][]experiment.MetricPoint, error)
}

// ExperimentServer implements trainyard.v1.ExperimentService: editors
// create and cancel experiments, viewers read them (the interceptor
// decided). The trials are run by internal/experimentctl.
type ExperimentServer struct {
	pb.UnimplementedExperimentServiceServer
	deps
	exps ExperimentStore
	jobs *JobServer // the jobs' checks: secrets, quota
}

// NewExperimentServer returns the ExperimentService implementation.
func NewExperimentServer(d Deps, es ExperimentStore) *ExperimentServer {
	s := &ExperimentServer{deps: d.withDefaults(), exps: es}
	s.jobs = &JobServer{deps: s.deps}
	return s
}

func parseExperiment(field, name string) (tenantID, id string, err error) {
	ids, err := parse(resname.Experiment, field, name)
	if err != nil {
		return "", "", err
	}
	return ids[0], ids[1], nil
}

// CreateExperiment validates and stores an experiment; the controller
// starts its trials.
func (s *ExperimentServer) CreateExperiment(ctx context.Context, req *pb.CreateExperimentRequest) (*pb.Experiment, error) {
	tenantID, err := parseTenant("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	if req.GetExperiment() == nil {
		return nil, invalid(violation("experiment", "is required"))
	}
	e := experiment.Experiment{Tenant: tenantID, Name: req.GetExperimentId(), Spec: experimentSpecFromPB(req.GetExperiment().GetSpec()).Defaulted()}
	if p, ok := auth.PrincipalFrom(ctx); ok {
		e.Creator = p.Subject
	}
	if vs := experiment.Validate(&e); len(vs) > 0 {
		return nil, invalid(vs...)
	}
	// The template's secrets must exist and a trial must fit the quota.
	tmpl := e.Spec.Template.Spec
	tmpl.Default()
	vs, err := s.jobs.missingSecrets(ctx, tenantID, tmpl)
	if err != nil {
		return nil, err
	}
	if len(vs) > 0 {
		var at job.Violations
		at.AddAt("spec.template.", vs)
		return nil, invalid(at...)
	}
	t, err := s.tenant(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if err := fitsEver(t, tmpl); err != nil {
		return nil, err
	}
	created, err := s.exps.ExperimentCreate(ctx, e)
	if err != nil {
		return nil, err
	}
	return experimentToPB(created, nil), nil
}

// GetExperiment returns an experiment with its best trial and counts.
func (s *ExperimentServer) GetExperiment(ctx context.Context, req *pb.GetExperimentRequest) (*pb.Experiment, error) {
	tenantID, id, err := parseExperiment("name", req.GetName())
	if err != nil {
		return nil, err
	}
	e, err := s.exps.ExperimentGet(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	trials, err := s.exps.TrialList(ctx, tenantID, e.UID)
	if err != nil {
		return nil, err
	}
	return experimentToPB(e, trials), nil
}

// ListExperiments lists the tenant's experiments by id (without trial
// counts: GetExperiment has them).
func (s *ExperimentServer) ListExperiments(ctx context.Context, req *pb.ListExperimentsRequest) (*pb.ListExperimentsResponse, error) {
	tenantID, err := parseTenant("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	size, err := pageSize("pageSize", req.GetPageSize())
	if err != nil {
		return nil, err
	}
	q := queryHash("experiments", tenantID)
	var after string
	if tok := req.GetPageToken(); tok != "" {
		if after, err = decodeStringToken("pageToken", tok, q); err != nil {
			return nil, err
		}
	}
	list, err := s.exps.ExperimentList(ctx, tenantID, after, size+1)
	if err != nil {
		return nil, err
	}
	resp := &pb.ListExperimentsResponse{}
	if len(list) > size {
		list = list[:size]
		resp.NextPageToken = encodeStringToken(list[size-1].Name, q)
	}
	for _, e := range list {
		resp.Experiments = append(resp.Experiments, experimentToPB(e, nil))
	}
	return resp, nil
}

// CancelExperiment ends a running experiment and cancels its running
// trials' jobs.
func (s *ExperimentServer) CancelExperiment(ctx context.Context, req *pb.CancelExperimentRequest) (*pb.Experiment, error) {
	tenantID, id, err := parseExperiment("name", req.GetName())
	if err != nil {
		return nil, err
	}
	e, running, err := s.exps.ExperimentCancel(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	for _, t := range running {
		if _, err := s.store.JobCancel(ctx, tenantID, t.JobName); err != nil &&
			!errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrFailedPrecondition) {
			return nil, fmt.Errorf("the experiment is cancelled, but trial %d's job %s is not: %w", t.Index, t.JobName, err)
		}
	}
	trials, err := s.exps.TrialList(ctx, tenantID, e.UID)
	if err != nil {
		return nil, err
	}
	return experimentToPB(e, trials), nil
}

// DeleteExperiment deletes an experiment that has ended.
func (s *ExperimentServer) DeleteExperiment(ctx context.Context, req *pb.DeleteExperimentRequest) (*pb.DeleteExperimentResponse, error) {
	tenantID, id, err := parseExperiment("name", req.GetName())
	if err != nil {
		return nil, err
	}
	if err := s.exps.ExperimentDelete(ctx, tenantID, id); err != nil {
		return nil, err
	}
	return &pb.DeleteExperimentResponse{}, nil
}

// ListTrials lists an experiment's trials by index, each with its best
// and last reported value of the objective.
func (s *ExperimentServer) ListTrials(ctx context.Context, req *pb.ListTrialsRequest) (*pb.ListTrialsResponse, error) {
	tenantID, id, err := parseExperiment("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	e, err := s.exps.ExperimentGet(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	trials, err := s.exps.TrialList(ctx, tenantID, e.UID)
	if err != nil {
		return nil, err
	}
	uids := make([]string, len(trials))
	for i, t := range trials {
		uids[i] = t.JobUID
	}
	curves, err := s.exps.TrialMetrics(ctx, tenantID, uids, e.Spec.Objective.Metric)
	if err != nil {
		return nil, err
	}
	resp := &pb.ListTrialsResponse{}
	for _, t := range trials {
		resp.Trials = append(resp.Trials, trialToPB(e, t, curves[t.JobUID]))
	}
	return resp, nil
}

// GetTrialMetrics returns a trial's points by metric and step.
func (s *ExperimentServer) GetTrialMetrics(ctx context.Context, req *pb.GetTrialMetricsRequest) (*pb.GetTrialMetricsResponse, error) {
	ids, err := parse(resname.Trial, "name", req.GetName())
	if err != nil {
		return nil, err
	}
	tenantID := ids[0]
	index, perr := strconv.Atoi(ids[2])
	if m := req.GetMetric(); m != "" {
		if err := tune.ValidMetricName(m); err != nil {
			return nil, invalid(violation("metric", err.Error()))
		}
	}
	e, err := s.exps.ExperimentGet(ctx, tenantID, ids[1])
	if err != nil {
		return nil, err
	}
	trials, err := s.exps.TrialList(ctx, tenantID, e.UID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(trials, func(t experiment.Trial) bool { return t.Index == index })
	if perr != nil || i < 0 {
		return nil, status.Errorf(codes.NotFound, "trial %s of experiment %s does not exist in tenant %s", quote(ids[2]), quote(ids[1]), quote(tenantID))
	}
	uid := trials[i].JobUID
	points, err := s.exps.TrialMetrics(ctx, tenantID, []string{uid}, req.GetMetric())
	if err != nil {
		return nil, err
	}
	resp := &pb.GetTrialMetricsResponse{}
	var cur *pb.MetricSeries
	for _, p := range points[uid] { // by name, then step
		if cur == nil || cur.Metric != p.Name {
			cur = &pb.MetricSeries{Metric: p.Name}
			resp.Series = append(resp.Series, cur)
		}
		cur.Points = append(cur.Points, &pb.MetricPoint{Step: p.Step, Value: p.Value, Time: ts(p.Time)})
	}
	return resp, nil
}
