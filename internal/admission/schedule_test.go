package admission

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/internal/job"
)

// want is what a case expects: the admitted jobs (by name), the
// preemptions (victim → preemptor) and, per waiting job, its reason,
// tenant and cluster positions and blocker.
type want struct {
	admit   []string
	preempt map[string]string
	waiting map[string]wantWait
}

type wantWait struct {
	Reason          job.WaitReason
	TenantPosition  int
	ClusterPosition int
	BlockedBy       string
	WaitingFor      []string
}

func TestSchedule(t *testing.T) {
	a, b := tenantOf("a"), tenantOf("b")
	two8 := func() []Node { return []Node{gpuNode("n1", 8), gpuNode("n2", 8)} }
	cases := map[string]struct {
		snap Snapshot
		want want
	}{
		"gang: of two 12-GPU jobs of 3×4 on 2×8 GPUs exactly one runs; the other waits for capacity, first in line": {
			snap: snapshot([]Tenant{a}, two8(),
				makeJob("a", "first", 1).Workers(3, 4).Obj(),
				makeJob("a", "second", 2).Workers(3, 4).Obj()),
			want: want{admit: []string{"first"}, waiting: map[string]wantWait{
				"second": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"gang: two jobs of different tenants never each take half of what both need": {
			snap: snapshot([]Tenant{a, b}, two8(),
				makeJob("a", "x", 1).Workers(2, 6).Obj(),
				makeJob("b", "y", 2).Workers(2, 6).Obj()),
			want: want{admit: []string{"x"}, waiting: map[string]wantWait{
				"y": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"per node: 12 GPUs free in total but no node has room for an 8-GPU pod": {
			snap: snapshot([]Tenant{a}, two8(),
				makeJob("a", "small", 1).Workers(1, 2).Running(t0).On("n1").Obj(),
				makeJob("a", "small2", 2).Workers(1, 2).Running(t0).On("n2").Obj(),
				makeJob("a", "big", 3).Workers(1, 8).Obj()),
			want: want{waiting: map[string]wantWait{
				"big": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"per node, together: 8 GPUs free in total, 4 on each node, and two pods of 3 and one of 2 do not fit": {
			snap: snapshot([]Tenant{a}, two8(),
				makeJob("a", "held", 1).Workers(1, 4).Running(t0).On("n1").Obj(),
				makeJob("a", "held2", 2).Workers(1, 4).Running(t0).On("n2").Obj(),
				makeJob("a", "odd", 3).Workers(2, 3).Group(NewGroup("ps", 1, pod(2), Placement{})).Obj()),
			want: want{waiting: map[string]wantWait{
				"odd": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"cpu", "memory", "nvidia.com/gpu"}},
			}},
		},
		"a pod larger than any node can never be placed: unschedulable, and it holds nobody up": {
			snap: snapshot([]Tenant{a}, two8(),
				makeJob("a", "huge", 1).Workers(1, 12).Obj(),
				makeJob("a", "next", 2).Workers(1, 1).Obj()),
			want: want{admit: []string{"next"}, waiting: map[string]wantWait{
				"huge": {Reason: job.WaitUnschedulable, TenantPosition: 1, ClusterPosition: 1},
			}},
		},
		"quota: the tenant's quota has no room; the earlier job holds the strict queue": {
			snap: snapshot([]Tenant{a.quota(8)}, two8(),
				makeJob("a", "running", 1).Workers(1, 4).Running(t0).On("n1").Obj(),
				makeJob("a", "next", 2).Workers(1, 8).Obj(),
				makeJob("a", "small", 3).Workers(1, 1).Obj()),
			want: want{waiting: map[string]wantWait{
				"next":  {Reason: job.WaitQuota, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
				"small": {Reason: job.WaitOrder, TenantPosition: 2, ClusterPosition: 2, BlockedBy: "next"},
			}},
		},
		"quota: a job larger than the whole quota waits and holds nobody up": {
			snap: snapshot([]Tenant{a.quota(4)}, two8(),
				makeJob("a", "big", 1).Workers(1, 8).Obj(),
				makeJob("a", "small", 2).Workers(1, 1).Obj()),
			want: want{admit: []string{"small"}, waiting: map[string]wantWait{
				"big": {Reason: job.WaitQuota, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"priority orders the tenant's queue before submission": {
			snap: snapshot([]Tenant{a}, two8(),
				makeJob("a", "early", 1).Workers(2, 8).Obj(),
				makeJob("a", "urgent", 2).Workers(2, 8).Priority(100).Obj()),
			want: want{admit: []string{"urgent"}, waiting: map[string]wantWait{
				"early": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"a higher-priority job that does not fit holds lower ones back (strict)": {
			snap: snapshot([]Tenant{a}, two8(),
				makeJob("a", "running", 1).Workers(1, 8).Running(t0).On("n1").Obj(),
				makeJob("a", "urgent", 3).Workers(2, 8).Priority(100).Obj(),
				makeJob("a", "small", 2).Workers(1, 1).Obj()),
			want: want{waiting: map[string]wantWait{
				"urgent": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
				"small":  {Reason: job.WaitPriority, TenantPosition: 2, ClusterPosition: 2, BlockedBy: "urgent"},
			}},
		},
		"strict FIFO: a small job waits behind a big one that does not fit": {
			snap: snapshot([]Tenant{a}, two8(),
				makeJob("a", "running", 1).Workers(1, 8).Running(t0).On("n1").Obj(),
				makeJob("a", "big", 2).Workers(2, 8).Obj(),
				makeJob("a", "small", 3).Workers(1, 1).Obj()),
			want: want{waiting: map[string]wantWait{
				"big":   {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
				"small": {Reason: job.WaitOrder, TenantPosition: 2, ClusterPosition: 2, BlockedBy: "big"},
			}},
		},
		"best-effort FIFO: a small job starts ahead of a big one that does not fit": {
			snap: snapshot([]Tenant{a.bestEffort()}, two8(),
				makeJob("a", "running", 1).Workers(1, 8).Running(t0).On("n1").Obj(),
				makeJob("a", "big", 2).Workers(2, 8).QueuedAt(t0.Add(55*time.Minute)).Obj(),
				makeJob("a", "small", 3).Workers(1, 1).Obj()),
			want: want{admit: []string{"small"}, waiting: map[string]wantWait{
				"big": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"best-effort FIFO: past the starvation age the big job holds the line": {
			snap: snapshot([]Tenant{a.bestEffort()}, two8(),
				makeJob("a", "running", 1).Workers(1, 8).Running(t0).On("n1").Obj(),
				makeJob("a", "big", 2).Workers(2, 8).QueuedAt(t0).Obj(),
				makeJob("a", "small", 3).Workers(1, 1).Obj()),
			want: want{waiting: map[string]wantWait{
				"big":   {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
				"small": {Reason: job.WaitOrder, TenantPosition: 2, ClusterPosition: 2, BlockedBy: "big"},
			}},
		},
		"a job starving for capacity keeps other tenants off what it lacks, not off the rest": {
			snap: snapshot([]Tenant{a, b.bestEffort()}, []Node{gpuNode("n1", 8), {Name: "cpu1", Allocatable: job.Vector{job.CPU: 8000, job.Memory: 32 * gi, job.Pods: 110}}},
				// a's share of the cluster is the smaller: its big job comes first.
				makeJob("a", "running", 1).Workers(1, 1).Running(t0).On("n1").Obj(),
				makeJob("b", "running-b", 1).Workers(1, 2).Running(t0).On("n1").Obj(),
				makeJob("a", "big", 2).Workers(1, 8).QueuedAt(t0).Obj(),
				makeJob("b", "gpu", 3).Workers(1, 2).QueuedAt(t0.Add(59*time.Minute)).Obj(),
				makeJob("b", "cpu", 4).Group(NewGroup("worker", 1, job.Vector{job.CPU: 1000, job.Memory: gi, job.Pods: 1}, Placement{})).Obj()),
			want: want{admit: []string{"cpu"}, waiting: map[string]wantWait{
				"big": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
				"gpu": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 2, WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"fair share: the tenant that uses nothing comes first in the cluster's order": {
			snap: snapshot([]Tenant{a, b}, two8(),
				makeJob("a", "running", 1).Workers(2, 8).Running(t0).On("n1").Obj(),
				makeJob("a", "more", 2).Workers(1, 8).Obj(),
				makeJob("b", "first", 3).Workers(1, 8).Obj()),
			want: want{waiting: map[string]wantWait{
				"first": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
				"more":  {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 2, WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"preemption: the lowest priority, most recently started job of the tenant goes, and only it": {
			snap: snapshot([]Tenant{a.preempting()}, two8(),
				makeJob("a", "old-low", 1).Workers(1, 4).Running(t0).On("n1").Obj(),
				makeJob("a", "new-low", 2).Workers(1, 4).Running(t0.Add(time.Minute)).On("n1").Obj(),
				makeJob("a", "mid", 3).Workers(1, 8).Priority(5).Running(t0).On("n2").Obj(),
				makeJob("a", "urgent", 4).Workers(1, 4).Priority(900).Obj()),
			want: want{preempt: map[string]string{"new-low": "urgent"}, waiting: map[string]wantWait{
				"urgent": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, BlockedBy: "new-low", WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"preemption for quota: victims free the tenant's quota": {
			snap: snapshot([]Tenant{a.quota(8).preempting()}, two8(),
				makeJob("a", "low", 1).Workers(2, 4).Running(t0).On("n1").Obj(),
				makeJob("a", "urgent", 2).Workers(1, 4).Priority(900).Obj()),
			want: want{preempt: map[string]string{"low": "urgent"}, waiting: map[string]wantWait{
				"urgent": {Reason: job.WaitQuota, TenantPosition: 1, ClusterPosition: 1, BlockedBy: "low", WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"preemption never crosses tenants, nor reaches equal priority, nor happens under NEVER": {
			snap: snapshot([]Tenant{a.preempting(), b}, two8(),
				makeJob("b", "other", 1).Workers(2, 8).Running(t0).On("n1").Obj(),
				makeJob("a", "same", 2).Workers(1, 8).Priority(900).Running(t0).On("n2").Obj(),
				makeJob("a", "urgent", 3).Workers(1, 8).Priority(900).Obj(),
				makeJob("b", "urgent-b", 4).Workers(1, 8).Priority(900).Obj()),
			want: want{waiting: map[string]wantWait{
				"urgent":   {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
				"urgent-b": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 2, WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"victims already stopping for a job are enough: no new victim": {
			snap: snapshot([]Tenant{a.preempting()}, two8(),
				makeJob("a", "stopping", 1).Workers(1, 8).Running(t0).On("n1").PreemptingFor(key("a", "urgent")).Obj(),
				makeJob("a", "low", 2).Workers(1, 8).Running(t0).On("n2").Obj(),
				makeJob("a", "urgent", 3).Workers(1, 8).Priority(900).Obj()),
			want: want{waiting: map[string]wantWait{
				"urgent": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, BlockedBy: "stopping", WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"an admitted job's pods that are not on nodes yet keep their room": {
			snap: snapshot([]Tenant{a, b}, two8(),
				makeJob("a", "starting", 1).Workers(2, 8).Running(time.Time{}).Obj(),
				makeJob("b", "next", 2).Workers(1, 1).Obj()),
			want: want{waiting: map[string]wantWait{
				"next": {Reason: job.WaitCapacity, TenantPosition: 1, ClusterPosition: 1, WaitingFor: []string{"nvidia.com/gpu"}},
			}},
		},
		"a job requeued after unschedulable pods backs off and holds nobody up": {
			snap: snapshot([]Tenant{a}, two8(),
				makeJob("a", "backoff", 1).Workers(1, 1).NotBefore(t0.Add(2*time.Hour)).Obj(),
				makeJob("a", "next", 2).Workers(1, 1).Obj()),
			want: want{admit: []string{"next"}, waiting: map[string]wantWait{
				"backoff": {Reason: job.WaitUnschedulable, TenantPosition: 1, ClusterPosition: 1},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Schedule(tc.snap)
			names := map[Key]string{}
			for _, j := range tc.snap.Jobs {
				names[j.Key] = j.Name
			}
			got := want{preempt: map[string]string{}, waiting: map[string]wantWait{}}
			for _, k := range d.Admit {
				got.admit = append(got.admit, names[k])
			}
			for _, p := range d.Preempt {
				got.preempt[p.VictimName] = p.ByName
			}
			for _, w := range d.Waiting {
				got.waiting[names[w.Key]] = wantWait{
					Reason: w.Reason, TenantPosition: w.TenantPosition, ClusterPosition: w.ClusterPosition,
					BlockedBy: w.BlockedBy, WaitingFor: w.WaitingFor,
				}
			}
			if tc.want.preempt == nil {
				tc.want.preempt = map[string]string{}
			}
			for n, w := range tc.want.waiting {
				if w.Reason == "" {
					tc.want.waiting[n] = got.waiting[n] // only present
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("decision (-want +got):\n%s\nwaiting: %+v", diff, d.Waiting)
			}
		})
	}
}

func TestScheduleNodeConstraints(t *testing.T) {
	a := tenantOf("a")
	spot := gpuNode("spot", 8)
	spot.Labels = map[string]string{"pool": "spot", "nvidia.com/gpu.product": "A100"}
	spot.Taints = []corev1.Taint{taint("spot")}
	cordoned := gpuNode("cordoned", 8)
	cordoned.Unschedulable = true
	plain := gpuNode("plain", 8)
	plain.Labels = map[string]string{"nvidia.com/gpu.product": "T4"}
	nodes := []Node{spot, cordoned, plain}

	tolerant := Placement{Tolerations: []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}}
	a100 := Placement{NodeSelector: map[string]string{"nvidia.com/gpu.product": "A100"}, Tolerations: tolerant.Tolerations}
	a100Untolerated := Placement{NodeSelector: map[string]string{"nvidia.com/gpu.product": "A100"}}
	byAffinity := Placement{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}}},
		}}},
	}}, Tolerations: tolerant.Tolerations}

	for name, tc := range map[string]struct {
		placement Placement
		pods      int32
		nodes     []string // where the pods go; nil: not admitted
	}{
		"untolerated taint and cordoned node leave one node":  {Placement{}, 2, []string{"plain", "plain"}},
		"a toleration opens the tainted node too":             {tolerant, 3, []string{"plain", "plain", "spot"}},
		"a GPU type by node label":                            {a100, 2, []string{"spot", "spot"}},
		"a GPU type on a tainted node without the toleration": {a100Untolerated, 1, nil},
		"required node affinity":                              {byAffinity, 2, []string{"spot", "spot"}},
		"GPUs per node: five 4-GPU pods do not fit two nodes": {tolerant, 5, nil},
		"the cordoned node's GPUs do not count":               {Placement{}, 3, nil},
	} {
		t.Run(name, func(t *testing.T) {
			j := makeJob("a", "j", 1).Group(NewGroup("worker", tc.pods, pod(4), tc.placement)).Obj()
			d := Schedule(snapshot([]Tenant{a}, nodes, j))
			if tc.nodes == nil {
				require.Empty(t, d.Admit)
				require.Len(t, d.Waiting, 1)
				return
			}
			require.Equal(t, []Key{j.Key}, d.Admit)
			require.Equal(t, tc.nodes, d.Assigned[j.Key])
		})
	}
}

func TestScheduleCountsOtherPods(t *testing.T) {
	// A non-Trainyard pod already uses 6 of n1's GPUs.
	n1 := gpuNode("n1", 8)
	n1.Used = pod(6)
	j := makeJob("a", "j", 1).Workers(1, 4).Obj()
	d := Schedule(snapshot([]Tenant{tenantOf("a")}, []Node{n1}, j))
	require.Empty(t, d.Admit)
	require.Equal(t, job.WaitCapacity, d.Waiting[0].Reason)
	require.Contains(t, d.Waiting[0].Message, "needs 4 GPUs, 2 free in the cluster")
}

// The message says what is short where: in the cluster, or on one node.
func TestScheduleCapacityMessages(t *testing.T) {
	two8 := []Node{gpuNode("n1", 8), gpuNode("n2", 8)}
	for name, tc := range map[string]struct {
		jobs []Job
		want string
	}{
		"short in the cluster": {
			jobs: []Job{makeJob("a", "run", 1).Workers(2, 6).Running(t0).On("n1").Obj(), makeJob("a", "j", 2).Workers(1, 6).Obj()},
			want: "waiting for capacity: needs 6 GPUs, 4 free in the cluster",
		},
		"a pod larger than any node's free part": {
			jobs: []Job{
				makeJob("a", "s1", 1).Workers(1, 2).Running(t0).On("n1").Obj(),
				makeJob("a", "s2", 2).Workers(1, 2).Running(t0).On("n2").Obj(),
				makeJob("a", "j", 3).Workers(1, 8).Obj(),
			},
			want: "waiting for capacity: a pod needs 8 GPUs, at most 6 free on one node (12 in the cluster)",
		},
		"every pod fits some node, not all together": {
			jobs: []Job{
				makeJob("a", "s1", 1).Workers(1, 4).Running(t0).On("n1").Obj(),
				makeJob("a", "s2", 2).Workers(1, 4).Running(t0).On("n2").Obj(),
				makeJob("a", "j", 3).Workers(2, 3).Group(NewGroup("ps", 1, pod(2), Placement{})).Obj(),
			},
			want: "waiting for capacity: enough is free in the cluster, but not on a set of nodes that holds every pod of the job",
		},
	} {
		t.Run(name, func(t *testing.T) {
			d := Schedule(snapshot([]Tenant{tenantOf("a")}, two8, tc.jobs...))
			w, ok := waitingOf(d, key("a", "j"))
			require.True(t, ok, "j waits")
			require.Equal(t, job.WaitCapacity, w.Reason)
			require.Equal(t, tc.want, w.Message)
		})
	}
}

func TestScheduleEstimates(t *testing.T) {
	one8 := []Node{gpuNode("n1", 8)}
	now := t0.Add(time.Hour)
	for name, tc := range map[string]struct {
		tenant    Tenant
		running   *jobB
		wantStart time.Time
		wantBasis job.ETABasis
	}{
		"from the running job's deadline": {
			tenant:    tenantOf("a"),
			running:   makeJob("a", "running", 1).Workers(1, 8).Running(now.Add(-10 * time.Minute)).Deadline(time.Hour),
			wantStart: now.Add(50 * time.Minute), wantBasis: job.ETADeadlines,
		},
		"from the tenant's recent run times, capped by the deadline": {
			tenant:    tenantOf("a").runTime(20 * time.Minute),
			running:   makeJob("a", "running", 1).Workers(1, 8).Running(now.Add(-10 * time.Minute)).Deadline(time.Hour),
			wantStart: now.Add(10 * time.Minute), wantBasis: job.ETARunTimes,
		},
		"a job running past the typical run time may end any moment": {
			tenant:    tenantOf("a").runTime(5 * time.Minute),
			running:   makeJob("a", "running", 1).Workers(1, 8).Running(now.Add(-10 * time.Minute)),
			wantStart: now, wantBasis: job.ETARunTimes,
		},
	} {
		t.Run(name, func(t *testing.T) {
			d := Schedule(snapshot([]Tenant{tc.tenant}, one8,
				tc.running.On("n1").Obj(),
				makeJob("a", "next", 2).Workers(1, 8).Obj()))
			require.Len(t, d.Waiting, 1)
			w := d.Waiting[0]
			require.NotNil(t, w.EstimatedStart)
			require.Equal(t, tc.wantStart, *w.EstimatedStart)
			require.Equal(t, tc.wantBasis, w.EstimateBasis)
		})
	}

	t.Run("without history or deadline there is no estimate", func(t *testing.T) {
		d := Schedule(snapshot([]Tenant{tenantOf("a")}, one8,
			makeJob("a", "running", 1).Workers(1, 8).Running(now).On("n1").Obj(),
			makeJob("a", "next", 2).Workers(1, 8).Obj()))
		require.Nil(t, d.Waiting[0].EstimatedStart)
	})

	t.Run("the queue plays forward: the second waiting job starts after the first ends", func(t *testing.T) {
		d := Schedule(snapshot([]Tenant{tenantOf("a").runTime(30 * time.Minute)}, one8,
			makeJob("a", "running", 1).Workers(1, 8).Running(now).On("n1").Obj(),
			makeJob("a", "first", 2).Workers(1, 8).Obj(),
			makeJob("a", "second", 3).Workers(1, 8).Obj()))
		require.Len(t, d.Waiting, 2)
		require.Equal(t, now.Add(30*time.Minute), *d.Waiting[0].EstimatedStart)
		require.Equal(t, now.Add(60*time.Minute), *d.Waiting[1].EstimatedStart)
	})

	t.Run("a job in backoff starts at its backoff's end", func(t *testing.T) {
		d := Schedule(snapshot([]Tenant{tenantOf("a")}, one8,
			makeJob("a", "later", 1).Workers(1, 1).NotBefore(now.Add(time.Minute)).Obj()))
		require.Equal(t, now.Add(time.Minute), *d.Waiting[0].EstimatedStart)
		require.Equal(t, job.ETABackoff, d.Waiting[0].EstimateBasis)
	})
}

func TestScheduleIgnoresJobsOfUnknownTenants(t *testing.T) {
	// A pending job of a tenant that is not active is not considered; an
	// admitted one still holds its node.
	d := Schedule(snapshot([]Tenant{tenantOf("a")}, []Node{gpuNode("n1", 8)},
		makeJob("gone", "running", 1).Workers(1, 8).Running(t0).On("n1").Obj(),
		makeJob("gone", "pending", 2).Workers(1, 1).Obj(),
		makeJob("a", "next", 3).Workers(1, 1).Obj()))
	require.Empty(t, d.Admit)
	require.Len(t, d.Waiting, 1)
	require.Equal(t, key("a", "next"), d.Waiting[0].Key)
}

// A tenant whose job found nothing to preempt does not keep another
// tenant's job of the same shape and priority from preempting its own
// lower-priority jobs (the cache of failed trials is per tenant).
func TestPreemptionTrialsPerTenant(t *testing.T) {
	s := snapshot([]Tenant{tenantOf("a").preempting(), tenantOf("b").preempting()}, []Node{gpuNode("n1", 8)},
		makeJob("b", "low", 1).Workers(1, 8).Running(t0).On("n1").Obj(),
		makeJob("a", "ua", 2).Workers(1, 8).Priority(100).Obj(), // first in the cluster order: a uses nothing
		makeJob("b", "ub", 3).Workers(1, 8).Priority(100).Obj())
	s.Config.StarvationAge = 0
	d := Schedule(s)
	require.Len(t, d.Preempt, 1)
	require.Equal(t, "low", d.Preempt[0].VictimName)
	require.Equal(t, "ub", d.Preempt[0].ByName)
}
