package admission

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Schedule decides one cycle: which pending jobs to admit, which running
// jobs to preempt, and where every other pending job stands. It is pure:
// no I/O, no clock but s.Now, and the same snapshot (in any order) gives
// the same decision. It does not modify s. doc.go explains the rules.
func Schedule(s Snapshot) Decision {
	s, gated := gateDependencies(s)
	c := newCycle(&s)
	c.reserveAdmitted()
	c.admitInOrder()
	c.estimate()
	c.out.Waiting = append(c.out.Waiting, gated.waiting...)
	c.out.DependencyFailed = gated.failed
	out := c.out
	c.release()
	return out
}

// statesPool keeps the jobs' states of past cycles for the next: a cycle
// allocates one per job, and a loop that decides every few seconds (or a
// simulation that decides at every event) would otherwise make as much
// garbage as it reads. Nothing of a cycle's states outlives Schedule.
var statesPool sync.Pool

func (c *cycle) release() {
	states := c.states
	statesPool.Put(&states)
}

// cycle is one Schedule call.
type cycle struct {
	now time.Time
	cfg Config
	// clusters are the Kubernetes clusters, by name (clusters.go);
	// anywhere is where a job without constraints may run (the READY
	// ones), wheres the other jobs' sets, by their constraints; multi
	// says whether there is more than the one (messages name them).
	clusters []*cluster
	anywhere *where
	wheres   map[string]*where
	multi    bool
	capacity job.Vector // of the READY clusters together
	fitBuf   []*cluster // byFit's result, and its scratch
	fits     []fit
	tenants  map[string]*tenantState
	order    []*tenantState // by id
	jobs     map[Key]*jobState
	// never and ever: gang shapes (within a set of clusters, where.of)
	// that no node set of any one cluster could ever hold, or some could.
	never map[uint64]bool
	ever  map[uint64]bool
	// noPreempt: (tenant, shape) for which preemption found nothing, by
	// the highest priority that tried (a lower one has fewer candidates;
	// another tenant has other jobs to preempt).
	noPreempt map[tenantShape]int32
	// hold is a job that has waited past the starvation age for capacity:
	// later jobs may not take what it lacks.
	hold *jobState
	// waiting are the pending jobs not admitted, in cluster order, and
	// waits their entries.
	waiting []*jobState
	waits   []Waiting
	out     Decision
	// states back c.jobs (from statesPool).
	states []jobState

	// Sharing (sharing.go): the GPU models quotas name, each a dimension
	// after job.Vector's, and the model of each node.
	gpuLabel  string
	models    []string
	modelIdx  map[string]int
	nodeModel map[nodeRef]string
	// noReclaim: (tenant, shape) for which cross-tenant preemption found
	// nothing, by the highest priority that tried.
	noReclaim map[tenantShape]int32
}

// nodeRef names a node: its name is unique only within its cluster.
type nodeRef struct{ cluster, name string }

type tenantShape struct {
	t     *tenantState
	shape uint64
}

type tenantState struct {
	Tenant
	used      job.Vector // demand of admitted jobs
	orderUsed job.Vector // used plus the demand of jobs ordered so far
	queue     []*jobState
	next      int
	admitted  []*jobState
	// blocker holds the tenant's line: no later job of it is admitted.
	blocker    *jobState
	blockedMsg map[job.WaitReason]string
	waiting    int  // waiting jobs ordered so far
	gone       bool // not in the snapshot's tenants: holds, admits nothing
	// sh is set for a sharing tenant (a cohort, or quotas per GPU
	// model), and use is then what it uses in every quota dimension.
	sh  *shareState
	use acct
}

type jobState struct {
	Job
	t      *tenantState
	demand job.Vector
	shape  uint64
	// reserved are placements made for an admitted job's pods that are
	// not on nodes yet.
	reserved []placed
	// preempting is set for an admitted job being preempted, to the job
	// it makes room for (nil when that job is not pending any more).
	preempting *jobState
	// cl is the cluster an admitted job runs in (nil: none with nodes);
	// at is where a pending job may run.
	cl    *cluster
	at    *where
	wait  *Waiting
	short []job.Resource // what it lacks, while it waits
	// Sharing tenants' jobs: what the job counts against quotas (admitted:
	// its own; pending: once admitted), and the ways it may run.
	need     acct
	variants []variant
	own      acct       // ownNeed, once computed
	one      [1]variant // variants' backing when there is one
}

