package api

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

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
	tails *tailReads // WatchJobs streams' shared reads
}

// NewJobServer returns the JobService implementation.
func NewJobServer(d Deps) *JobServer {
	s := &JobServer{deps: d.withDefaults()}
	s.tails = &tailReads{store: s.store}
	return s
}

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// CreateJob creates a job. A request id seen before in the tenant (AIP-155)
// is looked up first, before anything is validated: a retry of a create that
// committed returns that job, as it is now, even if the tenant's quota, its
// secrets or the validation rules changed since (the request is not compared
// with the first one). If that job has been deleted since, the retry is
// NOT_FOUND: the resource the request created is gone, and creating another
// one silently would turn one request into two jobs. Once a worker has
// purged the deleted job, its request id is forgotten.
func (s *JobServer) CreateJob(ctx context.Context, req *pb.CreateJobRequest) (*pb.Job, error) {
	tenantID, err := parseTenant("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	rid := req.GetRequestId()
	if first, err := s.requestedBefore(ctx, tenantID, rid); first != nil || err != nil {
		return first, err
	}
	if req.GetJob() == nil {
		return nil, invalid(violation("job", "is required"))
	}
	in := req.GetJob()
	j := job.Job{
		Tenant:      tenantID,
		Name:        req.GetJobId(),
		DisplayName: in.GetDisplayName(),
		Labels:      in.GetLabels(),
		Spec:        specFromPB(in.GetSpec()),
	}
	if err := s.checkNewJob(ctx, tenantID, &j); err != nil {
		return nil, err
	}
	if vs, err := s.resolveDependencies(ctx, tenantID, []*job.Job{&j}, func(int) string { return "" }); err != nil || len(vs) > 0 {
		return nil, cmpErr(err, vs)
	}
	created, _, err := s.store.JobCreate(ctx, store.JobCreateParams{Job: j, RequestID: rid, Caller: callerCheck(ctx)})
	if role := (*store.RoleError)(nil); errors.As(err, &role) {
		return nil, auth.RoleRefusal(role.Tenant, role.Have, role.Need)
	}
	if err != nil {
		return nil, err
	}
	return jobToPB(created), nil
}

// callerCheck is the role CreateJob's statement checks again (the
// interceptor may have allowed the call from a remembered tenant record,
// auth.TenantCache): the caller's, unless they are a platform admin, who
// is admin in every tenant.
func callerCheck(ctx context.Context) *store.RoleCheck {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.PlatformAdmin {
		return nil
	}
	perm, _ := auth.RequiredPermission(pb.JobService_CreateJob_FullMethodName)
	return &store.RoleCheck{Subject: p.Subject, Groups: p.Groups, Role: perm.Role()}
}

// cmpErr is err, else INVALID_ARGUMENT with vs.
func cmpErr(err error, vs job.Violations) error {
	if err != nil {
		return err
	}
	return invalid(vs...)
}

// requestedBefore is the job an earlier request with request id rid
// created, as it is now; nil when there was none (or rid is empty).
func (s *JobServer) requestedBefore(ctx context.Context, tenantID, rid string) (*pb.Job, error) {
	if rid == "" {
		return nil, nil
	}
	if !requestIDPattern.MatchString(rid) {
		return nil, invalid(violation("requestId", "must be 1-100 characters of letters, digits, '-' and '_'"))
	}
	first, ok, err := s.store.JobGetByRequestID(ctx, tenantID, rid)
	if err != nil || !ok {
		return nil, err
	}
	return jobToPB(first), nil
}

// checkNewJob readies a job to be created in the tenant: an id when it has
// none, the caller as its creator, defaults; and validates the spec, the
// tenant secrets it names, and that it can ever fit the tenant's quota.
func (s *JobServer) checkNewJob(ctx context.Context, tenantID string, j *job.Job) error {
	if vs := readyNewJob(ctx, j); len(vs) > 0 {
		return invalid(vs...)
	}
	t, err := s.tenant(ctx, tenantID)
	if err != nil {
		return err
	}
	vs, err := s.missingSecrets(ctx, tenantID, j.Spec)
	if err != nil {
		return err
	}
	if len(vs) > 0 {
		return invalid(vs...)
	}
	err = fitsEver(t, j.Spec)
	if a, ok := auth.AccessFrom(ctx); err != nil && ok && a.Remembered {
		// The quota remembered may be a notification old: refuse only on
		// the quota as it is.
		if t, rerr := s.store.TenantGet(ctx, tenantID); rerr == nil {
			err = fitsEver(t, j.Spec)
		}
	}
	return err
}

// readyNewJob gives j an id when it has none, the caller as its creator
// and the spec's defaults, and validates it on its own (nothing read).
func readyNewJob(ctx context.Context, j *job.Job) job.Violations {
	if j.Name == "" {
		j.Name = job.NewJobID()
	}
	if p, ok := auth.PrincipalFrom(ctx); ok {
		j.Creator = p.Subject
	}
	j.Spec.Default()
	return job.Validate(j)
}

// fitsEver refuses a spec whose demand can not be computed, or exceeds
// the tenant's whole quota.
func fitsEver(t tenant.Tenant, spec job.Spec) error {
	demand, err := spec.Demand()
	if err != nil {
		return invalid(violation("spec", err.Error()))
	}
	return neverFits(t, demand)
}

// secretRef is one place a job spec uses a tenant secret.
type secretRef struct {
	field  string // where, for the violation
	secret string
	key    string // "" for a volume: every key
	keyAt  string // field of the key
}

func secretRefs(spec job.Spec) []secretRef {
	var refs []secretRef
	for i, r := range spec.Replicas {
		for k, e := range r.Env {
			if e.Secret != nil {
				p := fmt.Sprintf("spec.replicas[%d].env[%d].secret", i, k)
				refs = append(refs, secretRef{field: p + ".secret", secret: e.Secret.Secret, key: e.Secret.Key, keyAt: p + ".key"})
			}
		}
		for k, v := range r.SecretVolumes {
			refs = append(refs, secretRef{field: fmt.Sprintf("spec.replicas[%d].secretVolumes[%d].secret", i, k), secret: v.Secret})
		}
	}
	return refs
}

// missingSecrets names each reference to a tenant secret, or to a key of
// one, that does not exist: a pod referring to it would be stuck in
// CreateContainerConfigError. One query reads the tenant's secret names and
// keys (never values), and only when the spec refers to any.
func (s *JobServer) missingSecrets(ctx context.Context, tenantID string, spec job.Spec) (job.Violations, error) {
	refs := secretRefs(spec)
	if len(refs) == 0 {
		return nil, nil
	}
	secs, err := s.store.SecretList(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	return checkSecretRefs(tenantID, refs, secs), nil
}

func checkSecretRefs(tenantID string, refs []secretRef, secs []tenant.Secret) job.Violations {
	keys := make(map[string]map[string]bool, len(secs))
	for _, sec := range secs {
		keys[sec.Name] = map[string]bool{}
		for _, k := range sec.Keys {
			keys[sec.Name][k] = true
		}
	}
	var vs job.Violations
	for _, r := range refs {
		have, ok := keys[r.secret]
		switch {
		case !ok:
			vs.Add(r.field, "secret %s does not exist in tenant %s", quote(r.secret), quote(tenantID))
		case r.key != "" && !have[r.key]:
			vs.Add(r.keyAt, "secret %s has no key %s (it has: %s)", quote(r.secret), quote(r.key), strings.Join(sortedSet(have), ", "))
		}
	}
	return vs
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// neverFits refuses a job that asks for more than the tenant's whole quota:
// it would wait in the queue forever.
func neverFits(t tenant.Tenant, d job.Vector) error {
	limit, err := t.Quota.Limits()
	if err != nil {
		return err
	}
	var over []string
	for _, r := range d.Over(limit) {
		over = append(over, fmt.Sprintf("%s %s (quota %s)", r.Format(d[r]), r.Human(), r.Format(limit[r])))
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
	out := jobToPB(j)
	withTFConfig(out, j, tenant.NamespaceName(s.nsPrefix, tenantID))
	figs, err := s.store.GPUFiguresGet(ctx, tenantID, j.UID)
	if err != nil {
		return nil, err
	}
	withGPUUtilization(out, figs)
	return out, s.withQueue(ctx, tenantID, out)
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
	page, err := s.store.JobList(ctx, tenantID, store.JobListParams{
		States: f.States, LabelEquals: f.LabelEquals, LabelExists: f.LabelExists, Creator: f.Creator,
		PageSize: size, Before: cursor,
	})
	if err != nil {
		return nil, err
	}
	resp := &pb.ListJobsResponse{NextPageToken: encodePageToken(page.Next, q), WatchAfterEventId: page.WatchAfter}
	for _, j := range page.Jobs {
		resp.Jobs = append(resp.Jobs, jobSummaryToPB(j))
	}
	return resp, s.withQueue(ctx, tenantID, resp.Jobs...)
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

// SuspendJob stops a job's pods gracefully and holds it SUSPENDED, its
// quota released (issue 42).
func (s *JobServer) SuspendJob(ctx context.Context, req *pb.SuspendJobRequest) (*pb.Job, error) {
	tenantID, name, err := parseJob("name", req.GetName())
	if err != nil {
		return nil, err
	}
	j, err := s.store.JobSuspend(ctx, tenantID, name)
	if err != nil {
		return nil, err
	}
	return jobToPB(j), nil
}

// ResumeJob queues a suspended job again.
func (s *JobServer) ResumeJob(ctx context.Context, req *pb.ResumeJobRequest) (*pb.Job, error) {
	tenantID, name, err := parseJob("name", req.GetName())
	if err != nil {
		return nil, err
	}
	j, err := s.store.JobResume(ctx, tenantID, name)
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
	// EventList is NOT_FOUND for a missing job: no separate JobGet.
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
