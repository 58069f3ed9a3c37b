package admission

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// randomSnapshot generates a small cluster under load: a few tenants with
// random quotas and policies, nodes with and without GPUs, taints and
// labels, running jobs on them and pending jobs of random shapes.
func randomSnapshot(r *rand.Rand) Snapshot {
	var s Snapshot
	s.Now = t0.Add(time.Hour)
	s.Config.StarvationAge = time.Duration(r.IntN(90)) * time.Minute
	for i := range 1 + r.IntN(4) {
		t := tenantOf(fmt.Sprintf("t%d", i))
		if r.IntN(2) == 0 {
			t.Quota[job.GPU] = int64(r.IntN(24))
		}
		if r.IntN(3) == 0 {
			t.Quota[job.CPU] = int64(1+r.IntN(16)) * 1000
		}
		if r.IntN(2) == 0 {
			t.Scheduling.Preemption = tenant.PreemptLowerPriority
		}
		if r.IntN(2) == 0 {
			t.Scheduling.Queueing = tenant.BestEffortFIFO
		}
		if r.IntN(2) == 0 {
			t.RunTime = time.Duration(1+r.IntN(60)) * time.Minute
		}
		s.Tenants = append(s.Tenants, t)
	}
	for i := range 1 + r.IntN(6) {
		n := gpuNode(fmt.Sprintf("n%d", i), []int64{0, 4, 8}[r.IntN(3)])
		n.Allocatable[job.CPU] = int64(4+r.IntN(12)) * 1000
		n.Allocatable[job.Pods] = int64(2 + r.IntN(8))
		if r.IntN(4) == 0 {
			n.Taints = []corev1.Taint{taint("spot")}
		}
		if r.IntN(3) == 0 {
			n.Labels = map[string]string{"pool": "a"}
		}
		n.Unschedulable = r.IntN(8) == 0
		if r.IntN(4) == 0 {
			n.Used = job.Vector{job.CPU: 500, job.GPU: min(n.Allocatable[job.GPU], 2), job.Pods: 1} // someone else's pod
		}
		s.Nodes = append(s.Nodes, n)
	}
	placements := []Placement{{}, {NodeSelector: map[string]string{"pool": "a"}}, {Tolerations: []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}}}
	for i := range r.IntN(14) {
		t := s.Tenants[r.IntN(len(s.Tenants))]
		b := makeJob(t.ID, fmt.Sprintf("j%d", i), int64(i+1)).Priority(int32(r.IntN(3) * 100))
		b.j.QueuedAt = t0.Add(time.Duration(r.IntN(60)) * time.Minute)
		for g := range 1 + r.IntN(2) {
			req := job.Vector{job.CPU: int64(1+r.IntN(4)) * 500, job.Memory: gi, job.GPU: int64(r.IntN(5)), job.Pods: 1}
			b.Group(NewGroup(fmt.Sprintf("g%d", g), int32(1+r.IntN(3)), req, placements[r.IntN(len(placements))]))
		}
		if r.IntN(2) == 0 {
			b.Running(t0.Add(time.Duration(r.IntN(60)) * time.Minute))
			if r.IntN(2) == 0 {
				b.Deadline(time.Duration(1+r.IntN(120)) * time.Minute)
			}
			// Put what fits on a random node; the rest is not placed yet.
			node := &s.Nodes[r.IntN(len(s.Nodes))]
			for gi := range b.j.Groups {
				g := &b.j.Groups[gi]
				for g.Placed < g.Count && g.Request.LessEq(node.Allocatable.Sub(node.Used)) {
					g.Placed++
					node.Used = node.Used.Add(g.Request)
					if b.j.OnNodes == nil {
						b.j.OnNodes = map[string]job.Vector{}
					}
					b.j.OnNodes[node.Name] = b.j.OnNodes[node.Name].Add(g.Request)
				}
			}
		} else if r.IntN(6) == 0 {
			b.NotBefore(s.Now.Add(time.Minute))
		}
		s.Jobs = append(s.Jobs, b.Obj())
	}
	return s
}

