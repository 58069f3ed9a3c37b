package scheduler

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Sharing across tenants (issue 42): the tenants' sharing settings become
// admission.Sharing, with what the usage ledger (store/ledger.go, issue
// 44) says of them: GPU-seconds in the budget's period and decayed usage
// for fair share that remembers. The ledger is written by the jobs' own
// transitions, not by the scheduler; the leader reads it every
// UsageRefresh (rolling it up first) and, between reads, advances its copy
// by what the admitted jobs hold. A new leader reads it at its first
// cycle: nothing is lost in a fail-over, and every read corrects the copy.

// ledger is the leader's copy of what the usage ledger says.
type ledger struct {
	readAt  time.Time // zero: read at the next cycle
	at      time.Time // what is counted runs up to here
	tenants map[string]*tenantLedger
	// used is what each tenant's jobs held after the last commit.
	used map[string]job.Vector
}

type tenantLedger struct {
	decayed admission.Usage
	// budgetSeconds are the GPU-seconds since budgetFrom (the budget
	// period's start when read; zero: no budget), firstUse the first
	// hour with any.
	budgetFrom    time.Time
	budgetSeconds float64
	firstUse      time.Time
	halfLife      time.Duration
}

// unlimited stands for "no limit" in a borrowing or lending limit's
// dimension: a limit's unset field does not limit (as a quota's).
const unlimited = math.MaxInt64 / 4

// limitVector is a borrowing or lending limit as admission reads it.
func limitVector(q *tenant.Quota) (*job.Vector, error) {
	if q == nil {
		return nil, nil
	}
	v, err := q.Limits()
	for r := range v {
		if v[r] == 0 {
			v[r] = unlimited
		}
	}
	return &v, err
}

// sharingOf is a tenant's sharing as admission reads it, with its ledger.
func sharingOf(s tenant.Sharing, tl *tenantLedger, now time.Time) (admission.Sharing, []error) {
	var errs []error
	out := admission.Sharing{
		Cohort: s.Cohort, Weight: s.Weight, Reclaim: admission.ReclaimPolicy(s.Reclaim),
		FairSharePreemption: s.FairSharePreemption, GPUTypes: s.GPUTypes,
	}
	var err error
	if out.BorrowingLimit, err = limitVector(s.BorrowingLimit); err != nil {
		errs = append(errs, err)
	}
	if out.LendingLimit, err = limitVector(s.LendingLimit); err != nil {
		errs = append(errs, err)
	}
	if s.UsageHalfLifeSeconds > 0 && tl != nil {
		out.Usage = tl.decayed
	}
	if b := s.Budget; b != nil && b.GPUHours > 0 {
		used, first := budgetUsed(*b, tl, now)
		out.Budget = admission.Budget{
			GPUHours: b.GPUHours, UsedGPUHours: used, ResetAt: b.Reset(now, first),
			OverBudget: admission.OverBudgetPolicy(b.OverBudget),
		}
		if out.Budget.OverBudget == "" {
			out.Budget.OverBudget = admission.OverBudgetWait
		}
	}
	return out, errs
}

// budgetUsed is the GPU-hours a tenant used in its budget's current
// period, and the first day with usage in it.
func budgetUsed(b tenant.Budget, tl *tenantLedger, now time.Time) (float64, time.Time) {
	if tl == nil || !tl.budgetFrom.Equal(b.PeriodStart(now)) {
		return 0, time.Time{}
	}
	var first time.Time
	if !tl.firstUse.IsZero() {
		first = utcDay(tl.firstUse)
	}
	return tl.budgetSeconds / 3600, first
}

// utcDay is the UTC midnight of t.
func utcDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// ledgerUpdate brings the leader's copy of the ledger to now: read again
// (after a rollup) every UsageRefresh, when a tenant's settings or budget
// period changed, and at a leadership's first cycle; else advanced by
// what the tenants' jobs held since the last cycle (ledger.used, set by
// ledgerHold at its commit).
func (s *Scheduler) ledgerUpdate(ctx context.Context, settings map[string]tenant.Sharing, now time.Time) error {
	if s.ledgerStale(settings, now) {
		return s.ledgerRead(ctx, settings, now)
	}
	elapsed := now.Sub(s.ledger.at)
	if elapsed <= 0 {
		return nil
	}
	s.ledger.at = now
	for id, tl := range s.ledger.tenants {
		used := s.ledger.used[id]
		if gpus := used[job.GPU]; gpus > 0 && !tl.budgetFrom.IsZero() {
			tl.budgetSeconds += float64(gpus) * elapsed.Seconds()
			if tl.firstUse.IsZero() {
				tl.firstUse = now.UTC().Truncate(time.Hour)
			}
		}
		if tl.halfLife > 0 {
			tl.decayed = admission.DecayUsage(tl.decayed, used, elapsed, tl.halfLife)
		}
	}
	return nil
}

