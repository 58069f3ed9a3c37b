package admission

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// considerShared is consider for a sharing tenant's job: the quota rule is
// quotaCheck (nominal, borrowing and lending limits, the cohort's pool,
// GPU models), and when the job does not fit, it may reclaim its
// tenant's nominal quota from borrowers, or take borrowed capacity by
// fair share (preemptAcross).
func (c *cycle) considerShared(j *jobState) {
	t := j.t
	type try struct {
		v      variant
		need   acct
		over   []job.Resource
		msg    string
		within bool
	}
	var tries []try
	vs := c.variantsOf(j)
	for _, v := range vs {
		need := c.ownNeed(j)
		if v.model != j.GPUType {
			need = c.needOf(j, v.groups, v.model)
		}
		if over, _ := c.everOver(t, j, need); len(over) == 0 {
			tries = append(tries, try{v: v, need: need})
		}
	}
	if len(tries) == 0 {
		over, msg := c.everOver(t, j, c.needOf(j, vs[0].groups, vs[0].model))
		c.wait(j, job.WaitQuota, "needs more than the tenant may ever use (its nominal quota and what it may borrow): "+msg, over)
		return
	}
	if h := c.hold; h != nil && h.t != t && touches(j.demand, h.short) {
		c.wait(j, job.WaitCapacity, "the resources it needs are held for a job that has waited longer", h.short)
		c.block(j)
		return
	}
	for i := range tries {
		tr := &tries[i]
		tr.over, tr.msg, tr.within = c.quotaCheck(t, j, tr.need)
		if len(tr.over) == 0 && !tr.within && t.sh.co != nil && t.sh.co.reclaiming {
			tr.over = c.aboveNominal(t, tr.need)
			tr.msg = fmt.Sprintf("cohort %s is giving a tenant back its nominal quota this cycle; borrowing waits for the next", t.sh.co.name)
		}
		if co := t.sh.co; len(tr.over) == 0 && !tr.within && co != nil && co.hold != nil && co.hold.t != t && co.holds(tr.need) {
			tr.over = c.aboveNominal(t, tr.need)
			tr.msg = fmt.Sprintf("cohort %s's unused quota is held for a job that has waited longer to borrow", co.name)
		}
		if len(tr.over) > 0 {
			continue
		}
		if cl, ps, ok := c.placeShape(j, tr.v.groups, tr.v.shape); ok {
			j.need = tr.need
			c.admit(j, cl, ps)
			if tr.v.model != "" && j.GPUType == "" {
				if c.out.GPUTypes == nil {
					c.out.GPUTypes = map[Key]string{}
				}
				c.out.GPUTypes[j.Key] = tr.v.model
			}
			return
		}
	}
	k := slices.IndexFunc(tries, func(tr try) bool { return c.everFitsShape(j, tr.v.groups, tr.v.shape) })
	if k < 0 {
		c.wait(j, job.WaitUnschedulable, c.neverMessage(j), nil)
		return
	}
	first := tries[k]
	reason, short, msg := job.WaitQuota, first.over, ""
	if len(first.over) > 0 {
		msg = "waiting for quota: " + first.msg
	} else {
		cl := c.closest(j)
		reason, short = job.WaitCapacity, c.shortOf(j, cl)
		msg = "waiting for capacity: " + c.capacityMessage(j, cl, short)
	}
	if t.Scheduling.Preemption == tenant.PreemptLowerPriority {
		if victims, inFlight := c.preempt(j, first.v.groups, first.v.shape, first.need); len(victims)+len(inFlight) > 0 {
			c.announce(j, reason, victims)
			names := namesOf(append(slices.Clone(inFlight), victims...))
			c.wait(j, reason, fmt.Sprintf("%s; preempting %s, which must stop first", msg, strings.Join(names, ", ")), short)
			j.wait.BlockedBy = names[0]
			c.block(j)
			return
		}
	}
	for _, tr := range tries {
		if !c.everFitsShape(j, tr.v.groups, tr.v.shape) {
			continue
		}
		victims, inFlight := c.preemptAcross(j, reason, tr.v, tr.need, tr.within)
		if n := len(victims) + len(inFlight); n > 0 {
			// Other tenants' job names are not theirs to see.
			c.wait(j, reason, fmt.Sprintf("%s; %d job(s) of other tenants of cohort %s give back what they borrowed, and must stop first", msg, n, t.sh.co.name), short)
			c.block(j)
			return
		}
	}
	if co := t.sh.co; co != nil && co.hold == nil && reason == job.WaitQuota && !first.within && c.aged(j) {
		// Aging: it has waited long enough to borrow; later borrowers
		// of other tenants leave the pool to it.
		if dims := c.poolShort(t, first.need); dims != nil {
			co.hold, co.holdDims = j, dims
		}
	}
	if j.PreemptedByName != "" {
		msg = fmt.Sprintf("preempted by job %q; %s", j.PreemptedByName, msg)
		reason = job.WaitPreempted
	}
	c.wait(j, reason, msg, short)
	c.block(j)
}

