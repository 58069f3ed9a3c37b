package api

import (
	"context"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tfjob"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// ImportTFJob converts a Kubeflow TFJob (internal/tfjob) and creates the
// job exactly as CreateJob does: same idempotency, defaults, validation,
// secret and quota checks, same audit record. Fields Trainyard cannot
// honour refuse the import, one violation each at its path under "tfjob.",
// unless the caller allows warnings. The id is the request's job_id, else
// the TFJob's metadata.name, so that a manifest submitted twice is
// ALREADY_EXISTS as kubectl apply's create would be.
func (s *JobServer) ImportTFJob(ctx context.Context, req *pb.ImportTFJobRequest) (*pb.ImportTFJobResponse, error) {
	tenantID, err := parseTenant("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	rid := req.GetRequestId()
	if !req.GetValidateOnly() {
		if first, err := s.requestedBefore(ctx, tenantID, rid); first != nil || err != nil {
			return &pb.ImportTFJobResponse{Job: first}, err
		}
	}
	if req.GetTfjob() == nil {
		return nil, invalid(violation("tfjob", "is required: the TFJob manifest"))
	}
	manifest, err := protojson.Marshal(req.GetTfjob())
	if err != nil {
		return nil, invalid(violation("tfjob", err.Error()))
	}
	res, err := tfjob.Convert(manifest, tfjob.Options{PriorityClasses: s.tfjobPriorities})
	if err != nil {
		return nil, invalid(violation("tfjob", err.Error()))
	}
	var refused job.Violations
	out := &pb.ImportTFJobResponse{}
	for _, is := range res.Issues {
		unsupported := is.Severity == tfjob.Unsupported
		out.Warnings = append(out.Warnings, &pb.ImportWarning{Field: is.Field, Description: is.Message, Unsupported: unsupported})
		if unsupported && !req.GetAllowWarnings() {
			refused.Add("tfjob."+is.Field, "%s", is.Message)
		}
	}
	if len(refused) > 0 {
		refused.Add("allowWarnings", "is false: set it to run the job without what the fields above ask for")
		return nil, invalid(refused...)
	}
	j := res.Job
	j.Tenant = tenantID
	if id := req.GetJobId(); id != "" {
		j.Name = id
	}
	if err := s.checkNewJob(ctx, tenantID, &j); err != nil {
		return nil, err
	}
	if req.GetValidateOnly() {
		out.Job = jobToPB(j)
		return out, nil
	}
	created, _, err := s.store.JobCreate(ctx, store.JobCreateParams{Job: j, RequestID: rid})
	if err != nil {
		return nil, err
	}
	out.Job = jobToPB(created)
	return out, nil
}