// ledgerStale reports whether the copy must be read again.
func (s *Scheduler) ledgerStale(settings map[string]tenant.Sharing, now time.Time) bool {
	if s.ledger.readAt.IsZero() || now.Sub(s.ledger.readAt) >= s.cfg.UsageRefresh || now.Before(s.ledger.at) {
		return true
	}
	n := 0
	for id, sh := range settings {
		if sh.Budget == nil && sh.UsageHalfLifeSeconds <= 0 {
			continue
		}
		n++
		tl := s.ledger.tenants[id]
		if tl == nil || tl.halfLife != sh.UsageHalfLife() {
			return true
		}
		if from := budgetFrom(sh, now); !from.Equal(tl.budgetFrom) {
			return true
		}
	}
	return n != len(s.ledger.tenants)
}

// budgetFrom is where a tenant's budget counts from now (zero: none).
func budgetFrom(sh tenant.Sharing, now time.Time) time.Time {
	if b := sh.Budget; b != nil && b.GPUHours > 0 {
		return b.PeriodStart(now)
	}
	return time.Time{}
}

// ledgerRead rolls the ledger up and reads what the tenants with a budget
// or a usage history need of it.
func (s *Scheduler) ledgerRead(ctx context.Context, settings map[string]tenant.Sharing, now time.Time) error {
	var asks []store.SharingAsk
	for id, sh := range settings {
		from := budgetFrom(sh, now)
		if from.IsZero() && sh.UsageHalfLifeSeconds <= 0 {
			continue
		}
		asks = append(asks, store.SharingAsk{Tenant: id, BudgetFrom: from, HalfLife: sh.UsageHalfLife()})
	}
	read, err := s.store.UsageSharing(ctx, now, asks)
	if err != nil {
		return err
	}
	tenants := make(map[string]*tenantLedger, len(asks))
	for _, a := range asks {
		u := read[a.Tenant]
		tenants[a.Tenant] = &tenantLedger{
			decayed: admission.Usage(u.Decayed), budgetFrom: a.BudgetFrom, budgetSeconds: u.BudgetGPUSeconds,
			firstUse: u.FirstUse, halfLife: a.HalfLife,
		}
	}
	s.ledger.tenants, s.ledger.at, s.ledger.readAt = tenants, now, now
	return nil
}

// rollup rolls the ledger up and sets the tenants' ledger metrics, every
// UsageRefresh, idle or not (store.UsageRollup; any process may, the
// leader does).
func (s *Scheduler) rollup(ctx context.Context) error {
	now := time.Now()
	if !s.heldAt.IsZero() && now.Sub(s.heldAt) < s.cfg.UsageRefresh {
		return nil
	}
	if _, err := s.store.UsageRollup(ctx); err != nil {
		return err
	}
	u := now.UTC()
	held, err := s.store.UsageHeld(ctx, time.Date(u.Year(), u.Month(), 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		return err
	}
	s.metrics.observeHeld(held)
	s.heldAt = now
	if err := s.sampleQueue(ctx, s.cfg.Now()); err != nil {
		return fmt.Errorf("queue sample: %w", err)
	}
	return nil
}

// ledgerHold records what the tenants' jobs hold after a cycle's commit
// (the admitted ones, those it admitted included), for the next
// ledgerUpdate, and reports whether a tenant with a budget or a history
// holds anything: then idle cycles still read, to count it.
func (s *Scheduler) ledgerHold(v view, admitted []store.AdmittedJob) bool {
	now := map[admission.Key]bool{}
	for _, a := range admitted {
		now[admission.Key(a.Key)] = true
	}
	used := map[string]job.Vector{}
	for _, j := range v.snap.Jobs {
		if !j.Admitted && !now[j.Key] {
			continue
		}
		for _, g := range j.Groups {
			used[j.Key.Tenant] = used[j.Key.Tenant].Add(g.Request.Times(int64(g.Count)))
		}
	}
	s.ledger.used = used
	for id, u := range used {
		if sh := v.sharing[id]; (sh.Budget != nil || sh.UsageHalfLifeSeconds > 0) && !u.IsZero() {
			return true
		}
	}
	return false
}