func newCycle(s *Snapshot) *cycle {
	c := &cycle{
		now: s.Now, cfg: s.Config, clusters: newClusters(s), wheres: map[string]*where{},
		tenants: map[string]*tenantState{}, jobs: make(map[Key]*jobState, len(s.Jobs)),
		never: map[uint64]bool{}, ever: map[uint64]bool{}, noPreempt: map[tenantShape]int32{},
		noReclaim: map[tenantShape]int32{},
	}
	c.multi = len(c.clusters) > 1
	c.anywhere = &where{matched: c.clusters}
	for _, cl := range c.clusters {
		if cl.ready {
			c.anywhere.clusters = append(c.anywhere.clusters, cl)
			c.capacity = c.capacity.Add(cl.capacity)
		}
	}
	label := s.Config.GPUTypeLabel
	if label == "" {
		label = DefaultGPUTypeLabel
	}
	for _, t := range s.Tenants {
		t.Scheduling = t.Scheduling.WithDefaults()
		c.tenants[t.ID] = &tenantState{Tenant: t}
	}
	var states []jobState
	if p, ok := statesPool.Get().(*[]jobState); ok && cap(*p) >= len(s.Jobs) {
		states = (*p)[:len(s.Jobs)]
	} else {
		states = make([]jobState, len(s.Jobs))
	}
	c.states = states
	pending := 0
	for i := range s.Jobs {
		j := &s.Jobs[i]
		t := c.tenants[j.Key.Tenant]
		if t == nil {
			// An admitted job of a tenant that is going still holds nodes.
			t = &tenantState{Tenant: Tenant{ID: j.Key.Tenant}, gone: true}
			c.tenants[j.Key.Tenant] = t
		}
		if t.gone && !j.Admitted {
			continue // its tenant is gone or not active: nothing to admit
		}
		js := &states[i]
		*js = jobState{Job: *j, t: t, demand: demandOf(j.Groups)}
		if j.GPUType != "" {
			// It asks for a model: its GPU pods go to nodes of that model.
			js.Groups = withModel(j.Groups, label, j.GPUType)
		}
		js.shape = shapeOf(js.Groups)
		c.jobs[j.Key] = js
		if j.Admitted {
			js.cl = c.clusterOf(j.Cluster)
			t.admitted = append(t.admitted, js)
			t.used = t.used.Add(js.demand)
		} else {
			js.at = c.whereOf(j, t.Clusters)
			t.queue = append(t.queue, js)
			pending++
		}
	}
	// Sized once: wait keeps pointers into it.
	c.waits = make([]Waiting, 0, pending)
	for _, t := range c.tenants {
		c.order = append(c.order, t)
		t.orderUsed = t.used
		slices.SortFunc(t.queue, queueOrder)
		slices.SortFunc(t.admitted, func(a, b *jobState) int {
			return cmp.Or(cmp.Compare(b.Priority, a.Priority), a.StartTime.Compare(b.StartTime), cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Key.UID, b.Key.UID))
		})
	}
	slices.SortFunc(c.order, func(a, b *tenantState) int { return cmp.Compare(a.ID, b.ID) })
	for _, t := range c.order {
		for _, v := range t.admitted {
			if v.PreemptingFor != (Key{}) {
				if p := c.jobs[v.PreemptingFor]; p != nil && !p.Admitted {
					v.preempting = p
				}
			}
		}
	}
	c.setupSharing(s)
	return c
}

// blockedMessage says why a job waits behind the tenant's blocker; it is
// the same for every job behind it, so it is built once.
func (t *tenantState) blockedMessage(reason job.WaitReason) string {
	if t.blockedMsg == nil {
		t.blockedMsg = map[job.WaitReason]string{}
	}
	msg, ok := t.blockedMsg[reason]
	if !ok {
		why := "an earlier job"
		if reason == job.WaitPriority {
			why = "a job of higher priority"
		}
		msg = fmt.Sprintf("%s of the tenant, %q, starts first", why, t.blocker.Name)
		t.blockedMsg[reason] = msg
	}
	return msg
}