func TestScheduleProperties(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 1))
		s := randomSnapshot(r)
		d := Schedule(s)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkInvariants(t, s, d)

			// Deterministic: the same snapshot in another order decides alike.
			shuffled := s
			shuffled.Jobs, shuffled.Nodes, shuffled.Tenants = slices.Clone(s.Jobs), slices.Clone(s.Nodes), slices.Clone(s.Tenants)
			r.Shuffle(len(shuffled.Jobs), func(i, k int) { shuffled.Jobs[i], shuffled.Jobs[k] = shuffled.Jobs[k], shuffled.Jobs[i] })
			r.Shuffle(len(shuffled.Nodes), func(i, k int) { shuffled.Nodes[i], shuffled.Nodes[k] = shuffled.Nodes[k], shuffled.Nodes[i] })
			r.Shuffle(len(shuffled.Tenants), func(i, k int) { shuffled.Tenants[i], shuffled.Tenants[k] = shuffled.Tenants[k], shuffled.Tenants[i] })
			if diff := cmp.Diff(d, Schedule(shuffled)); diff != "" {
				t.Fatalf("decision depends on input order (-first +shuffled):\n%s", diff)
			}
		})
	}
}

func checkInvariants(t *testing.T, s Snapshot, d Decision) {
	jobs := map[Key]Job{}
	for _, j := range s.Jobs {
		jobs[j.Key] = j
	}
	tenants := map[string]Tenant{}
	for _, tn := range s.Tenants {
		tenants[tn.ID] = tn
	}
	admitted := map[Key]bool{}
	for _, k := range d.Admit {
		admitted[k] = true
	}

	// Quotas: new admissions keep each tenant within its quota.
	used := map[string]job.Vector{}
	for _, j := range s.Jobs {
		if j.Admitted {
			used[j.Key.Tenant] = used[j.Key.Tenant].Add(demandOf(j.Groups))
		}
	}
	added := map[string]job.Vector{}
	for _, k := range d.Admit {
		added[k.Tenant] = added[k.Tenant].Add(demandOf(jobs[k].Groups))
	}
	for id, a := range added {
		require.True(t, used[id].Add(a).Within(tenants[id].Quota), "tenant %s over quota: used %v + admitted %v > %v", id, used[id], a, tenants[id].Quota)
	}

	// Nodes: every pod of an admitted job is placed (no partial gang), on a
	// schedulable node that allows it, all in one READY cluster the job
	// allows, and no node is overcommitted.
	free := map[nodeRef]job.Vector{}
	nodes := map[nodeRef]Node{}
	for _, n := range s.Nodes {
		ref := nodeRef{n.Cluster, n.Name}
		free[ref], nodes[ref] = n.Allocatable.Sub(n.Used), n
	}
	clusters := map[string]Cluster{}
	for _, cl := range s.Clusters {
		clusters[cl.Name] = cl
	}
	taken := map[nodeRef]bool{}
	for _, k := range d.Admit {
		j := jobs[k]
		assigned := d.Assigned[k]
		name, ok := d.Clusters[k]
		require.True(t, ok, "job %s admitted without a cluster", j.Name)
		cl := clusters[name]
		require.Contains(t, []ClusterState{"", ClusterReady}, cl.State, "job %s admitted to cluster %q, %s", j.Name, name, cl.State)
		require.True(t, len(j.Clusters) == 0 || slices.Contains(j.Clusters, name), "job %s admitted to cluster %q, not one it names", j.Name, name)
		for lk, lv := range j.ClusterSelector {
			require.Equal(t, lv, cl.Labels[lk], "job %s admitted to cluster %q, which its selector does not match", j.Name, name)
		}
		var total int32
		for _, g := range j.Groups {
			total += g.Count
		}
		require.Len(t, assigned, int(total), "job %s partly placed", j.Name)
		i := 0
		for _, g := range j.Groups {
			for range g.Count {
				ref := nodeRef{name, assigned[i]}
				n, ok := nodes[ref]
				require.True(t, ok, "job %s on node %s, not one of cluster %q", j.Name, assigned[i], name)
				require.False(t, n.Unschedulable, "job %s on unschedulable node %s", j.Name, n.Name)
				require.True(t, matcher(g.Placement)(&n), "job %s group %s on node %s it does not allow", j.Name, g.Name, n.Name)
				free[ref] = free[ref].Sub(g.Request)
				taken[ref] = true
				i++
			}
		}
	}
	for ref, f := range free {
		if taken[ref] {
			require.True(t, job.Vector{}.LessEq(f), "node %v overcommitted: free %v", ref, f)
		}
	}

	// Order: no job is admitted while an earlier job of its tenant that it
	// could have waited for is held back by order alone; under STRICT_FIFO
	// an earlier job that waits for quota or capacity holds back the rest.
	for _, k := range d.Admit {
		x := jobs[k]
		for _, w := range d.Waiting {
			y := jobs[w.Key]
			if y.Key.Tenant != x.Key.Tenant || !before(y, x) {
				continue
			}
			require.NotContains(t, []job.WaitReason{job.WaitOrder, job.WaitPriority}, w.Reason,
				"%s admitted while %s, ahead of it, waits for %s", x.Name, y.Name, w.Reason)
			holdsNobody := w.Reason == job.WaitUnschedulable || strings.HasPrefix(w.Message, "needs more than the tenant's whole quota")
			if tenants[x.Key.Tenant].Scheduling.WithDefaults().Queueing == tenant.StrictFIFO && !holdsNobody {
				t.Fatalf("strict FIFO: %s admitted past %s (%s: %s)", x.Name, y.Name, w.Reason, w.Message)
			}
		}
	}

	// Preemption: victims are running jobs of the preemptor's tenant, of
	// lower priority, each chosen once.
	seen := map[Key]bool{}
	for _, p := range d.Preempt {
		v, by := jobs[p.Victim], jobs[p.By]
		require.True(t, v.Admitted, "victim %s is not running", v.Name)
		require.Equal(t, by.Key.Tenant, v.Key.Tenant, "victim %s of another tenant than %s", v.Name, by.Name)
		require.Less(t, v.Priority, by.Priority, "victim %s not of lower priority than %s", v.Name, by.Name)
		require.False(t, seen[p.Victim], "victim %s chosen twice", v.Name)
		require.Equal(t, Key{}, v.PreemptingFor, "victim %s was already stopping", v.Name)
		seen[p.Victim] = true
		require.False(t, admitted[p.By], "preemptor %s admitted in the cycle that preempts for it", by.Name)
	}

	// Every pending job of an active tenant is admitted or waiting, once;
	// positions count from 1 without gaps.
	waiting := map[Key]bool{}
	tenantPos := map[string]int{}
	for i, w := range d.Waiting {
		require.False(t, waiting[w.Key])
		waiting[w.Key] = true
		require.Equal(t, i+1, w.ClusterPosition)
		tenantPos[w.Key.Tenant]++
		require.Equal(t, tenantPos[w.Key.Tenant], w.TenantPosition)
		if w.BlockedBy != "" {
			require.True(t, slices.ContainsFunc(s.Jobs, func(j Job) bool { return j.Name == w.BlockedBy && j.Key.Tenant == w.Key.Tenant }),
				"%s blocked by %q, not a job of its tenant", jobs[w.Key].Name, w.BlockedBy)
		}
	}
	for _, j := range s.Jobs {
		if _, ok := tenants[j.Key.Tenant]; ok && !j.Admitted {
			require.True(t, admitted[j.Key] != waiting[j.Key], "pending %s is neither admitted nor waiting, or both", j.Name)
		}
	}
}

