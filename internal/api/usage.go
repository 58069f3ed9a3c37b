package api

import (
	"context"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// UsageServer implements trainyard.v1.UsageService: reading the usage
// ledger (store/ledger.go). Who may read whose usage is the Authorizer's:
// a tenant's viewers and up their tenant's, platform admins every
// tenant's (parent tenants/-). The CSV form is the gateway's
// (internal/usage), from this answer.
type UsageServer struct {
	pb.UnimplementedUsageServiceServer
	deps
}

// NewUsageServer returns the UsageService implementation.
func NewUsageServer(d Deps) *UsageServer { return &UsageServer{deps: d.withDefaults()} }

// AllTenants is the parent that asks about every tenant (AIP-159).
const AllTenants = "tenants/-"

// Usage query bounds.
const (
	// DefaultUsageWindow is the window when start is unset.
	DefaultUsageWindow = 7 * 24 * time.Hour
	// MaxUsageWindow is the longest window: the ledger's 13 months.
	MaxUsageWindow = 400 * 24 * time.Hour
	// maxGroupLabels bounds the labels a query groups by.
	maxGroupLabels = 8
)

// QueryUsage sums the ledger by bucket, tenant and group.
func (s *UsageServer) QueryUsage(ctx context.Context, req *pb.QueryUsageRequest) (*pb.QueryUsageResponse, error) {
	var (
		p   store.UsageQueryParams
		err error
		vs  job.Violations
	)
	if req.GetParent() != AllTenants {
		if p.Tenant, err = parseTenant("parent", req.GetParent()); err != nil {
			return nil, err
		}
	}
	width := time.Hour
	step := req.GetStep()
	switch step {
	case "", "1h":
		step, p.Step = "1h", store.StepHour
	case "1d":
		width, p.Step = 24*time.Hour, store.StepDay
	default:
		vs.Add("step", "%s is not a step; 1h or 1d", quote(step))
	}
	groupBy := strings.ReplaceAll(req.GetGroupBy(), " ", "")
	p.ByCreator, p.ByLabels = groupDimensions(groupBy, &vs)
	now := s.now().UTC()
	end := now
	if t := req.GetEnd(); t != nil {
		if err := t.CheckValid(); err != nil {
			vs.Add("end", "is not a valid time")
		}
		end = t.AsTime()
	}
	start := end.Add(-DefaultUsageWindow)
	if t := req.GetStart(); t != nil {
		if err := t.CheckValid(); err != nil {
			vs.Add("start", "is not a valid time")
		}
		start = t.AsTime()
	}
	// UTC days and hours: Truncate rounds from the zero time, which is at
	// midnight UTC.
	p.Start = start.UTC().Truncate(width)
	p.End = end.UTC().Truncate(width)
	if p.End.Before(end) {
		p.End = p.End.Add(width)
	}
	switch {
	case !p.End.After(p.Start):
		vs.Add("end", "must be after start")
	case p.End.Sub(p.Start) > MaxUsageWindow:
		vs.Add("end", "the window is %s long; at most %d days (the ledger keeps 13 months)", p.End.Sub(p.Start), int(MaxUsageWindow.Hours()/24))
	}
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	p.Now = now
	rows, err := s.store.UsageQuery(ctx, p)
	if err != nil {
		return nil, err
	}
	resp := &pb.QueryUsageResponse{
		Start: timestamppb.New(p.Start), End: timestamppb.New(p.End), Step: step, GroupBy: groupBy,
		Rows: make([]*pb.UsageRow, 0, len(rows)),
	}
	for _, r := range rows {
		row := &pb.UsageRow{
			Start: timestamppb.New(r.Start), End: timestamppb.New(r.Start.Add(width)), Tenant: r.Tenant,
			Creator:  r.Creator,
			GpuHours: r.GPUSeconds / 3600, CpuHours: r.CPUSeconds / 3600, MemoryGibHours: r.MemoryByteSeconds / (1 << 30) / 3600,
			GpuHoursUsed: r.GPUUsedSeconds / 3600, GpuHoursIdle: r.GPUIdleSeconds / 3600,
		}
		if len(p.ByLabels) > 0 {
			row.Labels = make(map[string]string, len(p.ByLabels))
			for i, k := range p.ByLabels {
				row.Labels[k] = r.Labels[i]
			}
		}
		resp.Rows = append(resp.Rows, row)
	}
	return resp, nil
}

// groupDimensions parses a groupBy: "creator" and "label:<key>", comma
// separated, each once.
func groupDimensions(groupBy string, vs *job.Violations) (creator bool, labels []string) {
	if groupBy == "" {
		return false, nil
	}
	seen := map[string]bool{}
	for _, d := range strings.Split(groupBy, ",") {
		if seen[d] {
			vs.Add("groupBy", "%s is named twice", quote(d))
			continue
		}
		seen[d] = true
		if d == "creator" {
			creator = true
			continue
		}
		k, ok := strings.CutPrefix(d, "label:")
		if !ok {
			vs.Add("groupBy", "%s is not a grouping; creator or label:<key>, comma separated", quote(d))
			continue
		}
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			vs.Add("groupBy", "%s: the label key %s", quote(d), strings.Join(msgs, "; "))
			continue
		}
		labels = append(labels, k)
	}
	if len(labels) > maxGroupLabels {
		vs.Add("groupBy", "groups by %d labels; at most %d", len(labels), maxGroupLabels)
	}
	return creator, labels
}
