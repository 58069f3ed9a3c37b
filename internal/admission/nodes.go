package admission

import (
	"cmp"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/trainyard/trainyard/internal/job"
)

// cluster is one Kubernetes cluster's nodes and their free capacity during
// one cycle, and the placement classes seen so far. Within a cycle free
// capacity only shrinks (admissions take it), except inside a preemption
// trial, which gives back what it took before it returns.
type cluster struct {
	Cluster
	ready    bool // READY: takes new work
	nodes    []nodeState
	byName   map[string]int
	classes  map[string]*class
	capacity job.Vector // allocatable of the schedulable nodes
	free     job.Vector // free capacity of the schedulable nodes
	// failed are gang shapes that did not fit this cycle; free capacity
	// only shrinks, so they will not fit later in it either.
	failed map[uint64]bool
}

type nodeState struct {
	node *Node
	free job.Vector
}

// class is the set of nodes a placement allows, and what is known not to
// fit them any more this cycle.
type class struct {
	nodes []int // indices of eligible, schedulable nodes, in name order
	// cursor maps a request to the first eligible node that may still
	// hold it: nodes before it did not, and free capacity only shrinks.
	cursor map[job.Vector]int
}

// placed is one pod put on a node, to undo.
type placed struct {
	node int
	req  job.Vector
}

// newCluster builds a cluster of nodes sorted by name.
func newCluster(info Cluster, nodes []Node) *cluster {
	info.State = cmp.Or(info.State, ClusterReady)
	c := &cluster{
		Cluster: info, ready: info.State == ClusterReady,
		byName: make(map[string]int, len(nodes)), classes: map[string]*class{}, failed: map[uint64]bool{},
	}
	c.nodes = make([]nodeState, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		c.byName[n.Name] = i
		free := n.Allocatable.Sub(n.Used)
		if n.Unschedulable {
			free = job.Vector{}
		} else {
			c.capacity = c.capacity.Add(n.Allocatable)
			c.free = c.free.Add(free)
		}
		c.nodes[i] = nodeState{node: n, free: free}
	}
	return c
}

// maxFree is the most of r free on one schedulable node (nodes a job's
// placement rules out included: for messages only).
func (c *cluster) maxFree(r job.Resource) int64 {
	m := int64(0)
	for _, n := range c.nodes {
		m = max(m, n.free[r])
	}
	return m
}

// classOf returns the class of a group's placement, computing which nodes
// it allows the first time.
func (c *cluster) classOf(g *Group) *class {
	if cl, ok := c.classes[g.PlacementKey]; ok {
		return cl
	}
	cl := &class{cursor: map[job.Vector]int{}}
	match := matcher(g.Placement)
	for i := range c.nodes {
		if n := c.nodes[i].node; !n.Unschedulable && match(n) {
			cl.nodes = append(cl.nodes, i)
		}
	}
	c.classes[g.PlacementKey] = cl
	return cl
}

// matcher checks a node against a placement the way kube-scheduler's
// NodeAffinity and TaintToleration filters do (the same library code):
// nodeSelector and required node affinity on its labels, and every
// NoSchedule or NoExecute taint tolerated.
func matcher(p Placement) func(*Node) bool {
	affinity := nodeaffinity.NewRequiredNodeAffinity(p.NodeSelector, p.Affinity)
	hard := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	return func(n *Node) bool {
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}}
		if ok, err := affinity.Match(obj); err != nil || !ok {
			return false
		}
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Taints, p.Tolerations, hard, true)
		return !untolerated
	}
}

// take puts one pod of req on the first node of cl with room, and returns
// its index (-1: none). scan ignores the cursor (free capacity may have
// grown, in a preemption trial).
func (c *cluster) take(cl *class, req job.Vector, scan bool) int {
	start := 0
	if !scan {
		start = cl.cursor[req]
	}
	for k := start; k < len(cl.nodes); k++ {
		i := cl.nodes[k]
		if req.LessEq(c.nodes[i].free) {
			if !scan {
				cl.cursor[req] = k
			}
			c.nodes[i].free = c.nodes[i].free.Sub(req)
			c.free = c.free.Sub(req)
			return i
		}
	}
	if !scan {
		cl.cursor[req] = len(cl.nodes)
	}
	return -1
}

// give returns what take took.
func (c *cluster) give(ps []placed) {
	for _, p := range ps {
		c.nodes[p.node].free = c.nodes[p.node].free.Add(p.req)
		c.free = c.free.Add(p.req)
	}
}

// release frees capacity held on a node by name (a preemption victim's
// pods); it returns what to give back to undo it.
func (c *cluster) release(onNodes map[string]job.Vector) []placed {
	var undo []placed
	if c == nil {
		return nil // the victim's cluster has no nodes in the snapshot
	}
	for name, v := range onNodes {
		i, ok := c.byName[name]
		if !ok || c.nodes[i].node.Unschedulable {
			continue
		}
		c.nodes[i].free = c.nodes[i].free.Add(v)
		c.free = c.free.Add(v)
		undo = append(undo, placed{node: i, req: v.Times(-1)})
	}
	return undo
}

// gang places the pods of groups (each group's Count minus its Placed) all
// or none. On success it returns where they went; on failure nothing is
// taken. scan: see take.
func (c *cluster) gang(groups []Group, scan bool) ([]placed, bool) {
	var total job.Vector
	for i := range groups {
		total = total.Add(groups[i].Request.Times(int64(groups[i].Count - groups[i].Placed)))
	}
	if !total.LessEq(c.free) {
		return nil, false // not even the sum fits: no need to look at nodes
	}
	// A failed gang gives back what it took, which may make room where
	// this gang's takes moved cursors past: put those cursors back.
	type saved struct {
		cl  *class
		req job.Vector
		at  int
		had bool
	}
	var (
		out     []placed
		cursors []saved
	)
	for i := range groups {
		g := &groups[i]
		cl := c.classOf(g)
		if !scan {
			at, had := cl.cursor[g.Request]
			cursors = append(cursors, saved{cl, g.Request, at, had})
		}
		for range g.Count - g.Placed {
			n := c.take(cl, g.Request, scan)
			if n < 0 {
				c.give(out)
				for k := len(cursors) - 1; k >= 0; k-- {
					if s := cursors[k]; s.had {
						s.cl.cursor[s.req] = s.at
					} else {
						delete(s.cl.cursor, s.req)
					}
				}
				return nil, false
			}
			out = append(out, placed{node: n, req: g.Request})
		}
	}
	return out, true
}

// everFits reports whether the groups could be placed on the schedulable
// nodes if nothing else ran there.
func (c *cluster) everFits(groups []Group) bool {
	empty := &cluster{Cluster: c.Cluster, nodes: make([]nodeState, len(c.nodes)), classes: c.classes, free: c.capacity}
	for i, n := range c.nodes {
		empty.nodes[i] = nodeState{node: n.node}
		if !n.node.Unschedulable {
			empty.nodes[i].free = n.node.Allocatable
		}
	}
	_, ok := empty.gang(groups, true)
	return ok
}