// everOver lists the dimensions in which need is more than t may ever use:
// its nominal quota and what it may borrow (none for a non-preemptible
// job).
func (c *cycle) everOver(t *tenantState, j *jobState, need acct) ([]job.Resource, string) {
	st := t.sh
	var over []job.Resource
	var parts []string
	for k := range need {
		if need[k] <= 0 || !st.limited[k] {
			continue
		}
		most := st.nominal[k]
		if st.co != nil && !j.NonPreemptible {
			b := st.co.pool[k]
			if st.borrow[k] != noLimit {
				b = min(b, st.borrow[k])
			}
			most += b
		}
		if need[k] > most {
			if r := dimResource(k); !slices.Contains(over, r) {
				over = append(over, r)
			}
			parts = append(parts, fmt.Sprintf("needs %s %s, at most %s", c.dimFormat(k, need[k]), c.dimName(k), c.dimFormat(k, most)))
		}
	}
	return over, strings.Join(parts, "; ")
}

// aboveNominal lists the dimensions in which need takes t above its
// nominal quota.
func (c *cycle) aboveNominal(t *tenantState, need acct) []job.Resource {
	var over []job.Resource
	for k := range need {
		if need[k] > 0 && t.sh.limited[k] && t.use[k]+need[k] > t.sh.nominal[k] {
			if r := dimResource(k); !slices.Contains(over, r) {
				over = append(over, r)
			}
		}
	}
	return over
}

// borrowingIn reports whether t uses more than its nominal quota in a
// dimension need asks for, and did when the cycle began (what it borrowed
// in this cycle came after every job within its nominal quota): only
// then may another tenant preempt its jobs.
func (c *cycle) borrowingIn(t *tenantState, need acct) bool {
	for k := range need {
		if need[k] > 0 && t.sh.limited[k] && t.use[k] > t.sh.nominal[k] && t.sh.start[k] > t.sh.nominal[k] {
			return true
		}
	}
	return false
}

// preemptAcross finds borrowed jobs of other tenants of j's cohort whose
// stopping lets j (as variant v, counting need) fit:
//
//   - reclaim (j stays within its tenant's nominal quota): any borrowed
//     job, or only those of lower priority (Sharing.Reclaim);
//   - fair share (j borrows, its tenant has FairSharePreemption): only
//     while the victim tenant's weighted share without the victim stays at
//     least the preemptor tenant's share with j (doc.go: no oscillation).
//
// Candidates belong to tenants that use more than their nominal quota in a
// dimension j needs; the tenant furthest over its entitlement (largest
// weighted share) goes first, then its lowest priority, then its most
// recently started job; as few as will do. Non-preemptible jobs never go.
func (c *cycle) preemptAcross(j *jobState, reason job.WaitReason, v variant, need acct, within bool) (victims, inFlight []*jobState) {
	t := j.t
	st := t.sh
	pol := cmp.Or(t.Sharing.Reclaim, ReclaimAny)
	if st.co == nil || pol == ReclaimNever || (!within && !t.Sharing.FairSharePreemption) {
		return nil, nil
	}
	kind := PreemptReclaim
	if !within {
		kind = PreemptFairShare
	}
	var lines []*line
	for _, m := range st.co.members {
		if m == t {
			continue
		}
		l := &line{t: m}
		for _, a := range m.admitted {
			switch {
			case a.preempting == j:
				inFlight = append(inFlight, a)
			case a.PreemptingFor != (Key{}) || a.NonPreemptible:
			case pol == ReclaimLowerPriority && a.Priority >= j.Priority:
			default:
				l.jobs = append(l.jobs, a)
			}
		}
		if len(l.jobs) > 0 {
			slices.SortFunc(l.jobs, func(a, b *jobState) int {
				return cmp.Or(cmp.Compare(a.Priority, b.Priority), b.StartTime.Compare(a.StartTime), cmp.Compare(b.Seq, a.Seq))
			})
			if len(l.jobs) > maxCandidates {
				l.jobs = l.jobs[:maxCandidates]
			}
			lines = append(lines, l)
		}
	}
	rk := tenantShape{t: t, shape: j.at.of(v.shape)}
	if p, ok := c.noReclaim[rk]; ok && p >= j.Priority && len(inFlight) == 0 {
		return nil, nil
	}
	before := map[*tenantState]float64{}
	for _, m := range st.co.members {
		before[m] = c.share(m, nil, 0)
	}
	byShare := c.share(t, need, 1)

	found := false
	for _, cl := range c.preemptOrder(j, inFlight) {
		for _, l := range lines {
			l.next = 0
		}
		vs, ok := c.reclaimIn(cl, j, v, need, kind, byShare, inFlight, lines)
		if ok && (!found || len(vs) < len(victims)) {
			victims, found = vs, true
			if len(vs) == 0 {
				break
			}
		}
	}
	if !found {
		c.noReclaim[rk] = max(c.noReclaim[rk], j.Priority)
	}
	if len(victims) == 0 {
		st.co.reclaiming = st.co.reclaiming || len(inFlight) > 0
		return nil, inFlight
	}
	st.co.reclaiming = true
	for _, a := range victims {
		a.PreemptingFor, a.preempting = j.Key, j
		k := kind
		if a.t.sh.overBudget {
			k = PreemptBudget
		}
		c.out.Preempt = append(c.out.Preempt, Preemption{
			Victim: a.Key, VictimName: a.Name, By: j.Key, ByName: j.Name, ByPriority: j.Priority, Reason: reason,
			Kind: k, ByShare: byShare, VictimShare: before[a.t],
			Message: c.explain(k, j, a, need, byShare, before[a.t]),
		})
	}
	return victims, inFlight
}

