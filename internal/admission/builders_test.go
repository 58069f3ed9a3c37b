package admission

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const gi = int64(1) << 30

// gpuNode is a node of n GPUs with room for plenty of pods.
func gpuNode(name string, gpus int64) Node {
	return Node{Name: name, Allocatable: job.Vector{job.CPU: 64000, job.Memory: 512 * gi, job.GPU: gpus, job.Pods: 110}}
}

func tenantOf(id string) Tenant {
	return Tenant{ID: id, Scheduling: tenant.Scheduling{Preemption: tenant.PreemptNever, Queueing: tenant.StrictFIFO}}
}

func (t Tenant) quota(gpus int64) Tenant { t.Quota[job.GPU] = gpus; return t }
func (t Tenant) preempting() Tenant {
	t.Scheduling.Preemption = tenant.PreemptLowerPriority
	return t
}
func (t Tenant) allowed(clusters ...string) Tenant { t.Clusters = clusters; return t }
func (t Tenant) bestEffort() Tenant                { t.Scheduling.Queueing = tenant.BestEffortFIFO; return t }
func (t Tenant) runTime(d time.Duration) Tenant {
	t.RunTime = d
	return t
}

// jobB builds a Job: MakeJob("t", "a", 1).Workers(3, 4).Obj() is a pending
// job of tenant t, submitted first, with 3 worker pods of 4 GPUs each.
type jobB struct{ j Job }

func makeJob(tenantID, name string, seq int64) *jobB {
	return &jobB{j: Job{
		Key: Key{Tenant: tenantID, UID: fmt.Sprintf("uid-%s-%s", tenantID, name)}, Name: name, Seq: seq,
		QueuedAt: t0.Add(time.Duration(seq) * time.Second), GracePeriod: 30 * time.Second,
	}}
}

func pod(gpus int64) job.Vector {
	return job.Vector{job.CPU: 1000, job.Memory: 4 * gi, job.GPU: gpus, job.Pods: 1}
}

func (b *jobB) Workers(n int32, gpus int64) *jobB {
	b.j.Groups = append(b.j.Groups, NewGroup("worker", n, pod(gpus), Placement{}))
	return b
}

func (b *jobB) Group(g Group) *jobB { b.j.Groups = append(b.j.Groups, g); return b }

func (b *jobB) Priority(p int32) *jobB { b.j.Priority = p; return b }

func (b *jobB) QueuedAt(at time.Time) *jobB { b.j.QueuedAt = at; return b }

func (b *jobB) NotBefore(at time.Time) *jobB { b.j.NotBefore = at; return b }

func (b *jobB) Deadline(d time.Duration) *jobB { b.j.MaxRunTime = d; return b }

// Running admits the job, started at start, with every pod on node (the
// caller's nodes must count them in Used: see place).
func (b *jobB) Running(start time.Time) *jobB {
	b.j.Admitted, b.j.StartTime = true, start
	return b
}

// On puts every pod of an admitted job on the named node.
func (b *jobB) On(node string) *jobB {
	b.j.OnNodes = map[string]job.Vector{node: demandOf(b.j.Groups)}
	for i := range b.j.Groups {
		b.j.Groups[i].Placed = b.j.Groups[i].Count
	}
	return b
}

// In says which cluster an admitted job runs in (set it before On).
func (b *jobB) In(cluster string) *jobB { b.j.Cluster = cluster; return b }

// Selector sets the job's cluster selector.
func (b *jobB) Selector(sel map[string]string) *jobB { b.j.ClusterSelector = sel; return b }

// OnlyIn names the clusters the job may run in.
func (b *jobB) OnlyIn(names ...string) *jobB { b.j.Clusters = names; return b }

// inCluster puts a node in a cluster.
func inCluster(cluster string, n Node) Node { n.Cluster = cluster; return n }

func (b *jobB) PreemptingFor(k Key) *jobB { b.j.PreemptingFor = k; return b }

func (b *jobB) Obj() Job { return b.j }

// snapshot builds a Snapshot and charges every admitted job's OnNodes to
// its nodes' Used, as the loop does from the pods it sees.
func snapshot(tenants []Tenant, nodes []Node, jobs ...Job) Snapshot {
	nodes = slices.Clone(nodes)
	byName := map[nodeRef]*Node{}
	for i := range nodes {
		byName[nodeRef{nodes[i].Cluster, nodes[i].Name}] = &nodes[i]
	}
	for _, j := range jobs {
		for n, v := range j.OnNodes {
			node := byName[nodeRef{j.Cluster, n}]
			node.Used = node.Used.Add(v)
		}
	}
	return Snapshot{Now: t0.Add(time.Hour), Tenants: tenants, Nodes: nodes, Jobs: jobs, Config: Config{StarvationAge: 10 * time.Minute}}
}

func key(tenantID, name string) Key {
	return Key{Tenant: tenantID, UID: fmt.Sprintf("uid-%s-%s", tenantID, name)}
}

// waitingOf returns the Waiting entry of a job.
func waitingOf(d Decision, k Key) (Waiting, bool) {
	for _, w := range d.Waiting {
		if w.Key == k {
			return w, true
		}
	}
	return Waiting{}, false
}

func taint(key string) corev1.Taint {
	return corev1.Taint{Key: key, Value: "true", Effect: corev1.TaintEffectNoSchedule}
}
