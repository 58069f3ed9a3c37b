package admission

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// largeSnapshot is a busy installation: nodes of 8 GPUs (a quarter of them
// spot nodes with a taint), tenants with quotas and mixed policies, running
// jobs filling about half of the cluster and pending jobs of typical
// shapes (one GPU, a few workers of four or eight GPUs, CPU-only).
func largeSnapshot(pending, running, tenants, nodes int) Snapshot {
	return largeSnapshotIn(1, pending, running, tenants, nodes)
}

// largeSnapshotIn is largeSnapshot with the nodes in clusters of equal
// size (node names repeat from one cluster to the next), the running jobs
// filling the first half of each; with one cluster it is largeSnapshot's.
func largeSnapshotIn(clusters, pending, running, tenants, nodes int) Snapshot {
	r := rand.New(rand.NewPCG(uint64(pending), 7))
	s := Snapshot{Now: t0.Add(time.Hour), Config: Config{StarvationAge: 30 * time.Minute}}
	for i := range tenants {
		t := Tenant{ID: fmt.Sprintf("tenant-%03d", i), RunTime: time.Duration(10+r.IntN(120)) * time.Minute}
		t.Quota[job.GPU] = int64(8 * (1 + r.IntN(64)))
		if i%3 == 0 {
			t.Scheduling.Preemption = tenant.PreemptLowerPriority
		}
		if i%2 == 0 {
			t.Scheduling.Queueing = tenant.BestEffortFIFO
		}
		s.Tenants = append(s.Tenants, t)
	}
	spot := []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}
	per := nodes / clusters
	clusterName := func(k int) string {
		if clusters == 1 {
			return ""
		}
		return fmt.Sprintf("cluster-%d", k)
	}
	for i := range nodes {
		n := Node{Cluster: clusterName(i / per), Name: fmt.Sprintf("node-%04d", i%per), Allocatable: job.Vector{job.CPU: 96000, job.Memory: 1024 * gi, job.GPU: 8, job.Pods: 110}}
		if i%4 == 0 {
			n.Taints = []corev1.Taint{taint("spot")}
		}
		s.Nodes = append(s.Nodes, n)
	}
	shapes := []struct {
		count int32
		gpu   int64
		spot  bool
	}{{1, 1, false}, {2, 4, false}, {4, 8, true}, {3, 0, false}, {8, 8, false}, {2, 2, true}}
	newJob := func(seq int) *jobB {
		t := s.Tenants[r.IntN(len(s.Tenants))]
		sh := shapes[r.IntN(len(shapes))]
		var p Placement
		if sh.spot {
			p.Tolerations = spot
		}
		b := makeJob(t.ID, fmt.Sprintf("job-%06d", seq), int64(seq)).Priority(int32(r.IntN(4) * 100))
		b.j.QueuedAt = s.Now.Add(-time.Duration(r.IntN(3600)) * time.Second)
		return b.Group(NewGroup("worker", sh.count, job.Vector{job.CPU: 4000, job.Memory: 16 * gi, job.GPU: sh.gpu, job.Pods: 1}, p))
	}
	// Running jobs, every pod on a node, filling the first half of each
	// cluster's nodes; a job that does not fit there any more is left out.
	i, admitted := 0, 0
	for k := range clusters {
		next, end := k*per, k*per+per/2
		for ; admitted < running*(k+1)/clusters && next < end; i++ {
			b := newJob(i).Running(s.Now.Add(-time.Duration(r.IntN(3600)) * time.Second)).Deadline(4 * time.Hour)
			b.j.Cluster = clusterName(k)
			g := &b.j.Groups[0]
			b.j.OnNodes = map[string]job.Vector{}
			for g.Placed < g.Count && next < end {
				n := &s.Nodes[next]
				if !g.Request.LessEq(n.Allocatable.Sub(n.Used)) {
					next++
					continue
				}
				n.Used = n.Used.Add(g.Request)
				b.j.OnNodes[n.Name] = b.j.OnNodes[n.Name].Add(g.Request)
				g.Placed++
			}
			if g.Placed < g.Count {
				for name, v := range b.j.OnNodes {
					for x := k * per; x < end; x++ {
						if s.Nodes[x].Name == name {
							s.Nodes[x].Used = s.Nodes[x].Used.Sub(v)
						}
					}
				}
				break
			}
			s.Jobs = append(s.Jobs, b.Obj())
			admitted++
		}
	}
	running = max(running, i)
	for i := range pending {
		s.Jobs = append(s.Jobs, newJob(running+1+i).Obj())
	}
	return s
}