// before reports whether a comes before b in their tenant's queue.
func before(a, b Job) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return a.Seq < b.Seq
}

// twoClusters spreads a random snapshot over two clusters, east and west
// (node names repeat: each cluster's nodes are n0, n1, ...), with random
// states and labels, and gives pending jobs random cluster selectors and
// names. Each running job is on one node, so in one cluster.
func twoClusters(r *rand.Rand, s Snapshot) Snapshot {
	names := []string{"east", "west"}
	states := []ClusterState{ClusterReady, ClusterReady, ClusterReady, ClusterDraining, ClusterCordoned, ClusterUnreachable}
	for i, n := range names {
		s.Clusters = append(s.Clusters, Cluster{Name: n, State: states[r.IntN(len(states))],
			Labels: map[string]string{"region": []string{"us", "eu"}[i], "tier": []string{"spot", "on-demand"}[r.IntN(2)]}})
	}
	ref := map[string]nodeRef{}
	s.Nodes = slices.Clone(s.Nodes)
	for i := range s.Nodes {
		n := &s.Nodes[i]
		to := nodeRef{names[i%2], fmt.Sprintf("n%d", i/2)}
		ref[n.Name] = to
		n.Cluster, n.Name = to.cluster, to.name
	}
	s.Jobs = slices.Clone(s.Jobs)
	for i := range s.Jobs {
		j := &s.Jobs[i]
		if j.Admitted {
			on := map[string]job.Vector{}
			for name, v := range j.OnNodes {
				j.Cluster = ref[name].cluster
				on[ref[name].name] = v
			}
			j.OnNodes = on
			continue
		}
		switch r.IntN(6) {
		case 0:
			j.ClusterSelector = map[string]string{"region": "eu"}
		case 1:
			j.ClusterSelector = map[string]string{"tier": "spot"}
		case 2:
			j.Clusters = []string{names[r.IntN(2)]}
		case 3:
			j.ClusterSelector = map[string]string{"region": "ap"}
		}
	}
	return s
}

