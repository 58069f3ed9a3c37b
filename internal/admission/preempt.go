package admission

import (
	"cmp"
	"slices"

	"github.com/trainyard/trainyard/internal/job"
)

// maxCandidates bounds how many running jobs one preemption trial looks
// at: the lowest priority, most recently started first.
const maxCandidates = 256

// preempt finds running jobs of j's tenant whose stopping would let j fit
// (its quota and the nodes): only jobs of lower priority, the lowest
// priority first and, among equals, the most recently started first (they
// lose the least work), as few as will do. inFlight are the jobs already
// stopping for j; when they are enough, no new victim is chosen. Nothing
// is changed: victims hold their resources until their pods are gone.
func (c *cycle) preempt(j *jobState) (victims, inFlight []*jobState) {
	t := j.t
	var cands []*jobState
	for _, v := range t.admitted {
		switch {
		case v.preempting == j:
			inFlight = append(inFlight, v)
		case v.PreemptingFor != (Key{}):
			// Stopping for another job already.
		case v.Priority < j.Priority:
			cands = append(cands, v)
		}
	}
	if p, ok := c.noPreempt[j.shape]; ok && p >= j.Priority && len(inFlight) == 0 {
		return nil, nil // a job of this shape and no lower priority found nothing
	}
	slices.SortFunc(cands, func(a, b *jobState) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), b.StartTime.Compare(a.StartTime), cmp.Compare(b.Seq, a.Seq))
	})
	if len(cands) > maxCandidates {
		cands = cands[:maxCandidates]
	}

	tr := &trial{c: c, t: t}
	defer tr.undoAll()
	for _, v := range inFlight {
		tr.release(v)
	}
	if tr.fits(j) {
		return nil, inFlight
	}
	n := len(tr.released)
	fit := false
	for _, v := range cands {
		tr.release(v)
		if tr.fits(j) {
			fit = true
			break
		}
	}
	if !fit {
		c.noPreempt[j.shape] = max(c.noPreempt[j.shape], j.Priority)
		return nil, inFlight
	}
	// The last victim was needed; drop any earlier one that was not.
	keep := make([]bool, len(tr.released))
	for k := range keep {
		keep[k] = true
	}
	for k := len(tr.released) - 2; k >= n; k-- {
		tr.unrelease(k)
		if tr.fits(j) {
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
	return victims, inFlight
}

// announce records the preemptions and marks the victims as stopping for
// j, so that no other job of this cycle counts on them.
func (c *cycle) announce(j *jobState, reason job.WaitReason, victims []*jobState) {
	for _, v := range victims {
		v.PreemptingFor, v.preempting = j.Key, j
		c.out.Preempt = append(c.out.Preempt, Preemption{
			Victim: v.Key, VictimName: v.Name, By: j.Key, ByName: j.Name, ByPriority: j.Priority, Reason: reason,
		})
	}
}

// trial releases running jobs' resources for a what-if and puts them back.
type trial struct {
	c        *cycle
	t        *tenantState
	released []released
}

type released struct {
	v      *jobState
	undo   []placed // adding these back takes the resources again
	active bool
}

func (tr *trial) release(v *jobState) {
	undo := tr.c.cl.release(v.OnNodes)
	tr.c.cl.give(v.reserved)
	for _, p := range v.reserved {
		undo = append(undo, placed{node: p.node, req: p.req.Times(-1)})
	}
	tr.t.used = tr.t.used.Sub(v.demand)
	tr.released = append(tr.released, released{v: v, undo: undo, active: true})
}

func (tr *trial) unrelease(k int) {
	r := &tr.released[k]
	tr.c.cl.give(r.undo)
	tr.t.used = tr.t.used.Add(r.v.demand)
	r.active = false
}

func (tr *trial) rerelease(k int) {
	r := &tr.released[k]
	for _, p := range r.undo {
		tr.c.cl.give([]placed{{node: p.node, req: p.req.Times(-1)}})
	}
	tr.t.used = tr.t.used.Sub(r.v.demand)
	r.active = true
}

func (tr *trial) undoAll() {
	for k := range tr.released {
		if tr.released[k].active {
			tr.unrelease(k)
		}
	}
}

// fits reports whether j would fit its quota and the nodes now.
func (tr *trial) fits(j *jobState) bool {
	if !tr.t.used.Add(j.demand).Within(tr.t.Quota) {
		return false
	}
	ps, ok := tr.c.cl.gang(j.Groups, true)
	tr.c.cl.give(ps)
	return ok
}
