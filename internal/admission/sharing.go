package admission

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/trainyard/trainyard/internal/job"
)

// Sharing is how a tenant shares quota with the other tenants of its
// cohort, and what limits it beyond its quota. Its zero value is today's
// behaviour: Tenant.Quota is a wall, nobody borrows from the tenant and
// nobody else preempts it.
type Sharing struct {
	// Cohort names the tenant's cohort ("": none). Tenant.Quota is then
	// the tenant's nominal (guaranteed) quota.
	Cohort string
	// BorrowingLimit caps what the tenant may use above its nominal quota,
	// per dimension (nil: the cohort's whole unused pool; a zero amount
	// in a non-nil vector: it borrows none of that dimension).
	BorrowingLimit *job.Vector
	// LendingLimit caps what others may borrow of its unused nominal
	// quota, per dimension (nil: all of it). Nominal minus LendingLimit
	// stays protected for the tenant alone.
	LendingLimit *job.Vector
	// GPUTypes is the nominal quota of GPUs per GPU model (the value of
	// the node label Config.GPUTypeLabel). When set, the tenant's GPU
	// jobs run only on models it has quota of or can borrow in its
	// cohort, and count against that model.
	GPUTypes map[string]int64
	// Weight divides the tenant's share in fair sharing (0: 1). A tenant
	// of weight 2 may borrow twice as much before it yields.
	Weight float64
	// Reclaim says which borrowed jobs of other tenants the tenant may
	// preempt to get its nominal quota back ("": ReclaimAny).
	Reclaim ReclaimPolicy
	// FairSharePreemption lets the tenant, while it borrows, preempt
	// borrowed jobs of tenants whose weighted share stays at least its
	// own (the no-oscillation rule in doc.go).
	FairSharePreemption bool
	// Usage is the tenant's decayed past usage (DecayUsage): when not
	// zero, fair sharing counts the tenant's usage as the mean of what it
	// uses now and this, so that a tenant that used much lately yields.
	Usage Usage
	// Budget limits the tenant's GPU-hours per period.
	Budget Budget
}

// ReclaimPolicy says which borrowers a tenant below its nominal quota may
// preempt in its cohort (Kueue's reclaimWithinCohort).
type ReclaimPolicy string

const (
	// ReclaimAny: any preemptible job of a tenant above its nominal quota.
	ReclaimAny ReclaimPolicy = "ANY"
	// ReclaimLowerPriority: only those of lower priority than the job
	// that reclaims.
	ReclaimLowerPriority ReclaimPolicy = "LOWER_PRIORITY"
	// ReclaimNever: the tenant waits until borrowers end.
	ReclaimNever ReclaimPolicy = "NEVER"
)

// Budget is a tenant's GPU-hour budget for the current period.
type Budget struct {
	// GPUHours is the budget (0: none).
	GPUHours float64
	// UsedGPUHours is what the tenant's jobs used in the period so far,
	// running jobs up to Snapshot.Now included (GPUs × time, from
	// admission to end: the usage ledger).
	UsedGPUHours float64
	// ResetAt is when the period ends (the next month, or when the
	// rolling window frees enough): the estimated start of jobs held by
	// the budget.
	ResetAt time.Time
	// OverBudget says what happens to GPU jobs once it is used up.
	OverBudget OverBudgetPolicy
}

// OverBudgetPolicy says what a tenant's GPU jobs do once its budget is
// used up.
type OverBudgetPolicy string

const (
	// OverBudgetWait (the default): they wait with reason BUDGET.
	OverBudgetWait OverBudgetPolicy = "WAIT"
	// OverBudgetBorrowOnly: they run only on capacity borrowed in the
	// cohort: the tenant's nominal quota is lent out entirely and
	// guarantees it nothing, so its jobs are first in line for reclaim.
	OverBudgetBorrowOnly OverBudgetPolicy = "BORROW_ONLY"
)

// Exhausted reports whether the budget is set and used up.
func (b Budget) Exhausted() bool { return b.GPUHours > 0 && b.UsedGPUHours >= b.GPUHours }

