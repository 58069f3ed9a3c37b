package sim

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// stepScheduler runs one scheduling cycle as the scheduler loop would:
// snapshot, Schedule, then carry out admissions (pods where the decision
// found room; they run at once) and preemptions (victims stop at once and
// are queued again with their progress).
func (r *run) stepScheduler() { r.schedule(maxRounds) }

// maxRounds bounds the cycles run at one instant: a preemption frees its
// victims at once, and the loop runs its next cycle as soon as they are
// gone (a chain of reclaims by several tenants takes a cycle each).
const maxRounds = 16

// schedule decides; when it preempted, it decides again (at most depth
// times) since the victims' room is free at once.
func (r *run) schedule(depth int) {
	d, byKey := r.decide(true)
	if !r.prefixDecided(d) {
		d, byKey = r.decide(false)
	}
	r.apply(d, byKey, depth)
}

// queuePrefix is how many pending jobs of a STRICT_FIFO tenant a cycle
// is shown (prefixDecided).
const queuePrefix = 16

// decide builds the snapshot and decides. With prefix, a STRICT_FIFO
// tenant's pending jobs past the first queuePrefix of its queue are left
// out (but for requeued victims, whose preemptors they nominate): once one
// of a tenant's jobs is not admitted under STRICT_FIFO, every later one
// waits behind it (ORDER or PRIORITY) and changes nothing else of the
// decision (a tenant's share in the cluster order is its own; jobs that
// wait behind another neither hold nor preempt). prefixDecided checks
// that the prefix did end with such a job; otherwise the cycle is decided
// again in full. The simulation reads only admissions and preemptions.
func (r *run) decide(prefix bool) (admission.Decision, map[admission.Key]*simJob) {
	// The snapshot's slices and byKey are reused from cycle to cycle:
	// Schedule keeps nothing of its input.
	b := &r.buf
	if b.byKey == nil {
		b.byKey = map[admission.Key]*simJob{}
	}
	clear(b.byKey)
	byKey := b.byKey
	snap := admission.Snapshot{Now: epoch.Add(r.now), Config: admission.Config{StarvationAge: 30 * time.Minute, BorrowAging: r.aging}, Cohorts: r.cohorts,
		Tenants: b.tenants[:0], Jobs: b.jobs[:0], Nodes: b.nodes[:0]}
	for _, t := range r.tenants {
		if r.policy == PolicyCohortHistory {
			t.Sharing.Usage = r.share.usage[t.ID]
		}
		snap.Tenants = append(snap.Tenants, t)
	}
	r.prefixLast = r.prefixLast[:0]
	var queues map[string][]*simJob
	if prefix {
		queues = r.strictQueues()
	}
	for _, j := range r.live {
		if _, cut := queues[j.Tenant]; cut && !j.admitted && j.preempted == (admission.Key{}) && j.qpos >= queuePrefix {
			continue
		}
		byKey[j.key] = j
		sj := admission.Job{
			Key: j.key, Name: j.Name, Priority: j.Priority, Seq: j.seq, QueuedAt: epoch.Add(j.queuedAt),
			Groups: j.Groups, MaxRunTime: 0, Admitted: j.admitted,
		}
		if j.admitted {
			sj.StartTime = epoch.Add(j.started)
			if j.onNodes == nil {
				// Built once per admission: the snapshot only reads them.
				j.onNodes = map[string]job.Vector{}
				for _, p := range j.placed {
					j.onNodes[p.node] = j.onNodes[p.node].Add(p.req)
				}
				j.placedGroups = slices.Clone(j.Groups)
				for i := range j.placedGroups {
					j.placedGroups[i].Placed = j.placedGroups[i].Count
				}
			}
			sj.OnNodes, sj.Groups = j.onNodes, j.placedGroups
		} else if j.preempted != (admission.Key{}) {
			sj.PreemptedBy, sj.PreemptedByName = j.preempted, r.names[j.preempted]
		}
		snap.Jobs = append(snap.Jobs, sj)
	}
	for _, n := range r.nodes {
		n.Used = n.Used.Add(r.used[n.Name])
		snap.Nodes = append(snap.Nodes, n)
	}
	b.tenants, b.jobs, b.nodes = snap.Tenants, snap.Jobs, snap.Nodes
	for _, q := range queues {
		if len(q) > queuePrefix {
			r.prefixLast = append(r.prefixLast, q[queuePrefix-1].key)
		}
	}
	return admission.Schedule(snap), byKey
}

