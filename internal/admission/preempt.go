package admission

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/trainyard/trainyard/internal/job"
)

// maxCandidates bounds how many running jobs one preemption trial looks
// at: the lowest priority, most recently started first.
const maxCandidates = 256

// preempt finds running jobs of j's tenant whose stopping would let j fit
// (its quota and the nodes of one cluster): only jobs of lower priority,
// the lowest priority first and, among equals, the most recently started
// first (they lose the least work), as few as will do. inFlight are the
// jobs already stopping for j; when they are enough, no new victim is
// chosen. Each cluster j may run in is tried (preemptOrder); the one
// that needs the fewest new victims wins. Nothing is changed: victims
// hold their resources until their pods are gone.
func (c *cycle) preempt(j *jobState, groups []Group, shape uint64, need acct) (victims, inFlight []*jobState) {
	t := j.t
	var cands []*jobState
	for _, v := range t.admitted {
		switch {
		case v.preempting == j:
			inFlight = append(inFlight, v)
		case v.PreemptingFor != (Key{}) || v.NonPreemptible:
			// Stopping for another job already, or never preempted.
		case v.Priority < j.Priority:
			cands = append(cands, v)
		}
	}
	key := tenantShape{t: t, shape: j.at.of(shape)}
	if p, ok := c.noPreempt[key]; ok && p >= j.Priority && len(inFlight) == 0 {
		return nil, nil // a job of its tenant, this shape and no lower priority found nothing
	}
	slices.SortFunc(cands, func(a, b *jobState) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), b.StartTime.Compare(a.StartTime), cmp.Compare(b.Seq, a.Seq))
	})
	if len(cands) > maxCandidates {
		cands = cands[:maxCandidates]
	}
	found := false
	for _, cl := range c.preemptOrder(j, inFlight) {
		vs, ok := c.preemptIn(cl, j, groups, need, inFlight, cands)
		if ok && (!found || len(vs) < len(victims)) {
			victims, found = vs, true
			if len(vs) == 0 {
				break
			}
		}
	}
	if !found {
		c.noPreempt[key] = max(c.noPreempt[key], j.Priority)
		return nil, inFlight
	}
	return victims, inFlight
}

// preemptIn is preempt's trial with j placed in cluster cl: victims of
// other clusters free quota, never room on cl's nodes, so once the quota
// has room they are passed over.
func (c *cycle) preemptIn(cl *cluster, j *jobState, groups []Group, need acct, inFlight, cands []*jobState) ([]*jobState, bool) {
	tr := &trial{c: c, cl: cl, j: j, groups: groups, need: need}
	defer tr.undoAll()
	for _, v := range inFlight {
		tr.release(v)
	}
	if tr.fits() {
		return nil, true
	}
	quotaOK := tr.quotaFits()
	n := len(tr.released)
	for _, v := range cands {
		if quotaOK && v.cl != cl {
			continue
		}
		tr.release(v)
		if tr.fits() {
			return tr.minimal(n), true
		}
	}
	return nil, false
}

// preemptOrder is the order in which preemption tries the clusters j may
// run in: those where jobs already stop for it first, then by fit.
func (c *cycle) preemptOrder(j *jobState, inFlight []*jobState) []*cluster {
	if len(j.at.clusters) < 2 {
		return j.at.clusters
	}
	cls := slices.Clone(c.byFit(j.at.clusters, j.demand))
	if len(inFlight) > 0 {
		holds := func(cl *cluster) int {
			if slices.ContainsFunc(inFlight, func(v *jobState) bool { return v.cl == cl }) {
				return 0
			}
			return 1
		}
		slices.SortStableFunc(cls, func(a, b *cluster) int { return cmp.Compare(holds(a), holds(b)) })
	}
	return cls
}

// minimal drops, from the victims released after the first n (the last
// one was needed), every earlier one the job fits without, and returns
// those left.
func (tr *trial) minimal(n int) (victims []*jobState) {
	// The last victim was needed; drop any earlier one that was not.
	keep := make([]bool, len(tr.released))
	for k := range keep {
		keep[k] = true
	}
	for k := len(tr.released) - 2; k >= n; k-- {
		tr.unrelease(k)
		if tr.fits() {
			keep[k] = false
		} else {
			tr.rerelease(k)
		}
	}
	for k := n; k < len(tr.released); k++ {
		if keep[k] {
			victims = append(victims, tr.released[k].v)
		}
	}
	return victims
}

// announce records the preemptions and marks the victims as stopping for
// j, so that no other job of this cycle counts on them.
func (c *cycle) announce(j *jobState, reason job.WaitReason, victims []*jobState) {
	for _, v := range victims {
		v.PreemptingFor, v.preempting = j.Key, j
		c.out.Preempt = append(c.out.Preempt, Preemption{
			Victim: v.Key, VictimName: v.Name, By: j.Key, ByName: j.Name, ByPriority: j.Priority, Reason: reason,
			Kind: PreemptPriority,
			Message: fmt.Sprintf("preempted by job %q of the same tenant, of priority %d above its %d, which needs its %s",
				j.Name, j.Priority, v.Priority, reasonWord(reason)),
		})
	}
}

func reasonWord(r job.WaitReason) string {
	if r == job.WaitQuota {
		return "quota"
	}
	return "capacity"
}

// trial releases running jobs' resources for a what-if and puts them back:
// whether j, run as groups (need its quota need, for a sharing tenant),
// would fit.
type trial struct {
	c        *cycle
	cl       *cluster // where j would be placed
	j        *jobState
	groups   []Group
	need     acct
	released []released
}

type released struct {
	v      *jobState
	cl     *cluster // v's
	undo   []placed // adding these back takes the resources again
	active bool
}

func (tr *trial) release(v *jobState) {
	undo := v.cl.release(v.OnNodes)
	v.cl.give(v.reserved)
	for _, p := range v.reserved {
		undo = append(undo, placed{node: p.node, req: p.req.Times(-1)})
	}
	v.t.used = v.t.used.Sub(v.demand)
	if v.t.sh != nil {
		v.t.use.sub(v.need)
	}
	tr.released = append(tr.released, released{v: v, cl: v.cl, undo: undo, active: true})
}

func (tr *trial) unrelease(k int) {
	r := &tr.released[k]
	r.cl.give(r.undo)
	r.v.t.used = r.v.t.used.Add(r.v.demand)
	if r.v.t.sh != nil {
		r.v.t.use.add(r.v.need)
	}
	r.active = false
}

func (tr *trial) rerelease(k int) {
	r := &tr.released[k]
	for _, p := range r.undo {
		r.cl.give([]placed{{node: p.node, req: p.req.Times(-1)}})
	}
	r.v.t.used = r.v.t.used.Sub(r.v.demand)
	if r.v.t.sh != nil {
		r.v.t.use.sub(r.v.need)
	}
	r.active = true
}

func (tr *trial) undoAll() {
	for k := range tr.released {
		if tr.released[k].active {
			tr.unrelease(k)
		}
	}
}

// fits reports whether j would fit its quota and the nodes of tr.cl now.
func (tr *trial) fits() bool {
	if !tr.quotaFits() {
		return false
	}
	ps, ok := tr.cl.gang(tr.groups, true)
	tr.cl.give(ps)
	return ok
}

// quotaFits reports whether j would fit its tenant's quota now.
func (tr *trial) quotaFits() bool {
	j := tr.j
	if j.t.sh != nil {
		fits, _ := tr.c.quotaFits(j.t, j, tr.need)
		return fits
	}
	return j.t.used.Add(j.demand).Within(j.t.Quota)
}
