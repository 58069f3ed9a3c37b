package api

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// AuditServer implements trainyard.v1.AuditService: reading the audit log.
// The records are written by the store, with each change (internal/audit);
// nothing here or anywhere in the API changes them. Who may read which
// records is the Authorizer's: platform admins all (no parent), tenant
// admins their tenant's.
type AuditServer struct {
	pb.UnimplementedAuditServiceServer
	deps
}

// NewAuditServer returns the AuditService implementation.
func NewAuditServer(d Deps) *AuditServer { return &AuditServer{deps: d.withDefaults()} }

// ListAuditRecords lists records newest first, filtered and in keyset pages
// bound to the query.
func (s *AuditServer) ListAuditRecords(ctx context.Context, req *pb.ListAuditRecordsRequest) (*pb.ListAuditRecordsResponse, error) {
	var tenantID string
	if req.GetParent() != "" {
		var err error
		if tenantID, err = parseTenant("parent", req.GetParent()); err != nil {
			return nil, err
		}
	}
	var vs job.Violations
	size, err := pageSize("pageSize", req.GetPageSize())
	if err != nil {
		return nil, err
	}
	action := audit.Action(req.GetAction())
	if action != "" && !slices.Contains(audit.Actions, action) {
		names := make([]string, len(audit.Actions))
		for i, a := range audit.Actions {
			names[i] = string(a)
		}
		vs.Add("action", "%s is not an action; one of %s", quote(string(action)), strings.Join(names, ", "))
	}
	p := store.AuditListParams{Tenant: tenantID, Subject: req.GetSubject(), Action: action, PageSize: size}
	if t := req.GetStartTime(); t != nil {
		p.Since = t.AsTime()
	}
	if t := req.GetEndTime(); t != nil {
		p.Until = t.AsTime()
	}
	if !p.Since.IsZero() && !p.Until.IsZero() && !p.Until.After(p.Since) {
		vs.Add("endTime", "must be after startTime")
	}
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	q := queryHash("audit", tenantID, p.Subject, string(p.Action), stamp(req.GetStartTime().AsTime()), stamp(req.GetEndTime().AsTime()))
	if p.BeforeID, err = decodePageToken("pageToken", req.GetPageToken(), q); err != nil {
		return nil, err
	}
	recs, next, err := s.store.AuditList(ctx, p)
	if err != nil {
		return nil, err
	}
	resp := &pb.ListAuditRecordsResponse{NextPageToken: encodePageToken(next, q)}
	for _, r := range recs {
		out, err := auditRecordToPB(r)
		if err != nil {
			return nil, err
		}
		resp.AuditRecords = append(resp.AuditRecords, out)
	}
	return resp, nil
}

// stamp is a time in a query hash (the zero Timestamp for an unset one).
func stamp(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

func auditRecordToPB(r audit.Record) (*pb.AuditRecord, error) {
	details, err := structpb.NewStruct(r.Details)
	if err != nil {
		return nil, fmt.Errorf("audit record %d: details: %w", r.ID, err)
	}
	return &pb.AuditRecord{
		Id:       r.ID,
		Time:     ts(r.Time),
		Tenant:   tenantName(r.Tenant),
		Action:   string(r.Action),
		Resource: r.Resource,
		Details:  details,
		Actor: &pb.AuditActor{
			Subject: r.Actor.Subject, Groups: r.Actor.Groups, Issuer: r.Actor.Issuer,
			Address: r.Actor.Address, RequestId: r.Actor.ID,
		},
	}, nil
}
