package scheduler

import (
	"context"
	"math"
	"time"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Sharing across tenants (issue 42): the tenants' sharing settings become
// admission.Sharing, and the usage ledger — decayed usage for fair share
// that remembers, GPU-seconds per day for budgets — is kept by the leader
// in memory, advanced every cycle by what the admitted jobs hold (from
// admission to end), and written to Postgres every UsageFlush, fenced by
// the lease. A new leader reads it back: history and budgets survive a
// fail-over; what the old leader saw after its last write, at most
// UsageFlush plus the lease's expiry, is not counted.

// ledger is the leader's copy of the usage ledger.
type ledger struct {
	loaded    bool
	at        time.Time // what is counted runs up to here
	flushedAt time.Time
	tenants   map[string]*tenantLedger
	// used is what each tenant's jobs held after the last commit.
	used map[string]job.Vector
}

type tenantLedger struct {
	decayed admission.Usage
	// days are the GPU-seconds per UTC day, what is not written yet
	// included; pending is the part not written, on day pendingDay.
	days       map[time.Time]float64
	pending    float64
	pendingDay time.Time
	history    bool // the tenant keeps decayed usage: write it
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
	if tl == nil {
		return 0, time.Time{}
	}
	from := b.PeriodStart(now)
	var (
		sec   float64
		first time.Time
	)
	for day, s := range tl.days {
		if day.Before(from) || s <= 0 {
			continue
		}
		sec += s
		if first.IsZero() || day.Before(first) {
			first = day
		}
	}
	return sec / 3600, first
}

// utcDay is the UTC midnight of t.
func utcDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// ledgerLoad reads the ledger when the leader has none (a new leadership):
// decayed usage is decayed over the time nobody counted, as unused.
func (s *Scheduler) ledgerLoad(ctx context.Context, now time.Time) error {
	if s.ledger.loaded {
		return nil
	}
	read, err := s.store.UsageLedgerRead(ctx, "")
	if err != nil {
		return err
	}
	s.ledger = ledger{loaded: true, at: now, flushedAt: now, tenants: map[string]*tenantLedger{}}
	for id, u := range read {
		tl := &tenantLedger{days: u.GPUSeconds}
		for _, r := range job.AllResources {
			tl.decayed[r] = u.Decayed[r.Name()]
		}
		s.ledger.tenants[id] = tl
	}
	return nil
}

// ledgerAdvance counts what the admitted jobs held since the last cycle
// (ledger.used, set by ledgerHold at its commit): GPU-seconds on today's
// row and the decayed usage of the tenants with a history half-life. A
// job that ended meanwhile is counted up to this cycle: at most a Period
// more than it ran.
func (s *Scheduler) ledgerAdvance(settings map[string]tenant.Sharing, now time.Time) {
	elapsed := now.Sub(s.ledger.at)
	if elapsed <= 0 {
		return
	}
	s.ledger.at = now
	day := utcDay(now)
	for id, sh := range settings {
		tl := s.ledger.tenants[id]
		if tl == nil {
			tl = &tenantLedger{days: map[time.Time]float64{}}
			s.ledger.tenants[id] = tl
		}
		used := s.ledger.used[id]
		if gpus := used[job.GPU]; gpus > 0 {
			sec := float64(gpus) * elapsed.Seconds()
			// What is not written yet goes on today's row when it is
			// (a day's change between writes moves seconds by one day).
			tl.pendingDay = day
			tl.pending += sec
			tl.days[day] += sec
		}
		tl.history = sh.UsageHalfLifeSeconds > 0
		if tl.history {
			tl.decayed = admission.DecayUsage(tl.decayed, used, elapsed, sh.UsageHalfLife())
		} else {
			tl.decayed = admission.Usage{}
		}
	}
}

// ledgerHold records what the tenants' jobs hold after a cycle's commit
// (the admitted ones, those it admitted included), for the next
// ledgerAdvance, and reports whether a tenant with a budget or a history
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

// ledgerFlush writes the ledger every UsageFlush (fenced by the lease).
func (s *Scheduler) ledgerFlush(ctx context.Context, lease store.SchedulerLease, now time.Time) error {
	if now.Sub(s.ledger.flushedAt) < s.cfg.UsageFlush {
		return nil
	}
	entries := map[string]store.UsageWrite{}
	for id, tl := range s.ledger.tenants {
		if tl.pending == 0 && !tl.history {
			continue
		}
		w := store.UsageWrite{AddGPUSeconds: tl.pending, Day: tl.pendingDay}
		if tl.history {
			w.Decayed = map[string]float64{}
			for _, r := range job.AllResources {
				w.Decayed[r.Name()] = tl.decayed[r]
			}
		}
		entries[id] = w
	}
	if err := s.store.UsageLedgerWrite(ctx, lease, now, entries); err != nil {
		return err
	}
	for _, tl := range s.ledger.tenants {
		tl.pending = 0
	}
	s.ledger.flushedAt = now
	return nil
}