// Usage is a decayed average of a tenant's usage per dimension, in the
// dimension's units (GPUs, millicores, bytes, pods).
type Usage [job.NumResources]float64

// DecayUsage advances a tenant's decayed usage by elapsed, during which
// it used used: an exponentially weighted average with the given half
// life. A tenant that used 8 GPUs all along has 8; one that stopped a
// half life ago has 4. The loop keeps the result in its usage ledger.
func DecayUsage(prev Usage, used job.Vector, elapsed, halfLife time.Duration) Usage {
	if halfLife <= 0 {
		return Usage{}
	}
	if elapsed <= 0 {
		return prev
	}
	k := math.Exp2(-elapsed.Seconds() / halfLife.Seconds())
	for r := range prev {
		prev[r] = prev[r]*k + float64(used[r])*(1-k)
	}
	return prev
}

// acct is an amount in the dimensions quotas account: job.Vector's, then
// one per GPU model named by any quota.
type acct []int64

const noLimit = -1

// shareState is a sharing tenant's quota as this cycle sees it.
type shareState struct {
	co *cohortState
	// nominal is what the tenant is guaranteed now (zero when it is over
	// its budget and may only borrow); lend is how much of its nominal
	// quota others may borrow; guaranteed = nominal - lend is protected.
	nominal, guaranteed, borrow acct
	limited                     []bool
	weight                      float64
	overBudget                  bool
	models                      []string // models it has nominal quota of, sorted
	// start is what it used when the cycle began.
	start acct
}

type cohortState struct {
	name    string
	members []*tenantState
	pool    acct // what members may borrow in all: the cohort's own and what members lend
	// reclaiming: this cycle preempts borrowed jobs of the cohort; no job
	// may borrow in it until the next (it would take the room being made).
	reclaiming bool
	// hold is a borrower that has waited Config.BorrowAging for the
	// pool: no later job of another tenant borrows in the dimensions
	// holdDims (those of which the pool lacks what it needs).
	hold     *jobState
	holdDims []bool
}

// holds reports whether the cohort's pool is held in a dimension need
// asks for.
func (co *cohortState) holds(need acct) bool {
	for k, h := range co.holdDims {
		if h && need[k] > 0 {
			return true
		}
	}
	return false
}

// poolShort lists, per dimension, whether the cohort's pool lacks what
// need would borrow on top of what t uses (nil when it lacks nothing).
func (c *cycle) poolShort(t *tenantState, need acct) []bool {
	st := t.sh
	var short []bool
	for k := range need {
		if need[k] <= 0 || !st.limited[k] {
			continue
		}
		g := st.guaranteed[k]
		more := max(0, t.use[k]+need[k]-g) - max(0, t.use[k]-g)
		if more > 0 && c.poolUsed(st.co, k)+more > st.co.pool[k] {
			if short == nil {
				short = make([]bool, len(need))
			}
			short[k] = true
		}
	}
	return short
}