// BenchmarkSchedule is one cycle at the size the issue names: 10,000
// pending jobs, 1,000 running, 100 tenants, 1,000 nodes.
func BenchmarkSchedule(b *testing.B) {
	s := largeSnapshot(10_000, 1_000, 100, 1_000)
	b.ReportAllocs()
	b.ResetTimer()
	var d Decision
	for b.Loop() {
		d = Schedule(s)
	}
	b.ReportMetric(float64(len(d.Admit)), "admitted")
	b.ReportMetric(float64(len(d.Waiting)), "waiting")
}

// BenchmarkScheduleSweep shows how a cycle's cost grows with the pending
// jobs, the rest fixed: it should grow linearly.
func BenchmarkScheduleSweep(b *testing.B) {
	for _, pending := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			s := largeSnapshot(pending, 1_000, 100, 1_000)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				Schedule(s)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pending), "ns/pending-job")
		})
	}
}

// BenchmarkScheduleClusters is BenchmarkSchedule's installation (10,000
// pending jobs, 1,000 running, 100 tenants, 1,000 nodes) as one cluster
// and as 5 clusters of 200 nodes: every gang is placed whole in one
// cluster, the best fit first (the target: under 100 ms).
func BenchmarkScheduleClusters(b *testing.B) {
	for _, clusters := range []int{1, 5} {
		b.Run(fmt.Sprintf("clusters=%dx%d", clusters, 1_000/clusters), func(b *testing.B) {
			s := largeSnapshotIn(clusters, 10_000, 1_000, 100, 1_000)
			b.ReportAllocs()
			b.ResetTimer()
			var d Decision
			for b.Loop() {
				d = Schedule(s)
			}
			b.ReportMetric(float64(len(d.Admit)), "admitted")
			b.ReportMetric(float64(len(d.Preempt)), "preempted")
		})
	}
}

// TestScheduleSmoke runs the benchmark's snapshot once at a tenth of its
// size and checks the decision, so that the benchmark does not rot.
func TestScheduleSmoke(t *testing.T) {
	s := largeSnapshot(1_000, 100, 10, 100)
	d := Schedule(s)
	checkInvariants(t, s, d)
	if len(d.Admit) == 0 || len(d.Waiting) == 0 {
		t.Fatalf("a half-full cluster with 1,000 pending jobs admits some and queues some: %d admitted, %d waiting", len(d.Admit), len(d.Waiting))
	}
	s = largeSnapshotIn(5, 1_000, 100, 10, 100)
	d = Schedule(s)
	checkInvariants(t, s, d)
	in := map[string]int{}
	for _, k := range d.Admit {
		in[d.Clusters[k]]++
	}
	if len(in) < 3 || len(d.Waiting) == 0 {
		t.Fatalf("5 half-full clusters admit in most of them and queue some: admitted per cluster %v, %d waiting", in, len(d.Waiting))
	}
}