// queueOrder is a tenant's queue: priority, then submission.
func queueOrder(a, b *jobState) int {
	return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Key.UID, b.Key.UID))
}

// sortedNodes orders nodes by cluster, then name.
func sortedNodes(nodes []Node) []Node {
	out := slices.Clone(nodes)
	slices.SortFunc(out, func(a, b Node) int { return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Name, b.Name)) })
	return out
}

func demandOf(groups []Group) job.Vector {
	var d job.Vector
	for _, g := range groups {
		d = d.Add(g.Request.Times(int64(g.Count)))
	}
	return d
}

// shapeOf identifies what a pending job asks of nodes: equal shapes fit
// or not alike.
func shapeOf(groups []Group) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, g := range groups {
		h.Write([]byte(g.PlacementKey))
		binary.LittleEndian.PutUint64(b[:], uint64(g.Count-g.Placed))
		h.Write(b[:])
		for _, v := range g.Request {
			binary.LittleEndian.PutUint64(b[:], uint64(v))
			h.Write(b[:])
		}
	}
	return h.Sum64()
}

// reserveAdmitted sets capacity aside for the admitted jobs' pods that are
// not on nodes yet: they were promised room, and nothing admitted now may
// take it. Pods that do not fit any more are left to the job's
// unschedulable timeout (the worker requeues the job).
func (c *cycle) reserveAdmitted() {
	for _, t := range c.order {
		for _, j := range t.admitted {
			for i := range j.Groups {
				g := &j.Groups[i]
				if g.Count <= g.Placed {
					continue
				}
				one := []Group{*g}
				one[0].Placed = 0
				one[0].Count = g.Count - g.Placed
				if j.cl == nil {
					continue // its cluster has no nodes here to reserve on
				}
				if ps, ok := j.cl.gang(one, true); ok {
					j.reserved = append(j.reserved, ps...)
				}
			}
		}
	}
}

// admitInOrder walks the pending jobs in cluster order and admits each
// that its tenant's order, quota and the nodes allow.
//
// Jobs that would borrow in a cohort go after every other job (under
// STRICT_FIFO their tenant's later jobs with them): a cycle never
// lends what a member's own job within its nominal quota needs in that
// cycle, and so never admits a borrower only to reclaim from it.
func (c *cycle) admitInOrder() {
	var later []*jobState
	deferred := map[*tenantState]bool{}
	for _, j := range c.clusterOrder() {
		if t := j.t; t.sh != nil && t.sh.co != nil {
			borrows := false
			if !deferred[t] && t.blocker == nil {
				_, within := c.quotaFits(t, j, c.ownNeed(j))
				borrows = !within
				// Under STRICT_FIFO the tenant's later jobs wait behind it.
				deferred[t] = borrows && t.Scheduling.Queueing == tenant.StrictFIFO
			}
			if borrows || deferred[t] {
				later = append(later, j)
				continue
			}
		}
		c.consider(j)
	}
	for _, j := range later {
		c.consider(j)
	}
}