// setupSharing builds the accounting of sharing tenants: dimensions,
// cohorts and pools. Tenants whose Sharing is zero stay plain: today's
// code paths, unchanged.
func (c *cycle) setupSharing(s *Snapshot) {
	c.gpuLabel = cmp.Or(s.Config.GPUTypeLabel, DefaultGPUTypeLabel)
	models := map[string]bool{}
	for _, t := range c.order {
		for m := range t.Sharing.GPUTypes {
			models[m] = true
		}
	}
	for _, co := range s.Cohorts {
		for m := range co.GPUTypes {
			models[m] = true
		}
	}
	for _, j := range c.jobs {
		if j.GPUType != "" {
			models[j.GPUType] = true
		}
	}
	for m := range models {
		c.models = append(c.models, m)
	}
	slices.Sort(c.models)
	c.modelIdx = map[string]int{}
	for i, m := range c.models {
		c.modelIdx[m] = int(job.NumResources) + i
	}
	c.nodeModel = map[nodeRef]string{}
	if len(c.models) > 0 {
		for _, n := range s.Nodes {
			if m := n.Labels[c.gpuLabel]; m != "" {
				c.nodeModel[nodeRef{n.Cluster, n.Name}] = m
			}
		}
	}
	own := map[string]Cohort{}
	for _, co := range s.Cohorts {
		own[co.Name] = co
	}
	cohorts := map[string]*cohortState{}
	d := c.dims()
	for _, t := range c.order {
		sh := t.Sharing
		if t.gone || (sh.Cohort == "" && len(sh.GPUTypes) == 0) {
			continue
		}
		st := &shareState{
			nominal: make(acct, d), guaranteed: make(acct, d), borrow: make(acct, d), limited: make([]bool, d),
			weight: sh.Weight,
		}
		if st.weight <= 0 {
			st.weight = 1
		}
		st.overBudget = sh.Cohort != "" && sh.Budget.Exhausted() && sh.Budget.OverBudget == OverBudgetBorrowOnly
		for k := range d {
			st.borrow[k] = noLimit
		}
		for r := range job.NumResources {
			st.limited[r] = t.Quota[r] > 0
			st.nominal[r] = t.Quota[r]
			if sh.BorrowingLimit != nil {
				st.borrow[r] = sh.BorrowingLimit[r]
			}
			if sh.LendingLimit != nil {
				st.guaranteed[r] = max(0, t.Quota[r]-sh.LendingLimit[r])
			}
		}
		for m, n := range sh.GPUTypes {
			st.models = append(st.models, m)
			st.nominal[c.modelIdx[m]] = n
		}
		slices.Sort(st.models)
		if len(sh.GPUTypes) > 0 {
			for _, m := range c.models {
				st.limited[c.modelIdx[m]] = true
			}
		}
		if sh.Cohort == "" {
			// Per-model quotas only: the nominal quota is a wall.
			for k := range d {
				st.borrow[k] = 0
			}
		} else {
			co := cohorts[sh.Cohort]
			if co == nil {
				co = &cohortState{name: sh.Cohort, pool: make(acct, d)}
				for r := range job.NumResources {
					co.pool[r] = own[sh.Cohort].Nominal[r]
				}
				for m, n := range own[sh.Cohort].GPUTypes {
					co.pool[c.modelIdx[m]] = n
				}
				cohorts[sh.Cohort] = co
			}
			co.members = append(co.members, t)
			st.co = co
			if st.overBudget {
				// Its guarantee is suspended: all of its nominal is lent.
				clear(st.guaranteed)
			}
			for k := range d {
				if st.limited[k] {
					co.pool[k] += st.nominal[k] - st.guaranteed[k]
				}
			}
			if st.overBudget {
				clear(st.nominal)
			}
		}
		t.sh = st
		t.use = make(acct, d)
		for _, j := range t.admitted {
			j.need = c.needOf(j, j.Groups, j.GPUType)
			t.use.add(j.need)
		}
		st.start = slices.Clone(t.use)
	}
}

func (c *cycle) dims() int { return int(job.NumResources) + len(c.models) }

func (a acct) add(b acct) {
	for k := range b {
		a[k] += b[k]
	}
}

func (a acct) sub(b acct) {
	for k := range b {
		a[k] -= b[k]
	}
}

// needOf is what a job counts against quotas: its demand, and its GPUs
// under its model: the one it asks for, else (admitted) the models of the
// nodes its pods are on.
func (c *cycle) needOf(j *jobState, groups []Group, model string) acct {
	n := make(acct, c.dims())
	copy(n, j.demand[:])
	if len(c.models) == 0 || j.demand[job.GPU] == 0 {
		return n
	}
	if model != "" {
		n[c.modelIdx[model]] = j.demand[job.GPU]
		return n
	}
	for node, v := range j.OnNodes {
		if m := c.nodeModel[nodeRef{j.Cluster, node}]; m != "" {
			if k, ok := c.modelIdx[m]; ok {
				n[k] += v[job.GPU]
			}
		}
	}
	return n
}

// ownNeed is needOf for the job as it asks (its own groups and model),
// computed once.
func (c *cycle) ownNeed(j *jobState) acct {
	if j.own == nil {
		j.own = c.needOf(j, j.Groups, j.GPUType)
	}
	return j.own
}