// strictQueues are the pending jobs of each STRICT_FIFO tenant in queue
// order (priority, then submission); only tenants with more than
// queuePrefix of them.
func (r *run) strictQueues() map[string][]*simJob {
	count := map[string]int{}
	for _, j := range r.live {
		if !j.admitted {
			count[j.Tenant]++
		}
	}
	queues := map[string][]*simJob{}
	for _, j := range r.live {
		if j.admitted || count[j.Tenant] <= queuePrefix || r.tenants[j.Tenant].Scheduling.WithDefaults().Queueing != tenant.StrictFIFO {
			continue
		}
		queues[j.Tenant] = append(queues[j.Tenant], j)
	}
	for _, q := range queues {
		// r.live is in submission order: a stable sort by priority.
		slices.SortStableFunc(q, func(a, b *simJob) int { return cmp.Compare(b.Priority, a.Priority) })
		for i, j := range q {
			j.qpos = i
		}
	}
	return queues
}

// prefixDecided reports whether every cut queue's last job shown waits
// behind an earlier one of its tenant: then so would the jobs left out.
func (r *run) prefixDecided(d admission.Decision) bool {
	if len(r.prefixLast) == 0 {
		return true
	}
	behind := 0
	for _, w := range d.Waiting {
		if (w.Reason == job.WaitOrder || w.Reason == job.WaitPriority) && slices.Contains(r.prefixLast, w.Key) {
			behind++
		}
	}
	return behind == len(r.prefixLast)
}

// apply carries out a decision; when it preempted, it decides again.
func (r *run) apply(d admission.Decision, byKey map[admission.Key]*simJob, depth int) {
	for _, p := range d.Preempt {
		v := byKey[p.Victim]
		// It resumes from its last checkpoint: the work since is lost.
		ran := r.now - v.started
		lost := ran % CheckpointEvery
		v.left -= ran - lost
		r.share.lost(v, lost)
		v.started = -1
		r.free(v)
		v.queuedAt, v.preempted = r.now, p.By
		r.preemptions++
	}
	for _, k := range d.Admit {
		j := byKey[k]
		nodes := d.Assigned[k]
		i := 0
		for _, g := range j.Groups {
			for range g.Count {
				j.placed = append(j.placed, placement{node: nodes[i], req: g.Request})
				r.used[nodes[i]] = r.used[nodes[i]].Add(g.Request)
				i++
			}
		}
		j.admitted, j.preempted = true, admission.Key{}
		r.start(j)
	}
	if len(d.Preempt) > 0 && depth > 1 {
		r.schedule(depth - 1)
	}
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// stepQuotaFIFO is the admission Trainyard had before the scheduler: each
// tenant's queue strictly in (priority, submission) order against its
// quota only, then every admitted pod placed one at a time, first fit, in
// admission order, without regard to gangs.
func (r *run) stepQuotaFIFO() {
	used := map[string]job.Vector{}
	var queue []*simJob
	for _, j := range r.live {
		switch {
		case j.admitted:
			used[j.Tenant] = used[j.Tenant].Add(demand(j.Groups))
		default:
			queue = append(queue, j)
		}
	}
	slices.SortStableFunc(queue, func(a, b *simJob) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.seq, b.seq))
	})
	blocked := map[string]bool{}
	for _, j := range queue {
		if blocked[j.Tenant] {
			continue
		}
		d := demand(j.Groups)
		if !used[j.Tenant].Add(d).Within(r.tenants[j.Tenant].Quota) {
			blocked[j.Tenant] = true
			continue
		}
		used[j.Tenant] = used[j.Tenant].Add(d)
		j.admitted = true
		for _, g := range j.Groups {
			for range g.Count {
				one := g
				one.Count = 1
				j.pendingPod = append(j.pendingPod, one)
			}
		}
	}
	// The kube-scheduler model: the worker creates an admitted job's pods
	// together, so the scheduler's queue holds the pods of jobs admitted
	// close together interleaved. Place them round-robin across jobs in
	// admission order, each on the first node with room; a pod that does
	// not fit waits, and the others go on.
	var placing []*simJob
	for _, j := range r.live { // in submission (seq) order
		if j.admitted && len(j.pendingPod) > 0 {
			placing = append(placing, j)
		}
	}
	for progress := true; progress; {
		progress = false
		for _, j := range placing {
			for k, p := range j.pendingPod {
				if node, ok := r.firstFit(p); ok {
					j.placed = append(j.placed, placement{node: node, req: p.Request})
					r.used[node] = r.used[node].Add(p.Request)
					j.pendingPod = slices.Delete(j.pendingPod, k, k+1)
					progress = true
					break
				}
			}
		}
	}
	for _, j := range placing {
		if len(j.pendingPod) == 0 && j.started < 0 {
			r.start(j)
		}
	}
}