// line is a cohort member's preemptible jobs, in the order reclaim takes
// them.
type line struct {
	t    *tenantState
	jobs []*jobState
	next int
}

// reclaimIn is preemptAcross's trial with j placed in cluster cl (as
// variant v): lines' jobs are taken from the tenant furthest over its
// entitlement first, as few as will do. Victims of other clusters free
// the cohort's pool, never room on cl's nodes, so once the quota has room
// they are passed over.
func (c *cycle) reclaimIn(cl *cluster, j *jobState, v variant, need acct, kind PreemptionKind, byShare float64, inFlight []*jobState, lines []*line) ([]*jobState, bool) {
	tr := &trial{c: c, cl: cl, j: j, groups: v.groups, need: need}
	defer tr.undoAll()
	for _, a := range inFlight {
		tr.release(a)
	}
	if tr.fits() {
		return nil, true
	}
	quotaOK := tr.quotaFits()
	n := len(tr.released)
	for range maxCandidates {
		var best *line
		bestShare := -1.0
		for _, l := range lines {
			for quotaOK && l.next < len(l.jobs) && l.jobs[l.next].cl != cl {
				l.next++
			}
			if l.next >= len(l.jobs) || !c.borrowingIn(l.t, need) {
				continue
			}
			if kind == PreemptFairShare && byShare > c.share(l.t, l.jobs[l.next].need, -1) {
				continue // the rule: its share without the job stays at least ours
			}
			if s := c.share(l.t, nil, 0); s > bestShare {
				best, bestShare = l, s
			}
		}
		if best == nil {
			break
		}
		tr.release(best.jobs[best.next])
		best.next++
		if tr.fits() {
			return tr.minimal(n), true
		}
	}
	return nil, false
}

// explain says why a was preempted for j, with the figures that decided it.
func (c *cycle) explain(k PreemptionKind, j, a *jobState, need acct, byShare, victimShare float64) string {
	t, m := j.t, a.t
	switch k {
	case PreemptFairShare:
		return fmt.Sprintf("fair share in cohort %s: job %q of tenant %s brings its weighted share to %.3f, no more than tenant %s's %.3f without this job (%.3f with it); %s",
			t.sh.co.name, j.Name, t.ID, byShare, m.ID, c.share(m, a.need, -1), victimShare, c.figures(m, need))
	case PreemptBudget:
		return fmt.Sprintf("reclaim in cohort %s: tenant %s is over its GPU-hour budget (%.1f of %.1f GPU-hours) and ran on borrowed capacity; job %q of tenant %s takes back its nominal quota (%s)",
			t.sh.co.name, m.ID, m.Sharing.Budget.UsedGPUHours, m.Sharing.Budget.GPUHours, j.Name, t.ID, c.figuresWith(t, need))
	default:
		return fmt.Sprintf("reclaim in cohort %s: job %q of tenant %s needs quota within its nominal share (%s), lent to tenant %s, which borrows (%s; weighted share %.3f)",
			t.sh.co.name, j.Name, t.ID, c.figuresWith(t, need), m.ID, c.figures(m, need), victimShare)
	}
}

// figures is what m uses of its nominal quota in the dimensions need asks
// for: "16 GPUs in use, 8 nominal".
func (c *cycle) figures(m *tenantState, need acct) string {
	var parts []string
	for k := range need {
		if need[k] > 0 && m.sh.limited[k] && (k >= int(job.NumResources) || job.Resource(k) == job.GPU || m.use[k] > m.sh.nominal[k]) {
			parts = append(parts, fmt.Sprintf("%s %s in use, %s nominal", c.dimFormat(k, m.use[k]), c.dimName(k), c.dimFormat(k, m.sh.nominal[k])))
		}
	}
	return strings.Join(parts, ", ")
}

// figuresWith is figures for t once need is added.
func (c *cycle) figuresWith(t *tenantState, need acct) string {
	var parts []string
	for k := range need {
		if need[k] > 0 && t.sh.limited[k] && (k >= int(job.NumResources) || job.Resource(k) == job.GPU) {
			parts = append(parts, fmt.Sprintf("%s of %s %s nominal with the job", c.dimFormat(k, t.use[k]+need[k]), c.dimFormat(k, t.sh.nominal[k]), c.dimName(k)))
		}
	}
	return strings.Join(parts, ", ")
}