// dimName names a dimension in messages.
func (c *cycle) dimName(k int) string {
	if k < int(job.NumResources) {
		return job.Resource(k).Human()
	}
	return c.models[k-int(job.NumResources)] + " GPUs"
}

func (c *cycle) dimFormat(k int, v int64) string {
	if k < int(job.NumResources) {
		return job.Resource(k).Format(v)
	}
	return fmt.Sprint(v)
}

func dimResource(k int) job.Resource {
	if k < int(job.NumResources) {
		return job.Resource(k)
	}
	return job.GPU
}

// quotaCheck is the quota rule for a sharing tenant: whether need fits on
// top of what t uses. Per dimension the tenant limits: within its nominal
// quota plus its borrowing limit; and what all members use beyond their
// protected part within the cohort's pool. It also says whether t would
// stay within its nominal quota, and (msg) why need does not fit.
func (c *cycle) quotaCheck(t *tenantState, j *jobState, need acct) (over []job.Resource, msg string, within bool) {
	return c.quotaRule(t, j, need, true)
}

// quotaFits is quotaCheck without the explanation, for trials.
func (c *cycle) quotaFits(t *tenantState, j *jobState, need acct) (fits, within bool) {
	over, _, within := c.quotaRule(t, j, need, false)
	return len(over) == 0, within
}

func (c *cycle) quotaRule(t *tenantState, j *jobState, need acct, explain bool) (over []job.Resource, msg string, within bool) {
	st := t.sh
	within = true
	var parts []string
	for k := range need {
		if need[k] <= 0 || !st.limited[k] {
			continue
		}
		u := t.use[k] + need[k]
		if u > st.nominal[k] {
			within = false
		}
		fail := false
		var why func() string
		switch {
		case st.co == nil || (j.NonPreemptible && u > st.nominal[k]):
			fail = u > st.nominal[k]
			why = func() string {
				s := fmt.Sprintf("needs %s %s, %s of %s in use", c.dimFormat(k, need[k]), c.dimName(k), c.dimFormat(k, t.use[k]), c.dimFormat(k, st.nominal[k]))
				if j.NonPreemptible && st.co != nil {
					s += " (a non-preemptible job runs only within the nominal quota)"
				}
				return s
			}
		case st.borrow[k] != noLimit && u > st.nominal[k]+st.borrow[k]:
			fail = true
			why = func() string {
				return fmt.Sprintf("needs %s %s, %s in use of %s nominal + %s borrowing limit", c.dimFormat(k, need[k]), c.dimName(k), c.dimFormat(k, t.use[k]), c.dimFormat(k, st.nominal[k]), c.dimFormat(k, st.borrow[k]))
			}
		default:
			g := st.guaranteed[k]
			inPool := c.poolUsed(st.co, k)
			more := max(0, u-g) - max(0, t.use[k]-g)
			fail = inPool+more > st.co.pool[k]
			why = func() string {
				return fmt.Sprintf("needs %s %s; cohort %s lends %s in all, %s of it in use", c.dimFormat(k, need[k]), c.dimName(k), st.co.name, c.dimFormat(k, st.co.pool[k]), c.dimFormat(k, inPool))
			}
		}
		if fail {
			if r := dimResource(k); !slices.Contains(over, r) {
				over = append(over, r)
			}
			if explain {
				parts = append(parts, why())
			}
		}
	}
	if !explain {
		return over, "", within
	}
	if st.overBudget && len(over) > 0 {
		parts = append(parts, "over its GPU-hour budget, the tenant runs only on borrowed capacity")
	}
	return over, strings.Join(parts, "; "), within
}

// poolUsed is what a cohort's members use of its pool in dimension k.
func (c *cycle) poolUsed(co *cohortState, k int) int64 {
	var s int64
	for _, m := range co.members {
		if m.sh.limited[k] {
			s += max(0, m.use[k]-m.sh.guaranteed[k])
		}
	}
	return s
}