// clusterOrder merges the tenants' queues: jobs that preemptions made room
// for first, then, one job at a time, the next job of the tenant with the
// smallest dominant share (its demand over the cluster's capacity in the
// dimension where that is largest), counting the jobs ordered so far.
// A tenant that uses much waits behind one that uses little.
func (c *cycle) clusterOrder() []*jobState {
	var order []*jobState
	nominated := map[*jobState]bool{}
	nominate := func(k Key) {
		if p := c.jobs[k]; p != nil && !p.Admitted {
			nominated[p] = true
		}
	}
	for _, t := range c.order {
		for _, v := range t.admitted {
			nominate(v.PreemptingFor)
		}
		for _, j := range t.queue {
			// A requeued victim's preemptor, while it still waits, keeps
			// the room made for it.
			nominate(j.PreemptedBy)
		}
	}
	for _, t := range c.order {
		for _, j := range t.queue {
			if nominated[j] {
				order = append(order, j)
			}
		}
	}
	h := &shareHeap{capacity: c.capacity, c: c}
	for _, t := range c.order {
		if len(t.queue) > 0 {
			h.items = append(h.items, t)
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		t := h.items[0]
		j := t.queue[t.next]
		t.next++
		if !nominated[j] {
			order = append(order, j)
		}
		t.orderUsed = t.orderUsed.Add(j.demand)
		if t.next == len(t.queue) {
			heap.Pop(h)
		} else {
			heap.Fix(h, 0)
		}
	}
	return order
}

const msgNeverFits = "no set of schedulable nodes can hold all of its pods at once (node selectors, affinity, taints, node sizes)"

// consider admits j or records why it waits.
func (c *cycle) consider(j *jobState) {
	t := j.t
	switch {
	case j.NotBefore.After(c.now):
		c.wait(j, job.WaitUnschedulable, "its pods could not be placed; it tries again after a backoff", nil)
		eta := j.NotBefore
		j.wait.EstimatedStart, j.wait.EstimateBasis = &eta, job.ETABackoff
		return
	case t.blocker != nil:
		reason := job.WaitOrder
		if t.blocker.Priority > j.Priority {
			reason = job.WaitPriority
		}
		c.wait(j, reason, t.blockedMessage(reason), nil)
		j.wait.BlockedBy = t.blocker.Name
		return
	case t.Sharing.Budget.Exhausted() && j.demand[job.GPU] > 0 && (t.sh == nil || !t.sh.overBudget):
		b := t.Sharing.Budget
		msg := fmt.Sprintf("the tenant's GPU-hour budget is used up (%.1f of %.1f GPU-hours)", b.UsedGPUHours, b.GPUHours)
		if !b.ResetAt.IsZero() {
			msg += "; the period resets at " + b.ResetAt.UTC().Format(time.RFC3339)
		}
		c.wait(j, job.WaitBudget, msg, []job.Resource{job.GPU})
		if !b.ResetAt.IsZero() {
			eta := laterOf(b.ResetAt, c.now)
			j.wait.EstimatedStart, j.wait.EstimateBasis = &eta, job.ETABackoff
		}
		return // holds nobody up: the tenant's CPU jobs may start
	case len(j.at.clusters) == 0:
		// No READY cluster it allows: it holds nobody up, as a job no
		// node set can hold does not.
		c.wait(j, job.WaitUnschedulable, c.noClusterMessage(j), nil)
		return
	case t.sh != nil:
		c.considerShared(j)
		return
	}
	if over := j.demand.Over(t.Quota); len(over) > 0 {
		// The quota was lowered after the job was accepted: it can not
		// start until it is raised, and holds nobody up meanwhile.
		c.wait(j, job.WaitQuota, "needs more than the tenant's whole quota: "+quotaParts(j.demand, job.Vector{}, t.Quota, over), over)
		return
	}
	if c.never[j.at.of(j.shape)] {
		c.wait(j, job.WaitUnschedulable, c.neverMessage(j), nil)
		return
	}
	if h := c.hold; h != nil && h.t != t && touches(j.demand, h.short) {
		c.wait(j, job.WaitCapacity, "the resources it needs are held for a job that has waited longer", h.short)
		c.block(j)
		return
	}
	over := t.used.Add(j.demand).Over(t.Quota)
	if len(over) == 0 {
		if cl, ps, ok := c.placeShape(j, j.Groups, j.shape); ok {
			c.admit(j, cl, ps)
			return
		}
	}
	if !c.everFitsShape(j, j.Groups, j.shape) {
		c.wait(j, job.WaitUnschedulable, c.neverMessage(j), nil)
		return
	}
	reason, short := job.WaitQuota, over
	msg := ""
	if len(over) > 0 {
		msg = "waiting for quota: " + quotaParts(j.demand, t.used, t.Quota, over)
	} else {
		cl := c.closest(j)
		reason, short = job.WaitCapacity, c.shortOf(j, cl)
		msg = "waiting for capacity: " + c.capacityMessage(j, cl, short)
	}
	if t.Scheduling.Preemption == tenant.PreemptLowerPriority {
		if victims, inFlight := c.preempt(j, j.Groups, j.shape, nil); len(victims)+len(inFlight) > 0 {
			c.announce(j, reason, victims)
			names := namesOf(append(slices.Clone(inFlight), victims...))
			c.wait(j, reason, fmt.Sprintf("%s; preempting %s, which must stop first", msg, strings.Join(names, ", ")), short)
			j.wait.BlockedBy = names[0]
			c.block(j)
			return
		}
	}
	if j.PreemptedByName != "" {
		msg = fmt.Sprintf("preempted by job %q; %s", j.PreemptedByName, msg)
		reason = job.WaitPreempted
	}
	c.wait(j, reason, msg, short)
	c.block(j)
}

func (c *cycle) admit(j *jobState, cl *cluster, ps []placed) {
	j.reserved, j.cl = ps, cl
	j.t.used = j.t.used.Add(j.demand)
	if j.t.sh != nil {
		j.t.use.add(j.need)
	}
	c.out.Admit = append(c.out.Admit, j.Key)
	nodes := make([]string, len(ps))
	for i, p := range ps {
		nodes[i] = cl.nodes[p.node].node.Name
	}
	if c.out.Assigned == nil {
		c.out.Assigned, c.out.Clusters = map[Key][]string{}, map[Key]string{}
	}
	c.out.Assigned[j.Key] = nodes
	c.out.Clusters[j.Key] = cl.Name
}

// block applies the queueing rules to a job that was not admitted: under
// STRICT_FIFO it holds back the rest of its tenant's queue; under
// BEST_EFFORT_FIFO it does once it has waited the starvation age. A job
// that has waited that long for capacity also keeps later jobs of other
// tenants off the resources it lacks.
func (c *cycle) block(j *jobState) {
	starving := c.cfg.StarvationAge > 0 && c.now.Sub(j.QueuedAt) >= c.cfg.StarvationAge
	if j.t.blocker == nil && (j.t.Scheduling.Queueing == tenant.StrictFIFO || starving) {
		j.t.blocker = j
	}
	if starving && c.hold == nil && j.wait.Reason == job.WaitCapacity {
		c.hold = j
	}
}

func (c *cycle) wait(j *jobState, reason job.WaitReason, msg string, short []job.Resource) {
	j.t.waiting++
	j.short = short
	c.waits = append(c.waits, Waiting{Key: j.Key, QueueInfo: job.QueueInfo{
		Reason: reason, Message: msg, TenantPosition: j.t.waiting, ClusterPosition: len(c.waiting) + 1,
	}})
	j.wait = &c.waits[len(c.waits)-1]
	for _, r := range short {
		j.wait.WaitingFor = append(j.wait.WaitingFor, r.Name())
	}
	c.waiting = append(c.waiting, j)
}

// shortOf names the resources cluster cl lacks for j: those of which
// there is not enough free in total, else (the sum fits, the pods do not)
// every resource j asks for, since the free capacity is split across nodes.
func (c *cycle) shortOf(j *jobState, cl *cluster) []job.Resource {
	if short := j.demand.Short(cl.free); len(short) > 0 {
		return short
	}
	// Enough is free in the cluster, spread too thin: what is short is
	// what some pod asks more of than any node has free, else (the pods
	// do not fit together) everything the job asks for.
	var tooBig, asked []job.Resource
	for _, r := range job.AllResources {
		if j.demand[r] <= 0 || r == job.Pods {
			continue
		}
		asked = append(asked, r)
		if podMax(j, r) > cl.maxFree(r) {
			tooBig = append(tooBig, r)
		}
	}
	if len(tooBig) > 0 {
		return tooBig
	}
	return asked
}

// podMax is the most of r one of j's pods requests.
func podMax(j *jobState, r job.Resource) int64 {
	m := int64(0)
	for _, g := range j.Groups {
		m = max(m, g.Request[r])
	}
	return m
}

// touches reports whether d asks for any of rs.
func touches(d job.Vector, rs []job.Resource) bool {
	for _, r := range rs {
		if d[r] > 0 {
			return true
		}
	}
	return false
}

func quotaParts(demand, used, quota job.Vector, over []job.Resource) string {
	var parts []string
	for _, r := range over {
		parts = append(parts, fmt.Sprintf("needs %s %s, %s of %s in use", r.Format(demand[r]), r.Human(), r.Format(used[r]), r.Format(quota[r])))
	}
	return strings.Join(parts, "; ")
}

// capacityMessage says what of short cluster cl (with several clusters,
// the closest) lacks for j: in total, or on any one node for its largest
// pod; and, when the clusters together have enough free, that a gang is
// never split across them.
func (c *cycle) capacityMessage(j *jobState, cl *cluster, short []job.Resource) string {
	in := "the cluster"
	if c.multi {
		in = clusterWord(cl)
	}
	var parts []string
	for _, r := range short {
		free := max(cl.free[r], 0)
		if free < j.demand[r] {
			parts = append(parts, fmt.Sprintf("needs %s %s, %s free in %s", r.Format(j.demand[r]), r.Human(), r.Format(free), in))
		} else if pod, node := podMax(j, r), max(cl.maxFree(r), 0); pod > node {
			parts = append(parts, fmt.Sprintf("a pod needs %s %s, at most %s free on one node (%s in %s)", r.Format(pod), r.Human(), r.Format(node), r.Format(free), in))
		}
	}
	msg := strings.Join(parts, "; ")
	if len(parts) == 0 {
		msg = "enough is free in " + in + ", but not on a set of nodes that holds every pod of the job"
	}
	if !c.multi {
		return msg
	}
	cls := j.at.clusters
	if len(cls) == 1 {
		return msg + tenantNote(j.at)
	}
	msg = fmt.Sprintf("no cluster can hold all of its pods now; the closest is %s: %s", clusterWord(cl), msg)
	var sum job.Vector
	for _, k := range cls {
		sum = sum.Add(k.free)
	}
	if j.demand.LessEq(sum) {
		msg += fmt.Sprintf("; clusters %s have enough free together, but %s", clusterNames(cls), msgNeverSplit)
	}
	return msg + tenantNote(j.at)
}

func namesOf(js []*jobState) []string {
	names := make([]string, len(js))
	for i, j := range js {
		names[i] = j.Name
	}
	return names
}

// shareHeap orders tenants: those whose next job stays within their
// nominal quota first, then by weighted share in their cohort (0 outside
// cohorts), then by dominant share of the cluster, then id.
type shareHeap struct {
	items    []*tenantState
	capacity job.Vector
	c        *cycle
}

func (h *shareHeap) share(t *tenantState) float64 {
	s := 0.0
	for r, c := range h.capacity {
		if c > 0 {
			s = max(s, float64(t.orderUsed[r])/float64(c))
		}
	}
	return s
}

func (h *shareHeap) Len() int { return len(h.items) }
func (h *shareHeap) Less(i, k int) bool {
	if h.items[i].sh != nil || h.items[k].sh != nil {
		ba, sa := h.c.orderShare(h.items[i])
		bb, sb := h.c.orderShare(h.items[k])
		if ba != bb {
			return !ba
		}
		if ba {
			// Borrowers whose next job has waited Config.BorrowAging go
			// first, the longest waiting first (aging, doc.go).
			oa, ob := h.c.agedSince(h.items[i]), h.c.agedSince(h.items[k])
			if !oa.Equal(ob) {
				switch {
				case oa.IsZero():
					return false
				case ob.IsZero():
					return true
				}
				return oa.Before(ob)
			}
		}
		if sa != sb {
			return sa < sb
		}
	}
	a, b := h.share(h.items[i]), h.share(h.items[k])
	if a != b {
		return a < b
	}
	return h.items[i].ID < h.items[k].ID
}
func (h *shareHeap) Swap(i, k int) { h.items[i], h.items[k] = h.items[k], h.items[i] }
func (h *shareHeap) Push(x any)    { h.items = append(h.items, x.(*tenantState)) }
func (h *shareHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
