package api

import (
	"context"
	"fmt"
	"strings"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Cohorts' own pools (issue 42): PutCohort, GetCohort, ListCohorts and
// DeleteCohort of TenantService, for platform admins (the interceptor
// checked). A cohort's members are the tenants whose sharing names it.

const cohortPrefix = "cohorts/"

// parseCohort reads cohorts/{cohort}; the error names field.
func parseCohort(field, name string) (string, error) {
	id, ok := strings.CutPrefix(name, cohortPrefix)
	if !ok {
		return "", invalid(job.FieldViolation{Field: field, Description: fmt.Sprintf("%q is not a cohort name (cohorts/{cohort})", name)})
	}
	if err := tenant.ValidateCohortName(id); err != nil {
		return "", invalid(job.FieldViolation{Field: field, Description: err.Error()})
	}
	return id, nil
}

func cohortToPB(c tenant.Cohort) *pb.Cohort {
	out := &pb.Cohort{Name: cohortPrefix + c.Name, GpuTypes: c.GPUTypes, CreateTime: ts(c.CreateTime), UpdateTime: ts(c.UpdateTime)}
	if c.Nominal != (tenant.Quota{}) {
		out.NominalQuota = quotaToPB(&c.Nominal)
	}
	for _, t := range c.Tenants {
		out.Tenants = append(out.Tenants, tenantName(t))
	}
	return out
}

func (s *TenantServer) PutCohort(ctx context.Context, req *pb.PutCohortRequest) (*pb.Cohort, error) {
	in := req.GetCohort()
	if in == nil {
		return nil, invalid(job.FieldViolation{Field: "cohort", Description: "is required"})
	}
	name, err := parseCohort("cohort.name", in.GetName())
	if err != nil {
		return nil, err
	}
	c := tenant.Cohort{Name: name, GPUTypes: in.GetGpuTypes()}
	if q := quotaFromPB(in.GetNominalQuota()); q != nil {
		c.Nominal = *q
	}
	var vs job.Violations
	vs.AddAt("cohort.", tenant.ValidateCohort(&c))
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	out, err := s.store.CohortPut(ctx, c)
	if err != nil {
		return nil, err
	}
	return cohortToPB(out), nil
}

func (s *TenantServer) GetCohort(ctx context.Context, req *pb.GetCohortRequest) (*pb.Cohort, error) {
	name, err := parseCohort("name", req.GetName())
	if err != nil {
		return nil, err
	}
	c, err := s.store.CohortGet(ctx, name)
	if err != nil {
		return nil, err
	}
	return cohortToPB(c), nil
}

func (s *TenantServer) ListCohorts(ctx context.Context, _ *pb.ListCohortsRequest) (*pb.ListCohortsResponse, error) {
	list, err := s.store.CohortList(ctx)
	if err != nil {
		return nil, err
	}
	out := &pb.ListCohortsResponse{}
	for _, c := range list {
		out.Cohorts = append(out.Cohorts, cohortToPB(c))
	}
	return out, nil
}

func (s *TenantServer) DeleteCohort(ctx context.Context, req *pb.DeleteCohortRequest) (*pb.DeleteCohortResponse, error) {
	name, err := parseCohort("name", req.GetName())
	if err != nil {
		return nil, err
	}
	if err := s.store.CohortDelete(ctx, name); err != nil {
		return nil, err
	}
	return &pb.DeleteCohortResponse{}, nil
}