func TestSchedulePropertiesTwoClusters(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 2))
		s := twoClusters(r, randomSnapshot(r))
		d := Schedule(s)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkInvariants(t, s, d)
			// Preemption: every victim is of the preemptor's tenant; when
			// a capacity preemption is chosen, every new victim in it is
			// in one cluster.
			in := map[Key]string{}
			for _, j := range s.Jobs {
				in[j.Key] = j.Cluster
			}
			for _, p := range d.Preempt {
				if p.Reason == job.WaitCapacity {
					for _, q := range d.Preempt {
						if q.By == p.By && q.Reason == job.WaitCapacity {
							require.Equal(t, in[p.Victim], in[q.Victim], "a capacity preemption for %s across clusters", p.ByName)
						}
					}
				}
			}

			shuffled := s
			shuffled.Jobs, shuffled.Nodes, shuffled.Tenants, shuffled.Clusters = slices.Clone(s.Jobs), slices.Clone(s.Nodes), slices.Clone(s.Tenants), slices.Clone(s.Clusters)
			r.Shuffle(len(shuffled.Jobs), func(i, k int) { shuffled.Jobs[i], shuffled.Jobs[k] = shuffled.Jobs[k], shuffled.Jobs[i] })
			r.Shuffle(len(shuffled.Nodes), func(i, k int) { shuffled.Nodes[i], shuffled.Nodes[k] = shuffled.Nodes[k], shuffled.Nodes[i] })
			r.Shuffle(len(shuffled.Clusters), func(i, k int) {
				shuffled.Clusters[i], shuffled.Clusters[k] = shuffled.Clusters[k], shuffled.Clusters[i]
			})
			if diff := cmp.Diff(d, Schedule(shuffled)); diff != "" {
				t.Fatalf("decision depends on input order (-first +shuffled):\n%s", diff)
			}
		})
	}
}
