package api

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// JobServer implements trainyard.v1.JobService. Authentication and the
// tenant-level authorization already happened in the interceptor; handlers
// parse, validate and call the store, always scoped by the tenant taken from
// the resource name.
type JobServer struct {
	pb.UnimplementedJobServiceServer
	deps
}

// NewJobServer returns the JobService implementation.
func NewJobServer(d Deps) *JobServer { return &JobServer{deps: d.withDefaults()} }

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

func (s *JobServer) CreateJob(ctx context.Context, req *pb.CreateJobRequest) (*pb.Job, error) {
	tenantID, err := parseTenant("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	if req.GetJob() == nil {
		return nil, invalid(violation("job", "is required"))
	}
	var vs []FieldViolation
	if rid := req.GetRequestId(); rid != "" && !requestIDPattern.MatchString(rid) {
		vs = append(vs, violation("requestId", "must be 1-100 characters of letters, digits, '-' and '_'"))
	}
	in := req.GetJob()
	j := job.Job{
		Tenant:      tenantID,
		Name:        req.GetJobId(),
		DisplayName: in.GetDisplayName(),
		Labels:      in.GetLabels(),
		Spec:        specFromPB(in.GetSpec()),
	}
	if j.Name == "" {
		j.Name = job.NewJobID()
	}
	if p, ok := auth.PrincipalFrom(ctx); ok {
		j.Creator = p.Subject
	}
	j.Spec.Default()
	for _, v := range job.Validate(&j) {
		vs = append(vs, violation(v.Field, v.Description))
	}
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	t, err := s.store.TenantGet(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if vs := s.missingSecrets(ctx, tenantID, j.Spec); len(vs) > 0 {
		return nil, invalid(vs...)
	}
	demand, err := j.Spec.Demand()
	if err != nil {
		return nil, invalid(violation("spec", err.Error()))
	}
	if err := neverFits(t, demand); err != nil {
		return nil, err
	}
	created, _, err := s.store.JobCreate(ctx, store.JobCreateParams{Job: j, Demand: demand, RequestID: req.GetRequestId()})
	if err != nil {
		return nil, err
	}
	return jobToPB(created), nil
}

// missingSecrets names each reference to a tenant secret that does not exist.
func (s *JobServer) missingSecrets(ctx context.Context, tenantID string, spec job.Spec) []FieldViolation {
	var vs []FieldViolation
	exists := map[string]bool{}
	check := func(field, id string) {
		ok, seen := exists[id]
		if !seen {
			_, err := s.store.SecretGet(ctx, tenantID, id)
			ok = err == nil
			exists[id] = ok
		}
		if !ok {
			vs = append(vs, violation(field, fmt.Sprintf("secret %q does not exist in tenant %q", id, tenantID)))
		}
	}
	for i, r := range spec.Replicas {
		for k, e := range r.Env {
			if e.Secret != nil {
				check(fmt.Sprintf("spec.replicas[%d].env[%d].secret.secret", i, k), e.Secret.Secret)
			}
		}
		for k, v := range r.SecretVolumes {
			check(fmt.Sprintf("spec.replicas[%d].secretVolumes[%d].secret", i, k), v.Secret)
		}
	}
	return vs
}

// neverFits refuses a job that asks for more than the tenant's whole quota:
// it would wait in the queue forever.
func neverFits(t tenant.Tenant, d job.Demand) error {
	limit, err := t.Quota.Limits()
	if err != nil {
		return err
	}
	var over []string
	if limit.GPU > 0 && d.GPU > limit.GPU {
		over = append(over, fmt.Sprintf("%d GPUs (quota %d)", d.GPU, limit.GPU))
	}
	if limit.CPUMilli > 0 && d.CPUMilli > limit.CPUMilli {
		over = append(over, fmt.Sprintf("%dm CPU (quota %dm)", d.CPUMilli, limit.CPUMilli))
	}
	if limit.MemoryBytes > 0 && d.MemoryBytes > limit.MemoryBytes {
		over = append(over, fmt.Sprintf("%d bytes of memory (quota %d)", d.MemoryBytes, limit.MemoryBytes))
	}
	if limit.Pods > 0 && d.Pods > limit.Pods {
		over = append(over, fmt.Sprintf("%d pods (quota %d)", d.Pods, limit.Pods))
	}
	if len(over) == 0 {
		return nil
	}
	st := status.New(codes.FailedPrecondition, "the job needs more than tenant "+quote(t.ID)+"'s whole quota: "+strings.Join(over, ", "))
	if d, err := st.WithDetails(&errdetails.PreconditionFailure{Violations: []*errdetails.PreconditionFailure_Violation{{
		Type: "QUOTA", Subject: tenantName(t.ID), Description: strings.Join(over, ", "),
	}}}); err == nil {
		st = d
	}
	return st.Err()
}

func (s *JobServer) GetJob(ctx context.Context, req *pb.GetJobRequest) (*pb.Job, error) {
	tenantID, name, err := parseJob("name", req.GetName())
	if err != nil {
		return nil, err
	}
	j, err := s.store.JobGet(ctx, tenantID, name)
	if err != nil {
		return nil, err
	}
	return jobToPB(j), nil
}

func (s *JobServer) ListJobs(ctx context.Context, req *pb.ListJobsRequest) (*pb.ListJobsResponse, error) {
	tenantID, err := parseTenant("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	size, err := pageSize("pageSize", req.GetPageSize())
	if err != nil {
		return nil, err
	}
	f, err := parseJobFilter("filter", req.GetFilter())
	if err != nil {
		return nil, err
	}
	q := queryHash("jobs", tenantID, strings.TrimSpace(req.GetFilter()))
	cursor, err := decodePageToken("pageToken", req.GetPageToken(), q)
	if err != nil {
		return nil, err
	}
	jobs, next, err := s.store.JobList(ctx, tenantID, store.JobListParams{
		States: f.States, LabelEquals: f.LabelEquals, LabelExists: f.LabelExists,
		PageSize: size, Before: cursor,
	})
	if err != nil {
		return nil, err
	}
	resp := &pb.ListJobsResponse{NextPageToken: encodePageToken(next, q)}
	for _, j := range jobs {
		resp.Jobs = append(resp.Jobs, jobToPB(j))
	}
	return resp, nil
}

func (s *JobServer) CancelJob(ctx context.Context, req *pb.CancelJobRequest) (*pb.Job, error) {
	tenantID, name, err := parseJob("name", req.GetName())
	if err != nil {
		return nil, err
	}
	j, err := s.store.JobCancel(ctx, tenantID, name)
	if err != nil {
		return nil, err
	}
	return jobToPB(j), nil
}

func (s *JobServer) DeleteJob(ctx context.Context, req *pb.DeleteJobRequest) (*pb.DeleteJobResponse, error) {
	tenantID, name, err := parseJob("name", req.GetName())
	if err != nil {
		return nil, err
	}
	if err := s.store.JobDelete(ctx, tenantID, name); err != nil {
		return nil, err
	}
	return &pb.DeleteJobResponse{}, nil
}

func (s *JobServer) ListJobEvents(ctx context.Context, req *pb.ListJobEventsRequest) (*pb.ListJobEventsResponse, error) {
	tenantID, name, err := parseJob("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	size, err := pageSize("pageSize", req.GetPageSize())
	if err != nil {
		return nil, err
	}
	q := queryHash("events", tenantID, name)
	after, err := decodePageToken("pageToken", req.GetPageToken(), q)
	if err != nil {
		return nil, err
	}
	if _, err := s.store.JobGet(ctx, tenantID, name); err != nil {
		return nil, err
	}
	events, err := s.store.EventList(ctx, tenantID, name, after, size)
	if err != nil {
		return nil, err
	}
	resp := &pb.ListJobEventsResponse{}
	for _, e := range events {
		resp.Events = append(resp.Events, eventToPB(e))
	}
	if len(events) == size {
		resp.NextPageToken = encodePageToken(events[len(events)-1].ID, q)
	}
	return resp, nil
}

// deps are what the handlers share.
type deps struct {
	store     Store
	kube      Kube
	events    Notifications
	log       *slog.Logger
	now       func() time.Time
	pollEvery time.Duration
	nsPrefix  string
}

// Deps configures the API servers.
type Deps struct {
	// Store is Postgres. Required.
	Store Store
	// Kube writes tenant secrets and reads pod logs. Optional: without it,
	// secret writes are UNAVAILABLE and logs come only from what was kept.
	Kube Kube
	// Events wakes watchers when events are written. Optional: watchers
	// then poll.
	Events Notifications
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
	// WatchPoll is how often watchers poll without a notification. Defaults to 2s.
	WatchPoll time.Duration
	// NamespacePrefix is put before a tenant id to make its namespace.
	// Defaults to "ty-".
	NamespacePrefix string
}

func (d Deps) withDefaults() deps {
	out := deps{store: d.Store, kube: d.Kube, events: d.Events, log: d.Logger, now: d.Now, pollEvery: d.WatchPoll, nsPrefix: d.NamespacePrefix}
	if out.log == nil {
		out.log = slog.Default()
	}
	if out.now == nil {
		out.now = time.Now
	}
	if out.pollEvery <= 0 {
		out.pollEvery = 2 * time.Second
	}
	if out.nsPrefix == "" {
		out.nsPrefix = "ty-"
	}
	return out
}
