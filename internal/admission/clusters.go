package admission

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"math/bits"
	"slices"
	"strings"

	"github.com/trainyard/trainyard/internal/job"
)

// Many clusters, one decision (doc.go: many clusters). The cycle keeps a
// cluster (nodes.go) per Kubernetes cluster; a job's gang is placed whole
// in one of the READY clusters it allows (where), the best fit first.

// newClusters groups the snapshot's nodes by cluster, each sorted by
// name, with the listed clusters' labels and states; clusters are in name
// order. An empty snapshot still has the default cluster, so that a
// one-cluster installation decides as it always did.
func newClusters(s *Snapshot) []*cluster {
	info := map[string]Cluster{}
	for _, cl := range s.Clusters {
		info[cl.Name] = cl
	}
	nodes := sortedNodes(s.Nodes)
	for _, n := range nodes {
		if _, ok := info[n.Cluster]; !ok {
			info[n.Cluster] = Cluster{Name: n.Cluster}
		}
	}
	if len(info) == 0 {
		info[""] = Cluster{}
	}
	names := make([]string, 0, len(info))
	for name := range info {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]*cluster, 0, len(names))
	for _, name := range names {
		lo, _ := slices.BinarySearchFunc(nodes, name, func(n Node, name string) int { return cmp.Compare(n.Cluster, name) })
		hi := lo
		for hi < len(nodes) && nodes[hi].Cluster == name {
			hi++
		}
		out = append(out, newCluster(info[name], nodes[lo:hi:hi]))
	}
	return out
}

// where is the set of clusters a job may run in: the READY ones among
// those its cluster selector and names allow. Jobs of equal constraints
// share one.
type where struct {
	// hash tells constraints apart in the cycle's caches by shape (0: none).
	hash uint64
	// clusters are the READY clusters allowed, in name order; matched
	// are all those allowed, whatever their state (for messages).
	clusters, matched []*cluster
	sel               map[string]string
	names             []string
	// tenant are the clusters the job's tenant is allowed (empty: all);
	// excluded says they left out a registered cluster.
	tenant   []string
	excluded bool
}

// of is the key of a gang shape placed within w, for caches that hold
// across clusters (never, ever, noPreempt).
func (w *where) of(shape uint64) uint64 {
	if w.hash == 0 {
		return shape
	}
	return shape ^ bits.RotateLeft64(w.hash, 29)
}

// whereOf returns the clusters j allows: those its tenant is allowed
// (allowed, empty: all) that its selector and names allow.
func (c *cycle) whereOf(j *Job, allowed []string) *where {
	if len(j.ClusterSelector) == 0 && len(j.Clusters) == 0 && len(allowed) == 0 {
		return c.anywhere
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(j.ClusterSelector)) {
		fmt.Fprintf(&b, "%s=%s\x00", k, j.ClusterSelector[k])
	}
	b.WriteByte(1)
	names := compactSorted(j.Clusters)
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(0)
	}
	b.WriteByte(2)
	tenantNames := compactSorted(allowed)
	for _, n := range tenantNames {
		b.WriteString(n)
		b.WriteByte(0)
	}
	key := b.String()
	if w, ok := c.wheres[key]; ok {
		return w
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	w := &where{hash: h.Sum64() | 1, sel: j.ClusterSelector, names: names, tenant: tenantNames}
	for _, cl := range c.clusters {
		if len(tenantNames) > 0 && !slices.Contains(tenantNames, cl.Name) {
			w.excluded = true
			continue
		}
		if allowsCluster(j.ClusterSelector, names, cl) {
			w.matched = append(w.matched, cl)
			if cl.ready {
				w.clusters = append(w.clusters, cl)
			}
		}
	}
	c.wheres[key] = w
	return w
}

func compactSorted(names []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(names)))
}

// tenantNote is what a waiting message adds when the tenant's allowed
// clusters left some out: the job may be waiting for room only there.
func tenantNote(w *where) string {
	if !w.excluded {
		return ""
	}
	return "; its tenant may run jobs only in clusters " + quotedNames(w.tenant)
}

func quotedNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// allowsCluster: cl has every label of sel and, when names are given, is
// one of them.
func allowsCluster(sel map[string]string, names []string, cl *cluster) bool {
	if len(names) > 0 {
		if _, ok := slices.BinarySearch(names, cl.Name); !ok {
			return false
		}
	}
	for k, v := range sel {
		if got, ok := cl.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// byFit orders the clusters a job of demand d may go to, the one to try
// first first: best fit by GPUs (the fewest free GPUs left once it is
// placed), then the least loaded (the smallest largest fraction of any
// resource's allocatable in use once it is placed), then name. A cluster
// that can not hold it is tried and skipped, so the first that takes the
// gang is the best fit of those that can.
func (c *cycle) byFit(cls []*cluster, d job.Vector) []*cluster {
	if len(cls) < 2 {
		return cls
	}
	fits := slices.Grow(c.fits[:0], len(cls))[:len(cls)]
	c.fits = fits
	for i, cl := range cls {
		f := fit{cl: cl, gpus: cl.free[job.GPU] - d[job.GPU]}
		for r, capa := range cl.capacity {
			if capa > 0 {
				f.load = max(f.load, float64(capa-cl.free[r]+d[r])/float64(capa))
			}
		}
		fits[i] = f
	}
	slices.SortFunc(fits, func(a, b fit) int {
		return cmp.Or(cmp.Compare(a.gpus, b.gpus), cmp.Compare(a.load, b.load), cmp.Compare(a.cl.Name, b.cl.Name))
	})
	out := c.fitBuf[:0]
	for _, f := range fits {
		out = append(out, f.cl)
	}
	c.fitBuf = out
	return out
}

// fit is a cluster's place in byFit's order.
type fit struct {
	cl   *cluster
	gpus int64
	load float64
}

// placeShape places a gang (j's groups, or a variant of them) whole in
// one of the clusters j allows, the best fit first (byFit), remembering
// per cluster a shape that did not fit.
func (c *cycle) placeShape(j *jobState, groups []Group, shape uint64) (*cluster, []placed, bool) {
	for _, cl := range c.byFit(j.at.clusters, j.demand) {
		if cl.failed[shape] {
			continue
		}
		if ps, ok := cl.gang(groups, false); ok {
			return cl, ps, true
		}
		cl.failed[shape] = true
	}
	return nil, nil, false
}

// everFitsShape reports, once per shape and set of clusters, whether the
// gang could be placed whole in one of the clusters if nothing else ran.
func (c *cycle) everFitsShape(j *jobState, groups []Group, shape uint64) bool {
	k := j.at.of(shape)
	if c.never[k] {
		return false
	}
	if c.ever[k] {
		return true
	}
	ok := slices.ContainsFunc(j.at.clusters, func(cl *cluster) bool { return cl.everFits(groups) })
	if ok {
		c.ever[k] = true
	} else {
		c.never[k] = true
	}
	return ok
}

// closest is, of the clusters j may run in, the one that lacks least for
// it: the smallest fraction of its demand missing in any resource, then
// the most free GPUs, then name.
func (c *cycle) closest(j *jobState) *cluster {
	var best *cluster
	bestLack, bestGPUs := 0.0, int64(0)
	for _, cl := range j.at.clusters {
		lack := 0.0
		for r, d := range j.demand {
			if d > 0 {
				lack = max(lack, float64(d-cl.free[r])/float64(d))
			}
		}
		if best == nil || lack < bestLack || (lack == bestLack && cl.free[job.GPU] > bestGPUs) {
			best, bestLack, bestGPUs = cl, lack, cl.free[job.GPU]
		}
	}
	return best
}

// clusterWord names a cluster in messages.
func clusterWord(cl *cluster) string { return fmt.Sprintf("cluster %q", cl.Name) }

func clusterNames(cls []*cluster) string {
	names := make([]string, len(cls))
	for i, cl := range cls {
		names[i] = fmt.Sprintf("%q", cl.Name)
	}
	return strings.Join(names, ", ")
}

const msgNeverSplit = "a gang is never split across clusters"

// neverMessage says that no set of nodes can ever hold j's gang; with
// several clusters, in no one of them, and whether they could together.
func (c *cycle) neverMessage(j *jobState) string {
	if !c.multi {
		return msgNeverFits
	}
	cls := j.at.clusters
	msg := "no cluster has a set of schedulable nodes that can hold all of its pods at once (node selectors, affinity, taints, node sizes)"
	if len(cls) == 1 {
		msg = clusterWord(cls[0]) + " has no set of schedulable nodes that can hold all of its pods at once (node selectors, affinity, taints, node sizes)"
	}
	var sum job.Vector
	for _, cl := range cls {
		sum = sum.Add(cl.capacity)
	}
	if len(cls) > 1 && j.demand.LessEq(sum) {
		msg += fmt.Sprintf("; clusters %s have the capacity together, but %s", clusterNames(cls), msgNeverSplit)
	}
	return msg + tenantNote(j.at)
}

// noClusterMessage says why no cluster may take j: none matches its
// constraints, or those that do are not READY.
func (c *cycle) noClusterMessage(j *jobState) string {
	w := j.at
	var want []string
	if len(w.sel) > 0 {
		var sel []string
		for _, k := range slices.Sorted(maps.Keys(w.sel)) {
			sel = append(sel, k+"="+w.sel[k])
		}
		want = append(want, "its cluster selector "+strings.Join(sel, ","))
	}
	if len(w.names) > 0 {
		want = append(want, "its clusters "+strings.Join(w.names, ", "))
	}
	if len(w.tenant) > 0 {
		want = append(want, "its tenant's allowed clusters "+strings.Join(w.tenant, ", "))
	}
	if len(w.matched) == 0 {
		if len(want) == 0 {
			return "no cluster is registered"
		}
		return "no cluster matches " + strings.Join(want, " and ")
	}
	states := make([]string, len(w.matched))
	for i, cl := range w.matched {
		states[i] = fmt.Sprintf("%s is %s", clusterWord(cl), cl.State)
	}
	if len(want) == 0 {
		return "no cluster is READY: " + strings.Join(states, ", ")
	}
	return fmt.Sprintf("no READY cluster matches %s: %s", strings.Join(want, " and "), strings.Join(states, ", "))
}

// readyFree is the free capacity of the READY clusters together.
func (c *cycle) readyFree() job.Vector {
	var free job.Vector
	for _, cl := range c.anywhere.clusters {
		free = free.Add(cl.free)
	}
	return free
}

// clusterOf is the cluster an admitted job runs in (nil: one the
// snapshot has no nodes of).
func (c *cycle) clusterOf(name string) *cluster {
	i, ok := slices.BinarySearchFunc(c.clusters, name, func(cl *cluster, name string) int { return cmp.Compare(cl.Name, name) })
	if !ok {
		return nil
	}
	return c.clusters[i]
}
