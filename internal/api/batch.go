package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// BatchCreateJobs creates up to store.MaxBatchCreate jobs of one tenant, all
// or none (AIP-233). Each item is what CreateJob takes and is treated as
// CreateJob treats it — request ids seen before are looked up first and
// return their jobs without validation — but the batch is validated as a
// whole: every violation of every item, its field prefixed with
// "requests[i].", in one INVALID_ARGUMENT; the tenant, its secrets (one
// read) and its quota are read once; and the new jobs are written in one
// statement (store.JobCreateMany).
func (s *JobServer) BatchCreateJobs(ctx context.Context, req *pb.BatchCreateJobsRequest) (*pb.BatchCreateJobsResponse, error) {
	tenantID, err := parseTenant("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	reqs := req.GetRequests()
	switch {
	case len(reqs) == 0:
		return nil, invalid(violation("requests", "at least one job is required"))
	case len(reqs) > store.MaxBatchCreate:
		return nil, invalid(violation("requests", fmt.Sprintf("%d jobs; at most %d per call", len(reqs), store.MaxBatchCreate)))
	}
	out := make([]*pb.Job, len(reqs))
	rids, err := s.batchReplays(ctx, tenantID, reqs, out)
	if err != nil {
		return nil, err
	}

	// The new items: each validated on its own, then against the tenant.
	var (
		vs    job.Violations
		items []store.JobCreateParams
		index []int // items[k] is reqs[index[k]]
		names = map[string]int{}
	)
	for i, r := range reqs {
		if out[i] != nil {
			continue
		}
		at := fmt.Sprintf("requests[%d].", i)
		if r.GetJob() == nil {
			vs.Add(at+"job", "is required")
			continue
		}
		in := r.GetJob()
		j := job.Job{Tenant: tenantID, Name: r.GetJobId(), DisplayName: in.GetDisplayName(),
			Labels: in.GetLabels(), Spec: specFromPB(in.GetSpec())}
		for _, v := range readyNewJob(ctx, &j) {
			vs.Add(at+v.Field, "%s", v.Description)
		}
		if first, ok := names[j.Name]; ok && r.GetJobId() != "" {
			vs.Add(at+"jobId", "%s is also the id of requests[%d]", quote(j.Name), first)
		}
		names[j.Name] = i
		items = append(items, store.JobCreateParams{Job: j, RequestID: rids[i]})
		index = append(index, i)
	}
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	if len(items) > 0 {
		if err := s.checkBatchAgainstTenant(ctx, tenantID, items, index); err != nil {
			return nil, err
		}
		ptrs := make([]*job.Job, len(items))
		for k := range items {
			ptrs[k] = &items[k].Job
		}
		at := func(k int) string { return fmt.Sprintf("requests[%d].", index[k]) }
		if vs, err := s.resolveDependencies(ctx, tenantID, ptrs, at); err != nil || len(vs) > 0 {
			return nil, cmpErr(err, vs)
		}
		created, err := s.store.JobCreateMany(ctx, tenantID, items)
		if err != nil {
			return nil, batchStatus(err, index)
		}
		for k, c := range created {
			out[index[k]] = jobToPB(c.Job)
		}
	}
	return &pb.BatchCreateJobsResponse{Jobs: out}, nil
}

// batchReplays checks each item's parent and request id, and puts in out
// the jobs of request ids seen before (one read for the batch). It returns
// the request ids by item.
func (s *JobServer) batchReplays(ctx context.Context, tenantID string, reqs []*pb.CreateJobRequest, out []*pb.Job) ([]string, error) {
	var (
		vs   job.Violations
		rids = make([]string, len(reqs))
		seen = map[string]int{}
		ask  []string
	)
	for i, r := range reqs {
		at := fmt.Sprintf("requests[%d].", i)
		if p := r.GetParent(); p != "" && p != tenantName(tenantID) {
			vs.Add(at+"parent", "must be empty or %s, the batch's parent", quote(tenantName(tenantID)))
		}
		rid := r.GetRequestId()
		if rid == "" {
			continue
		}
		if !requestIDPattern.MatchString(rid) {
			vs.Add(at+"requestId", "must be 1-100 characters of letters, digits, '-' and '_'")
			continue
		}
		if first, ok := seen[rid]; ok {
			vs.Add(at+"requestId", "is also the request id of requests[%d]", first)
			continue
		}
		seen[rid] = i
		rids[i] = rid
		ask = append(ask, rid)
	}
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	before, err := s.store.JobGetByRequestIDs(ctx, tenantID, ask)
	if err != nil {
		return nil, err
	}
	for i, rid := range rids {
		r, ok := before[rid]
		switch {
		case rid == "" || !ok:
		case r.Deleted:
			return nil, status.Errorf(codes.NotFound, "requests[%d].requestId: job %s, which request id %s created, has been deleted; use a new request id to create another",
				i, quote(r.Job.Name), quote(rid))
		default:
			out[i] = jobToPB(r.Job)
		}
	}
	return rids, nil
}

// checkBatchAgainstTenant is checkNewJob's reads for a whole batch: the
// tenant once, its secrets once (when any item refers to one), and that
// each job can ever fit its quota.
func (s *JobServer) checkBatchAgainstTenant(ctx context.Context, tenantID string, items []store.JobCreateParams, index []int) error {
	t, err := s.tenant(ctx, tenantID)
	if err != nil {
		return err
	}
	var vs job.Violations
	var refs [][]secretRef
	anyRefs := false
	for _, it := range items {
		r := secretRefs(it.Job.Spec)
		refs = append(refs, r)
		anyRefs = anyRefs || len(r) > 0
	}
	if anyRefs {
		secs, err := s.store.SecretList(ctx, tenantID)
		if err != nil {
			return err
		}
		for k, r := range refs {
			for _, v := range checkSecretRefs(tenantID, r, secs) {
				vs.Add(fmt.Sprintf("requests[%d].%s", index[k], v.Field), "%s", v.Description)
			}
		}
	}
	if len(vs) > 0 {
		return invalid(vs...)
	}
	for k, it := range items {
		if err := fitsEver(t, it.Job.Spec); err != nil {
			st := status.Convert(err)
			return status.Errorf(st.Code(), "requests[%d]: %s", index[k], st.Message())
		}
	}
	return nil
}

// batchStatus names the requests of a store.BatchError (index maps the
// store's items to the requests) under the code of its first item.
func batchStatus(err error, index []int) error {
	var be *store.BatchError
	if !errors.As(err, &be) || len(be.Items) == 0 {
		return err
	}
	code := Code(be.Items[0].Err)
	switch code {
	case codes.AlreadyExists, codes.NotFound, codes.FailedPrecondition, codes.Aborted:
	default:
		return err // internal, unavailable, …: the server's interceptor decides
	}
	parts := make([]string, len(be.Items))
	for k, it := range be.Items {
		field := "requests[%d]"
		if errors.Is(it.Err, store.ErrAlreadyExists) {
			field += ".jobId"
		}
		parts[k] = fmt.Sprintf(field+": %v", index[it.Index], it.Err)
	}
	return status.Error(code, strings.Join(parts, "; "))
}
