package api

import (
	"math"
	"strings"
	"time"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// A tenant's sharing (issue 42): cohort, limits, weight, reclaim, fair
// share, history, budget, GPU models.

var (
	reclaimFromPB = map[pb.ReclaimPolicy]tenant.ReclaimPolicy{
		pb.ReclaimPolicy_RECLAIM_POLICY_UNSPECIFIED:    "",
		pb.ReclaimPolicy_RECLAIM_POLICY_ANY:            tenant.ReclaimAny,
		pb.ReclaimPolicy_RECLAIM_POLICY_LOWER_PRIORITY: tenant.ReclaimLowerPriority,
		pb.ReclaimPolicy_RECLAIM_POLICY_NEVER:          tenant.ReclaimNever,
	}
	periodFromPB = map[pb.BudgetPeriod]tenant.BudgetPeriod{
		pb.BudgetPeriod_BUDGET_PERIOD_UNSPECIFIED: "",
		pb.BudgetPeriod_BUDGET_PERIOD_MONTH:       tenant.PeriodMonth,
		pb.BudgetPeriod_BUDGET_PERIOD_ROLLING_30D: tenant.PeriodRolling30d,
	}
	overBudgetFromPB = map[pb.OverBudgetPolicy]tenant.OverBudgetPolicy{
		pb.OverBudgetPolicy_OVER_BUDGET_POLICY_UNSPECIFIED: "",
		pb.OverBudgetPolicy_OVER_BUDGET_POLICY_WAIT:        tenant.OverBudgetWait,
		pb.OverBudgetPolicy_OVER_BUDGET_POLICY_BORROW_ONLY: tenant.OverBudgetBorrowOnly,
	}
)

// sharingFields may be updated one by one (sharing.cohort, ...); a path
// below one of them (sharing.budget.gpu_hours, as the REST gateway builds
// a PATCH's mask from its body) updates that field whole.
var sharingFields = []string{"sharing.cohort", "sharing.borrowing_limit", "sharing.lending_limit", "sharing.weight",
	"sharing.reclaim_policy", "sharing.fair_share_preemption", "sharing.usage_half_life_seconds", "sharing.budget", "sharing.gpu_types"}

// sharingField is the field of sharingFields that path p is or is below
// ("" when none).
func sharingField(p string) string {
	for _, f := range sharingFields {
		if p == f || strings.HasPrefix(p, f+".") {
			return f
		}
	}
	return ""
}

func quotaFromPB(q *pb.Quota) *tenant.Quota {
	if q == nil {
		return nil
	}
	return &tenant.Quota{GPU: q.GetGpu(), CPU: q.GetCpu(), Memory: q.GetMemory(), Pods: q.GetPods()}
}

func quotaToPB(q *tenant.Quota) *pb.Quota {
	if q == nil {
		return nil
	}
	return &pb.Quota{Gpu: q.GPU, Cpu: q.CPU, Memory: q.Memory, Pods: q.Pods}
}

// sharingFieldsFromPB copies the sharing fields named in fields ("sharing"
// for all of them).
func sharingFieldsFromPB(in *pb.Sharing, s *tenant.Sharing, fields map[string]bool) {
	all := fields["sharing"]
	if all {
		*s = tenant.Sharing{}
	}
	set := func(f string) bool { return all || fields["sharing."+f] }
	if set("cohort") {
		s.Cohort = in.GetCohort()
	}
	if set("borrowing_limit") {
		s.BorrowingLimit = quotaFromPB(in.GetBorrowingLimit())
	}
	if set("lending_limit") {
		s.LendingLimit = quotaFromPB(in.GetLendingLimit())
	}
	if set("weight") {
		s.Weight = in.GetWeight()
	}
	if set("reclaim_policy") {
		s.Reclaim = reclaimFromPB[in.GetReclaimPolicy()]
	}
	if set("fair_share_preemption") {
		s.FairSharePreemption = in.GetFairSharePreemption()
	}
	if set("usage_half_life_seconds") {
		s.UsageHalfLifeSeconds = in.GetUsageHalfLifeSeconds()
	}
	if set("budget") {
		s.Budget = nil
		if b := in.GetBudget(); b != nil {
			s.Budget = &tenant.Budget{GPUHours: b.GetGpuHours(), Period: periodFromPB[b.GetPeriod()], OverBudget: overBudgetFromPB[b.GetOverBudget()]}
		}
	}
	if set("gpu_types") {
		s.GPUTypes = in.GetGpuTypes()
	}
}

// sharingToPB is nil for a tenant that does not share.
func sharingToPB(s tenant.Sharing) *pb.Sharing {
	if s.Cohort == "" && s.BorrowingLimit == nil && s.LendingLimit == nil && s.Weight == 0 && s.Reclaim == "" &&
		!s.FairSharePreemption && s.UsageHalfLifeSeconds == 0 && s.Budget == nil && len(s.GPUTypes) == 0 {
		return nil
	}
	out := &pb.Sharing{
		Cohort: s.Cohort, BorrowingLimit: quotaToPB(s.BorrowingLimit), LendingLimit: quotaToPB(s.LendingLimit),
		Weight: s.Weight, ReclaimPolicy: invert(reclaimFromPB)[s.Reclaim], FairSharePreemption: s.FairSharePreemption,
		UsageHalfLifeSeconds: s.UsageHalfLifeSeconds, GpuTypes: s.GPUTypes,
	}
	if b := s.Budget; b != nil {
		out.Budget = &pb.Budget{GpuHours: b.GPUHours, Period: invert(periodFromPB)[b.Period], OverBudget: invert(overBudgetFromPB)[b.OverBudget]}
	}
	return out
}

// sharingStatusToPB is what the usage ledger says of a tenant as of now:
// its decayed usage, and its budget's use in the current period (u asked
// from the period's start).
func sharingStatusToPB(s tenant.Sharing, u store.SharingUsage, now time.Time) *pb.SharingStatus {
	out := &pb.SharingStatus{}
	if s.UsageHalfLifeSeconds > 0 {
		var v job.Vector
		for _, r := range job.AllResources {
			v[r] = int64(math.Round(u.Decayed[r]))
		}
		out.DecayedUsage = quotaOfVector(v)
	}
	if b := s.Budget; b != nil {
		sec := u.BudgetGPUSeconds
		var first time.Time
		if !u.FirstUse.IsZero() {
			f := u.FirstUse.UTC()
			first = time.Date(f.Year(), f.Month(), f.Day(), 0, 0, 0, 0, time.UTC)
		}
		out.BudgetUsedGpuHours = sec / 3600
		out.BudgetRemainingGpuHours = max(b.GPUHours-sec/3600, 0)
		out.BudgetResetTime = ts(b.Reset(now, first))
	}
	return out
}