// firstFit finds the first node (in trace order) that allows the pod and
// has room for it.
func (r *run) firstFit(g admission.Group) (string, bool) {
	for _, n := range r.nodes {
		if n.Unschedulable || !g.Request.LessEq(n.Allocatable.Sub(n.Used).Sub(r.used[n.Name])) || !allows(g.Placement, n) {
			continue
		}
		return n.Name, true
	}
	return "", false
}

// allows is the placement check for the quota-fifo model: node selector
// labels only (traces keep placements simple).
func allows(p admission.Placement, n admission.Node) bool {
	for k, v := range p.NodeSelector {
		if n.Labels[k] != v {
			return false
		}
	}
	return true
}

func demand(groups []admission.Group) job.Vector {
	var d job.Vector
	for _, g := range groups {
		d = d.Add(g.Request.Times(int64(g.Count)))
	}
	return d
}

func (r *run) result(horizon time.Duration) Result {
	res := r.res
	res.Preemptions = r.preemptions
	res.Wait = map[string]Stats{}
	waits := map[string][]time.Duration{}
	slowdown := map[string][]float64{}
	for _, j := range r.jobs {
		if !j.done {
			res.Stuck++
			continue
		}
		res.Finished++
		res.Makespan = max(res.Makespan, j.end)
		waits[j.Tenant] = append(waits[j.Tenant], j.firstStart-j.Submit)
		slowdown[j.Tenant] = append(slowdown[j.Tenant], float64(j.end-j.Submit)/float64(max(j.Run, time.Second)))
	}
	for t, ws := range waits {
		res.Wait[t] = statsOf(ws)
	}
	var gpus int64
	for _, n := range r.nodes {
		if !n.Unschedulable {
			gpus += n.Allocatable[job.GPU]
		}
	}
	if total := float64(gpus) * min(r.lastAcct, horizon).Seconds(); total > 0 {
		res.GPUUtilization = r.busyGPU / total
		res.Held = r.heldGPU / total
	}
	res.Fairness = jain(slowdown)
	res.Sharing = r.share.result(r)
	return res
}

func statsOf(ds []time.Duration) Stats {
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(math.Ceil(q*float64(len(ds))))-1)] }
	return Stats{N: len(ds), P50: at(0.5), P95: at(0.95), P99: at(0.99), Max: ds[len(ds)-1]}
}

// jain is Jain's fairness index of the tenants' mean slowdowns.
func jain(byTenant map[string][]float64) float64 {
	var sum, sq float64
	n := 0
	for _, xs := range byTenant {
		m := 0.0
		for _, x := range xs {
			m += x
		}
		m /= float64(len(xs))
		sum += m
		sq += m * m
		n++
	}
	if n == 0 || sq == 0 {
		return 0
	}
	return sum * sum / (float64(n) * sq)
}