// cohortSnapshot is largeSnapshot with the tenants in 10 cohorts, half of
// them borrowing (their running jobs use twice their nominal GPUs), some
// with decayed history, weights and fair-share preemption.
func cohortSnapshot(pending, running, tenants, nodes int) Snapshot {
	s := largeSnapshot(pending, running, tenants, nodes)
	use := map[string]int64{}
	for _, j := range s.Jobs {
		if j.Admitted {
			use[j.Key.Tenant] += demandOf(j.Groups)[job.GPU]
		}
	}
	for i := range s.Tenants {
		t := &s.Tenants[i]
		t.Sharing.Cohort = fmt.Sprintf("cohort-%d", i%10)
		u := use[t.ID]
		if i%2 == 0 && u >= 2 {
			t.Quota[job.GPU] = u / 2
		} else {
			t.Quota[job.GPU] = max(t.Quota[job.GPU], u)
		}
		t.Sharing.Weight = float64(1 + i%3)
		t.Sharing.FairSharePreemption = i%4 == 1
		if i%5 == 0 {
			t.Sharing.Usage[job.GPU] = float64(u)
		}
	}
	return s
}

// BenchmarkScheduleCohorts is BenchmarkScheduleSweep with cohorts: 1,000
// running jobs, 1,000 nodes, 100 tenants in 10 cohorts, half of them
// borrowing, and 1,000 / 10,000 / 50,000 pending jobs.
func BenchmarkScheduleCohorts(b *testing.B) {
	for _, pending := range []int{1_000, 10_000, 50_000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			s := cohortSnapshot(pending, 1_000, 100, 1_000)
			b.ReportAllocs()
			b.ResetTimer()
			var d Decision
			for b.Loop() {
				d = Schedule(s)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pending), "ns/pending-job")
			b.ReportMetric(float64(len(d.Admit)), "admitted")
			b.ReportMetric(float64(len(d.Preempt)), "preempted")
		})
	}
}

// TestScheduleCohortsSmoke runs the cohort benchmark's snapshot once, small.
func TestScheduleCohortsSmoke(t *testing.T) {
	s := cohortSnapshot(2_000, 200, 20, 100)
	d := Schedule(s)
	if len(d.Admit) == 0 || len(d.Waiting) == 0 {
		t.Fatalf("admits some and queues some: %d admitted, %d waiting", len(d.Admit), len(d.Waiting))
	}
	checkCohortInvariants(t, s, d)
}

// checkCohortInvariants: after the decision (victims still counted: they
// hold their resources until they stop), each cohort's members use no
// more of its pool than it lends, in GPUs, counting only what they use
// beyond their protected part; every cross-tenant victim's tenant used
// more than its nominal quota; admissions never make a tenant that was
// within its nominal quota the victim of another.
func checkCohortInvariants(t *testing.T, s Snapshot, d Decision) {
	t.Helper()
	tenants := map[string]Tenant{}
	for _, tn := range s.Tenants {
		tenants[tn.ID] = tn
	}
	used := map[string]int64{}
	byKey := map[Key]Job{}
	for _, j := range s.Jobs {
		byKey[j.Key] = j
		if j.Admitted {
			used[j.Key.Tenant] += demandOf(j.Groups)[job.GPU]
		}
	}
	before := maps.Clone(used)
	for _, k := range d.Admit {
		used[k.Tenant] += demandOf(byKey[k].Groups)[job.GPU]
	}
	pool, inPool := map[string]int64{}, map[string]int64{}
	for _, tn := range s.Tenants {
		c := tn.Sharing.Cohort
		pool[c] += tn.Quota[job.GPU]
		inPool[c] += used[tn.ID]
	}
	for c := range pool {
		require.LessOrEqual(t, inPool[c], pool[c], "cohort %s uses more GPUs than its members' nominal quotas", c)
	}
	for _, p := range d.Preempt {
		if p.Victim.Tenant != p.By.Tenant {
			v := tenants[p.Victim.Tenant]
			require.Equal(t, v.Sharing.Cohort, tenants[p.By.Tenant].Sharing.Cohort, "reclaim stays within the cohort")
			require.Greater(t, before[p.Victim.Tenant], v.Quota[job.GPU], "victim's tenant borrowed: %s", p.Message)
			require.NotEmpty(t, p.Message)
		}
	}
}