// share is a sharing tenant's weighted share: at its largest dimension,
// what it uses above its nominal quota over what its cohort lends,
// divided by its weight; 0 while within its nominal quota. With history
// (Sharing.Usage), its usage in job.Vector's dimensions is the mean of
// what it uses and its decayed past usage. extra is added to its usage.
func (c *cycle) share(t *tenantState, extra acct, sign int64) float64 {
	st := t.sh
	if st == nil || st.co == nil {
		return 0
	}
	hist := t.Sharing.Usage != (Usage{})
	s := 0.0
	for k := range st.nominal {
		pool := st.co.pool[k]
		if !st.limited[k] || pool <= 0 {
			continue
		}
		u := float64(t.use[k])
		if extra != nil {
			u += float64(sign * extra[k])
		}
		if hist && k < int(job.NumResources) {
			u = (u + t.Sharing.Usage[k]) / 2
		}
		s = max(s, (u-float64(st.nominal[k]))/float64(pool))
	}
	return max(s, 0) / st.weight
}

// orderShare is share for the cluster order: t's admitted demand plus
// its jobs ordered so far, in job.Vector's dimensions.
func (c *cycle) orderShare(t *tenantState) (borrowing bool, share float64) {
	st := t.sh
	if st == nil || st.co == nil {
		return false, 0
	}
	next := t.orderUsed
	if t.next < len(t.queue) {
		next = next.Add(t.queue[t.next].demand)
	}
	hist := t.Sharing.Usage != (Usage{})
	for r := range job.NumResources {
		if !st.limited[r] {
			continue
		}
		if next[r] > st.nominal[r] {
			borrowing = true
		}
		if pool := st.co.pool[r]; pool > 0 {
			u := float64(t.orderUsed[r])
			if hist {
				u = (u + t.Sharing.Usage[r]) / 2
			}
			share = max(share, (u-float64(st.nominal[r]))/float64(pool))
		}
	}
	return borrowing, max(share, 0) / st.weight
}

// agedSince is when t's next job in the cluster order was queued, if it
// has waited at least Config.BorrowAging (zero otherwise).
func (c *cycle) agedSince(t *tenantState) time.Time {
	if t.next >= len(t.queue) || !c.aged(t.queue[t.next]) {
		return time.Time{}
	}
	return t.queue[t.next].QueuedAt
}

// aged reports whether j has waited at least Config.BorrowAging.
func (c *cycle) aged(j *jobState) bool {
	return c.cfg.BorrowAging > 0 && c.now.Sub(j.QueuedAt) >= c.cfg.BorrowAging
}

// variants are the ways j may run: its groups as given, with its GPU
// model's node selector when it asks for one; for a job of any model of
// a tenant with quotas per model, once per model the tenant has quota of
// or may borrow, each restricted to that model's nodes.
type variant struct {
	model  string
	groups []Group
	shape  uint64
}

func (c *cycle) variantsOf(j *jobState) []variant {
	if j.variants != nil {
		return j.variants
	}
	if j.GPUType != "" || j.demand[job.GPU] == 0 || j.t.sh == nil || len(j.t.Sharing.GPUTypes) == 0 {
		j.one[0] = variant{model: j.GPUType, groups: j.Groups, shape: j.shape}
		j.variants = j.one[:]
		return j.variants
	}
	models := slices.Clone(j.t.sh.models)
	if co := j.t.sh.co; co != nil {
		for _, m := range c.models {
			if co.pool[c.modelIdx[m]] > 0 && !slices.Contains(models, m) {
				models = append(models, m)
			}
		}
	}
	for _, m := range models {
		gs := withModel(j.Groups, c.gpuLabel, m)
		j.variants = append(j.variants, variant{model: m, groups: gs, shape: shapeOf(gs)})
	}
	return j.variants
}

// withModel restricts the GPU pods of groups to nodes of a GPU model.
func withModel(groups []Group, label, model string) []Group {
	out := slices.Clone(groups)
	for i := range out {
		g := &out[i]
		if g.Request[job.GPU] == 0 || g.Placement.NodeSelector[label] != "" {
			continue
		}
		sel := make(map[string]string, len(g.Placement.NodeSelector)+1)
		for k, v := range g.Placement.NodeSelector {
			sel[k] = v
		}
		sel[label] = model
		g.Placement.NodeSelector = sel
		g.PlacementKey = g.Placement.Key()
	}
	return out
}
