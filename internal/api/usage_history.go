package api

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trainyard/trainyard/internal/gpuutil"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// GPUHistory reads a job's DCGM series from Prometheus over a window
// (*gpuutil.History, with the server's --prometheus-url).
type GPUHistory interface {
	Range(ctx context.Context, namespace, job string, pods map[string]string, start, end time.Time, step time.Duration) ([]gpuutil.GPUSeries, error)
}

// Queue history bounds.
const (
	// DefaultQueueWindow is the window when start is unset.
	DefaultQueueWindow = 24 * time.Hour
	// MaxQueueWindow is the longest window: the samples' 35 days, and one
	// more for rounding.
	MaxQueueWindow = 36 * 24 * time.Hour
	// maxUtilizationPoints bounds a utilisation series (the default
	// step gives 240).
	maxUtilizationPoints = 2000
	minUtilizationStep   = 15 * time.Second
)

// window reads a request's start and end (defaults: end now, start end
// less def), rounded to width (UTC), and checks it is at most longest.
func window(start, end *timestamppb.Timestamp, now time.Time, def, width, longest time.Duration, vs *job.Violations) (time.Time, time.Time) {
	e := now
	if end != nil {
		if err := end.CheckValid(); err != nil {
			vs.Add("end", "is not a valid time")
		}
		e = end.AsTime()
	}
	s := e.Add(-def)
	if start != nil {
		if err := start.CheckValid(); err != nil {
			vs.Add("start", "is not a valid time")
		}
		s = start.AsTime()
	}
	from, to := s.UTC().Truncate(width), e.UTC().Truncate(width)
	if to.Before(e) {
		to = to.Add(width)
	}
	switch {
	case !to.After(from):
		vs.Add("end", "must be after start")
	case to.Sub(from) > longest:
		vs.Add("end", "the window is %s long; at most %s", to.Sub(from), longest)
	}
	return from, to
}

// QueryQueueHistory sums the scheduler's queue samples by bucket and
// tenant; for tenants/- (platform admins) with the cluster's capacity.
func (s *UsageServer) QueryQueueHistory(ctx context.Context, req *pb.QueryQueueHistoryRequest) (*pb.QueryQueueHistoryResponse, error) {
	var (
		p   store.QueueHistoryParams
		err error
		vs  job.Violations
	)
	all := req.GetParent() == AllTenants
	if !all {
		if p.Tenant, err = parseTenant("parent", req.GetParent()); err != nil {
			return nil, err
		}
	}
	step := req.GetStep()
	switch step {
	case "5m":
		p.Step = 5 * time.Minute
	case "", "1h":
		step, p.Step = "1h", time.Hour
	case "1d":
		p.Step = 24 * time.Hour
	default:
		vs.Add("step", "%s is not a step; 5m, 1h or 1d", quote(step))
		p.Step = time.Hour
	}
	p.Start, p.End = window(req.GetStart(), req.GetEnd(), s.now(), DefaultQueueWindow, p.Step, MaxQueueWindow, &vs)
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	rows, capacity, err := s.store.QueueHistoryQuery(ctx, p)
	if err != nil {
		return nil, err
	}
	resp := &pb.QueryQueueHistoryResponse{
		Start: timestamppb.New(p.Start), End: timestamppb.New(p.End), Step: step,
		Rows: make([]*pb.QueueHistoryRow, 0, len(rows)),
	}
	for _, r := range rows {
		resp.Rows = append(resp.Rows, &pb.QueueHistoryRow{
			Start: timestamppb.New(r.Start), End: timestamppb.New(r.Start.Add(p.Step)), Tenant: r.Tenant,
			PendingJobsMean: r.PendingJobsMean, PendingJobsMax: int32(r.PendingJobsMax), PendingGpusMax: r.PendingGPUsMax,
			OldestWaitSecondsMean: r.OldestWaitMean, OldestWaitSecondsMax: r.OldestWaitMax,
		})
	}
	if all {
		for _, c := range capacity {
			resp.Capacity = append(resp.Capacity, &pb.CapacityPoint{Start: timestamppb.New(c.Start), Gpus: c.GPUs})
		}
	}
	return resp, nil
}

// QueryJobUtilization reads a job's GPU utilisation per replica and GPU
// from Prometheus, over its life by default. The authorizer has checked
// the job's tenant; the query names the tenant's namespace and the job's
// pods only.
func (s *UsageServer) QueryJobUtilization(ctx context.Context, req *pb.QueryJobUtilizationRequest) (*pb.QueryJobUtilizationResponse, error) {
	tenantID, name, err := parseJob("name", req.GetName())
	if err != nil {
		return nil, err
	}
	var vs job.Violations
	if req.GetStepSeconds() < 0 {
		vs.Add("stepSeconds", "must not be negative")
	}
	for _, f := range []struct {
		field string
		t     *timestamppb.Timestamp
	}{{"start", req.GetStart()}, {"end", req.GetEnd()}} {
		if f.t != nil && f.t.CheckValid() != nil {
			vs.Add(f.field, "is not a valid time")
		}
	}
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	j, err := s.store.JobGet(ctx, tenantID, name)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	start := j.CreateTime
	if t := j.Status.StartTime; t != nil {
		start = *t
	}
	end := now
	if t := j.Status.CompletionTime; t != nil {
		end = *t
	}
	if t := req.GetStart(); t != nil {
		start = t.AsTime()
	}
	if t := req.GetEnd(); t != nil {
		end = t.AsTime()
	}
	start, end = start.UTC().Truncate(time.Second), end.UTC().Truncate(time.Second)
	if !end.After(start) {
		end = start.Add(time.Minute)
	}
	step := time.Duration(req.GetStepSeconds()) * time.Second
	if step == 0 {
		step = max(minUtilizationStep, (end.Sub(start) / 240).Truncate(time.Second))
	}
	if n := end.Sub(start) / step; n > maxUtilizationPoints {
		return nil, invalid(violation("stepSeconds", fmt.Sprintf("the window over %s is %d points; at most %d: a longer step or a shorter window", step, n, maxUtilizationPoints)))
	}
	resp := &pb.QueryJobUtilizationResponse{
		Start: timestamppb.New(start), End: timestamppb.New(end), StepSeconds: int32(step / time.Second),
	}
	if s.gpuHistory == nil {
		return resp, nil
	}
	t, err := s.tenant(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	ns := cmp.Or(t.Namespace, tenant.NamespaceName(s.nsPrefix, tenantID))
	series, err := s.gpuHistory.Range(ctx, ns, j.Name, gpuutil.PodReplicas(j.Name, j.Spec), start, end, step)
	if err != nil {
		s.log.Warn("prometheus range query failed", "tenant", tenantID, "job", j.Name, "error", err)
		return nil, status.Error(codes.Unavailable, "Prometheus did not answer; retry")
	}
	resp.Available = true
	for _, g := range series {
		out := &pb.UtilizationSeries{Replica: g.Replica, Gpu: g.GPU, Points: make([]*pb.UtilizationPoint, 0, len(g.Points))}
		for _, p := range g.Points {
			pt := &pb.UtilizationPoint{Time: timestamppb.New(p.Time), Utilization: p.Utilization}
			if !math.IsNaN(p.MemoryMiB) {
				pt.MemoryUsedMib = &p.MemoryMiB
			}
			out.Points = append(out.Points, pt)
		}
		resp.Series = append(resp.Series, out)
	}
	return resp, nil
}
