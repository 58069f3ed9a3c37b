package admission

import (
	"container/heap"
	"time"

	"github.com/trainyard/trainyard/internal/job"
)

// estimate gives every waiting job an estimated start, by playing the
// queue forward: running jobs end when their tenant's recent jobs suggest
// (the median run time, from when they started) or, without history, at
// their deadline; waiting jobs then start in cluster order, each when the
// jobs ending before it have freed enough of the cluster's capacity (in
// total, not per node) and of its tenant's quota, and end in turn. A job
// whose start depends on a job with neither history nor deadline gets no
// estimate. It is an estimate: later submissions of higher priority,
// preemptions and fragmentation can delay a job past it.
func (c *cycle) estimate() {
	ends := &endHeap{}
	for _, t := range c.order {
		for _, j := range t.admitted {
			from := j.StartTime
			if from.IsZero() {
				from = c.now
			}
			if j.PreemptingFor != (Key{}) {
				heap.Push(ends, end{at: c.now.Add(j.GracePeriod), j: j, basis: job.ETAPreemption})
			} else if d, basis, ok := c.runTime(j); ok {
				heap.Push(ends, end{at: laterOf(from.Add(d), c.now), j: j, basis: basis})
			}
		}
	}
	for _, k := range c.out.Admit {
		j := c.jobs[k]
		if d, basis, ok := c.runTime(j); ok {
			heap.Push(ends, end{at: c.now.Add(d), j: j, basis: basis})
		}
	}
	free := c.readyFree()
	used := map[*tenantState]job.Vector{}
	for _, t := range c.order {
		used[t] = t.used
	}
	cursor, cursorBasis, stuck := c.now, job.ETAAvailable, false
	for _, j := range c.waiting {
		w := j.wait
		if w.Reason == job.WaitUnschedulable && w.EstimatedStart == nil {
			continue // never fits: no estimate
		}
		if w.Reason == job.WaitBudget {
			continue // it starts when the budget's period resets, if at all
		}
		if stuck {
			w.EstimatedStart, w.EstimateBasis = nil, ""
			continue
		}
		at, basis := cursor, cursorBasis
		if j.NotBefore.After(at) {
			at, basis = j.NotBefore, job.ETABackoff
		}
		fits := func() bool { return j.demand.LessEq(free) && used[j.t].Add(j.demand).Within(j.t.etaQuota()) }
		pop := func() end {
			e := heap.Pop(ends).(end)
			free = free.Add(e.j.demand)
			used[e.j.t] = used[e.j.t].Sub(e.j.demand)
			return e
		}
		// Jobs that end by then free their resources anyway; past that, wait
		// for the next end until j fits.
		for ends.Len() > 0 && (!fits() || !ends.items[0].at.After(at)) {
			needed := !fits()
			e := pop()
			if needed {
				at, basis = laterOf(at, e.at), e.basis
			}
		}
		stuck = !fits()
		if stuck {
			w.EstimatedStart, w.EstimateBasis = nil, ""
			continue
		}
		eta := at
		w.EstimatedStart, w.EstimateBasis = &eta, basis
		free = free.Sub(j.demand)
		used[j.t] = used[j.t].Add(j.demand)
		if d, b, ok := c.runTime(j); ok {
			heap.Push(ends, end{at: at.Add(d), j: j, basis: b})
		}
		cursor, cursorBasis = at, basis
	}
	c.out.Waiting = c.waits
}

// runTime is how long j is expected to run: its tenant's typical run time,
// capped by its deadline, else its deadline.
func (c *cycle) runTime(j *jobState) (time.Duration, job.ETABasis, bool) {
	switch typical, limit := j.t.RunTime, j.MaxRunTime; {
	case typical > 0 && limit > 0:
		return min(typical, limit), job.ETARunTimes, true
	case typical > 0:
		return typical, job.ETARunTimes, true
	case limit > 0:
		return limit, job.ETADeadlines, true
	}
	return 0, "", false
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

type end struct {
	at    time.Time
	j     *jobState
	basis job.ETABasis
}

// endHeap orders ends by time, then job, so that equal snapshots estimate alike.
type endHeap struct{ items []end }

func (h *endHeap) Len() int { return len(h.items) }
func (h *endHeap) Less(i, k int) bool {
	a, b := h.items[i], h.items[k]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	if a.j.Key.Tenant != b.j.Key.Tenant {
		return a.j.Key.Tenant < b.j.Key.Tenant
	}
	return a.j.Key.UID < b.j.Key.UID
}
func (h *endHeap) Swap(i, k int) { h.items[i], h.items[k] = h.items[k], h.items[i] }
func (h *endHeap) Push(x any)    { h.items = append(h.items, x.(end)) }
func (h *endHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// etaQuota is the limit start estimates hold a tenant's jobs to: its
// quota; for a tenant of a cohort, its nominal quota plus its borrowing
// limit (none when it may borrow the whole pool; the pool is not modelled).
func (t *tenantState) etaQuota() job.Vector {
	if t.sh == nil || t.sh.co == nil {
		return t.Quota
	}
	if t.Sharing.BorrowingLimit == nil {
		return job.Vector{}
	}
	q := t.Quota
	for r := range q {
		if q[r] > 0 {
			q[r] += t.Sharing.BorrowingLimit[r]
		}
	}
	return q
}
