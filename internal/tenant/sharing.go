package tenant

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Sharing is how a tenant shares quota with the other tenants of its
// cohort (issue 42). Its zero value is no sharing: the quota is a wall.
// With a Cohort, Tenant.Quota is the tenant's nominal (guaranteed) quota;
// internal/admission decides with it (admission.Sharing).
type Sharing struct {
	// Cohort names the tenant's cohort ("": none).
	Cohort string `json:"cohort,omitempty"`
	// BorrowingLimit caps what the tenant may use above its nominal
	// quota (nil: the cohort's whole unused pool; a zero field: none of
	// that resource).
	BorrowingLimit *Quota `json:"borrowingLimit,omitempty"`
	// LendingLimit caps what others may borrow of its unused nominal
	// quota (nil: all of it).
	LendingLimit *Quota `json:"lendingLimit,omitempty"`
	// Weight divides the tenant's share in fair sharing (0: 1).
	Weight float64 `json:"weight,omitempty"`
	// Reclaim says which borrowers the tenant may preempt to get its
	// nominal quota back: ANY (default), LOWER_PRIORITY, NEVER.
	Reclaim ReclaimPolicy `json:"reclaim,omitempty"`
	// FairSharePreemption lets the tenant's borrowing jobs preempt
	// borrowers of a larger weighted share (off by default).
	FairSharePreemption bool `json:"fairSharePreemption,omitempty"`
	// UsageHalfLifeSeconds turns on fair share that remembers: the
	// tenant's share counts its decayed past usage with this half-life
	// (0: off).
	UsageHalfLifeSeconds int64 `json:"usageHalfLifeSeconds,omitempty"`
	// Budget of GPU-hours per period (nil: none).
	Budget *Budget `json:"budget,omitempty"`
	// GPUTypes is the nominal quota of GPUs per GPU model (the node label
	// nvidia.com/gpu.product).
	GPUTypes map[string]int64 `json:"gpuTypes,omitempty"`
}

// ReclaimPolicy is Kueue's reclaimWithinCohort.
type ReclaimPolicy string

const (
	ReclaimAny           ReclaimPolicy = "ANY"
	ReclaimLowerPriority ReclaimPolicy = "LOWER_PRIORITY"
	ReclaimNever         ReclaimPolicy = "NEVER"
)

// Budget is a tenant's GPU-hour budget.
type Budget struct {
	GPUHours   float64          `json:"gpuHours"`
	Period     BudgetPeriod     `json:"period,omitempty"`
	OverBudget OverBudgetPolicy `json:"overBudget,omitempty"`
}

// BudgetPeriod is the period a budget is counted over.
type BudgetPeriod string

const (
	// PeriodMonth: the calendar month (UTC); the default.
	PeriodMonth BudgetPeriod = "MONTH"
	// PeriodRolling30d: the last 30 days.
	PeriodRolling30d BudgetPeriod = "ROLLING_30D"
)

// OverBudgetPolicy says what a tenant's GPU jobs do once the budget is
// used up.
type OverBudgetPolicy string

const (
	// OverBudgetWait: they wait with reason BUDGET (the default).
	OverBudgetWait OverBudgetPolicy = "WAIT"
	// OverBudgetBorrowOnly: they run only on borrowed capacity, first in
	// line for reclaim.
	OverBudgetBorrowOnly OverBudgetPolicy = "BORROW_ONLY"
)

// UsageHalfLife is the history's half-life (0: no history).
func (s Sharing) UsageHalfLife() time.Duration {
	return time.Duration(s.UsageHalfLifeSeconds) * time.Second
}

// PeriodStart is when the budget's period that contains now began (UTC
// days: the ledger counts GPU-seconds per day).
func (b Budget) PeriodStart(now time.Time) time.Time {
	now = now.UTC()
	if b.Period == PeriodRolling30d {
		d := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, -29)
	}
	return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// Reset estimates when the used-up budget frees again: the next month,
// or, rolling, when the oldest day with usage in the window (firstDay)
// leaves it.
func (b Budget) Reset(now, firstDay time.Time) time.Time {
	now = now.UTC()
	if b.Period == PeriodRolling30d {
		if firstDay.IsZero() {
			firstDay = b.PeriodStart(now)
		}
		return firstDay.UTC().AddDate(0, 0, 30)
	}
	return time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

// MaxWeight bounds a tenant's weight.
const MaxWeight = 1000

// MaxCohortLength bounds a cohort's name (a DNS-1123 label, as ids).
const MaxCohortLength = 63

func (v *violations) sharing(s *Sharing) {
	if s.Cohort != "" {
		if err := dnsLabel("cohort", s.Cohort, MaxCohortLength); err != nil {
			v.Add("sharing.cohort", "%s", err.Error())
		}
	}
	for _, l := range []struct {
		path string
		q    *Quota
	}{{"sharing.borrowingLimit", s.BorrowingLimit}, {"sharing.lendingLimit", s.LendingLimit}} {
		if l.q == nil {
			continue
		}
		if s.Cohort == "" {
			v.Add(l.path, "is set but the tenant has no cohort (sharing.cohort)")
		}
		before := len(v.Violations)
		v.quota(l.q)
		for i := before; i < len(v.Violations); i++ {
			v.Violations[i].Field = l.path + strings.TrimPrefix(v.Violations[i].Field, "quota")
		}
	}
	if s.Weight < 0 || s.Weight > MaxWeight || math.IsNaN(s.Weight) {
		v.Add("sharing.weight", "%v is out of range: 0 (meaning 1) to %d", s.Weight, MaxWeight)
	}
	switch s.Reclaim {
	case "", ReclaimAny, ReclaimLowerPriority, ReclaimNever:
	default:
		v.Add("sharing.reclaim", "%q is not one of ANY, LOWER_PRIORITY, NEVER", s.Reclaim)
	}
	if s.UsageHalfLifeSeconds < 0 || s.UsageHalfLifeSeconds > 365*24*3600 {
		v.Add("sharing.usageHalfLifeSeconds", "%d is out of range: 0 (no history) to one year", s.UsageHalfLifeSeconds)
	}
	if b := s.Budget; b != nil {
		if b.GPUHours <= 0 || math.IsNaN(b.GPUHours) || math.IsInf(b.GPUHours, 0) {
			v.Add("sharing.budget.gpuHours", "%v must be a positive number of GPU-hours", b.GPUHours)
		}
		switch b.Period {
		case "", PeriodMonth, PeriodRolling30d:
		default:
			v.Add("sharing.budget.period", "%q is not one of MONTH, ROLLING_30D", b.Period)
		}
		switch b.OverBudget {
		case "", OverBudgetWait:
		case OverBudgetBorrowOnly:
			if s.Cohort == "" {
				v.Add("sharing.budget.overBudget", "BORROW_ONLY needs a cohort to borrow in (sharing.cohort)")
			}
		default:
			v.Add("sharing.budget.overBudget", "%q is not one of WAIT, BORROW_ONLY", b.OverBudget)
		}
	}
	models := make([]string, 0, len(s.GPUTypes))
	for m := range s.GPUTypes {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		path := fmt.Sprintf("sharing.gpuTypes[%q]", m)
		if m == "" || len(m) > 63 {
			v.Add(path, "a GPU model must be 1 to 63 characters (a node label value)")
		}
		if s.GPUTypes[m] < 0 {
			v.Add(path, "%d is negative", s.GPUTypes[m])
		}
	}
}
