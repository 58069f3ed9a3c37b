package admission

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// wantClusters is what a multi-cluster case expects: each admitted job's
// cluster and nodes, the preemptions (victim → preemptor), and per
// waiting job its reason and what its message must say.
type wantClusters struct {
	placed  map[string]placedIn
	preempt map[string]string
	waiting map[string]wantWaitMsg
}

type placedIn struct {
	Cluster string
	Nodes   []string
}

type wantWaitMsg struct {
	Reason job.WaitReason
	Says   []string // substrings of the message
}

func TestScheduleClusters(t *testing.T) {
	a, b := tenantOf("a"), tenantOf("b")
	node := func(cluster, name string, gpus int64) Node { return inCluster(cluster, gpuNode(name, gpus)) }
	// Two clusters, each with one node "n1" of 8 GPUs: names repeat.
	twoOf8 := []Node{node("east", "n1", 8), node("west", "n1", 8)}
	regions := []Cluster{
		{Name: "east", Labels: map[string]string{"region": "us-east"}},
		{Name: "west", Labels: map[string]string{"region": "us-west", "cost": "spot"}},
	}
	withClusters := func(s Snapshot, cls ...Cluster) Snapshot { s.Clusters = cls; return s }
	// fresh: no job has waited past the starvation age (none holds the line).
	fresh := func(s Snapshot) Snapshot { s.Config.StarvationAge = 0; return s }

	cases := map[string]struct {
		snap Snapshot
		want wantClusters
	}{
		"jobs spread over two clusters by capacity: best fit by GPUs first, then where there is room": {
			snap: fresh(snapshot([]Tenant{a.bestEffort()}, []Node{node("east", "n1", 8), node("west", "n1", 8), node("west", "n2", 8)},
				makeJob("a", "running", 1).Workers(1, 4).Running(t0).In("east").On("n1").Obj(),
				makeJob("a", "four", 2).Workers(1, 4).Obj(),   // east has 4 free, west 16: east is the best fit
				makeJob("a", "eight", 3).Workers(1, 8).Obj(),  // east is full now: west
				makeJob("a", "twelve", 4).Workers(3, 4).Obj(), // west has 8 left: waits
				makeJob("a", "one", 5).Workers(1, 1).Obj())),  // west's n2 is free
			want: wantClusters{
				placed: map[string]placedIn{
					"four":  {"east", []string{"n1"}},
					"eight": {"west", []string{"n1"}},
					"one":   {"west", []string{"n2"}},
				},
				waiting: map[string]wantWaitMsg{"twelve": {job.WaitCapacity, []string{
					`no cluster can hold all of its pods now; the closest is cluster "west"`,
					`needs 12 GPUs, 8 free in cluster "west"`,
				}}},
			},
		},
		"equal fit by GPUs: the less loaded cluster, then the name": {
			snap: snapshot([]Tenant{a}, []Node{node("a-busy", "n1", 8), node("a-busy", "n2", 8), node("b-small", "n1", 8), node("c-small", "n1", 8)},
				makeJob("a", "running", 1).Workers(1, 8).Running(t0).In("a-busy").On("n1").Obj(),
				// 8 GPUs free in each: a-busy would be 10/16 used, the
				// others 2/8: b-small, by name before c-small.
				makeJob("a", "x", 2).Workers(1, 2).Obj(),
				// a-busy and c-small have 8 free, b-small 6: b-small.
				makeJob("a", "y", 3).Workers(1, 4).Obj(),
				// a-busy and c-small both leave 0 GPUs and are then full
				// in GPUs (16/16, 8/8): the name decides.
				makeJob("a", "z", 4).Workers(1, 8).Obj()),
			want: wantClusters{placed: map[string]placedIn{
				"x": {"b-small", []string{"n1"}},
				"y": {"b-small", []string{"n1"}},
				"z": {"a-busy", []string{"n2"}},
			}},
		},
		"a gang that fits neither cluster alone but their sum waits, never split (free capacity)": {
			snap: snapshot([]Tenant{a, b}, []Node{node("east", "n1", 8), node("east", "n2", 8), node("west", "n1", 8), node("west", "n2", 8)},
				makeJob("b", "held-east", 1).Workers(1, 8).Running(t0).In("east").On("n1").Obj(),
				makeJob("b", "held-west", 2).Workers(1, 8).Running(t0).In("west").On("n2").Obj(),
				makeJob("a", "gang", 3).Workers(2, 8).Obj()),
			want: wantClusters{waiting: map[string]wantWaitMsg{"gang": {job.WaitCapacity, []string{
				"needs 16 GPUs, 8 free in cluster", `clusters "east", "west" have enough free together, but a gang is never split across clusters`,
			}}}},
		},
		"a gang larger than any one cluster, not than their sum, can never start: never split": {
			snap: snapshot([]Tenant{a}, twoOf8,
				makeJob("a", "gang", 1).Workers(2, 8).Obj(),
				makeJob("a", "small", 2).Workers(1, 8).Obj()),
			want: wantClusters{
				placed: map[string]placedIn{"small": {"east", []string{"n1"}}},
				waiting: map[string]wantWaitMsg{"gang": {job.WaitUnschedulable, []string{
					"no cluster has a set of schedulable nodes that can hold all of its pods at once",
					`clusters "east", "west" have the capacity together, but a gang is never split across clusters`,
				}}},
			},
		},
		"a cluster selector and cluster names are honoured, whatever the best fit": {
			snap: fresh(withClusters(snapshot([]Tenant{a.bestEffort()}, []Node{node("east", "n1", 8), node("west", "n1", 8), node("west", "n2", 8)},
				makeJob("a", "running", 1).Workers(1, 6).Running(t0).In("east").On("n1").Obj(),
				makeJob("a", "to-west", 2).Workers(1, 2).Selector(map[string]string{"region": "us-west"}).Obj(),
				makeJob("a", "spot", 3).Workers(1, 8).Selector(map[string]string{"cost": "spot"}).Obj(),
				makeJob("a", "named", 4).Workers(1, 1).OnlyIn("west").Obj(),
				makeJob("a", "both", 5).Workers(1, 2).Selector(map[string]string{"region": "us-west"}).OnlyIn("east").Obj(),
				makeJob("a", "nowhere", 6).Workers(1, 1).Selector(map[string]string{"region": "eu"}).Obj(),
				makeJob("a", "unknown", 7).Workers(1, 1).OnlyIn("mars").Obj(),
				makeJob("a", "east-full", 8).Workers(1, 4).OnlyIn("east").Obj(),
				makeJob("a", "free", 9).Workers(1, 2).Obj()), regions...)),
			want: wantClusters{
				placed: map[string]placedIn{
					"to-west": {"west", []string{"n1"}},
					"spot":    {"west", []string{"n2"}},
					"named":   {"west", []string{"n1"}},
					"free":    {"east", []string{"n1"}}, // the best fit: 2 free in east, 5 in west
				},
				waiting: map[string]wantWaitMsg{
					"both":      {job.WaitUnschedulable, []string{"no cluster matches its cluster selector region=us-west and its clusters east"}},
					"nowhere":   {job.WaitUnschedulable, []string{"no cluster matches its cluster selector region=eu"}},
					"unknown":   {job.WaitUnschedulable, []string{"no cluster matches its clusters mars"}},
					"east-full": {job.WaitCapacity, []string{"needs 4 GPUs, 2 free in cluster \"east\""}},
				},
			},
		},
		"clusters that are not READY take nothing new; what runs there keeps its quota": {
			snap: fresh(withClusters(snapshot([]Tenant{a.quota(16).bestEffort()}, []Node{
				node("draining", "n1", 8), node("cordoned", "n1", 8), node("lost", "n1", 8), node("ready", "n1", 8),
			},
				makeJob("a", "old", 1).Workers(1, 4).Running(t0).In("draining").On("n1").Obj(),
				makeJob("a", "old2", 2).Workers(1, 4).Running(t0).In("lost").On("n1").Obj(),
				makeJob("a", "new", 3).Workers(1, 8).Obj(),
				makeJob("a", "over", 4).Workers(1, 1).Obj(),
				makeJob("a", "pinned", 5).Workers(1, 1).OnlyIn("draining", "cordoned").Obj()),
				Cluster{Name: "draining", State: ClusterDraining}, Cluster{Name: "cordoned", State: ClusterCordoned},
				Cluster{Name: "lost", State: ClusterUnreachable}, Cluster{Name: "ready", State: ClusterReady})),
			want: wantClusters{
				placed: map[string]placedIn{"new": {"ready", []string{"n1"}}},
				waiting: map[string]wantWaitMsg{
					// 4 + 4 running elsewhere + 8 = 16: the quota counts every cluster.
					"over": {job.WaitQuota, []string{"16 of 16 in use"}},
					"pinned": {job.WaitUnschedulable, []string{
						`no READY cluster matches its clusters cordoned, draining: cluster "cordoned" is CORDONED, cluster "draining" is DRAINING`,
					}},
				},
			},
		},
		"a tenant's allowed clusters: its jobs go only there, whatever the fit; others' go anywhere": {
			snap: fresh(withClusters(snapshot([]Tenant{a.bestEffort().allowed("west"), b.allowed("mars")},
				[]Node{node("east", "n1", 8), node("west", "n1", 8)},
				makeJob("a", "running", 1).Workers(1, 6).Running(t0).In("west").On("n1").Obj(),
				// east is empty and the best fit would be west's 2 GPUs
				// either way; a 4-GPU job fits only east: it waits.
				makeJob("a", "small", 2).Workers(1, 2).Obj(),
				makeJob("a", "big", 3).Workers(1, 4).Obj(),
				// Its own names ask for east, which its tenant may not use.
				makeJob("a", "east-only", 4).Workers(1, 1).OnlyIn("east").Obj(),
				// A gang that fits no allowed cluster ever.
				makeJob("a", "huge", 5).Workers(2, 8).Obj(),
				// b may run only in a cluster that is not registered.
				makeJob("b", "lost", 6).Workers(1, 1).Obj()), regions...)),
			want: wantClusters{
				placed: map[string]placedIn{"small": {"west", []string{"n1"}}},
				waiting: map[string]wantWaitMsg{
					"big": {job.WaitCapacity, []string{`needs 4 GPUs, 0 free in cluster "west"`, `its tenant may run jobs only in clusters "west"`}},
					"east-only": {job.WaitUnschedulable, []string{
						"no cluster matches its clusters east and its tenant's allowed clusters west"}},
					"huge": {job.WaitUnschedulable, []string{
						`cluster "west" has no set of schedulable nodes that can hold all of its pods at once`,
						`its tenant may run jobs only in clusters "west"`}},
					"lost": {job.WaitUnschedulable, []string{"no cluster matches its tenant's allowed clusters mars"}},
				},
			},
		},
		"no cluster READY at all: every job waits, saying so": {
			snap: withClusters(snapshot([]Tenant{a}, twoOf8, makeJob("a", "x", 1).Workers(1, 1).Obj()),
				Cluster{Name: "east", State: ClusterUnreachable}, Cluster{Name: "west", State: ClusterCordoned}),
			want: wantClusters{waiting: map[string]wantWaitMsg{"x": {job.WaitUnschedulable, []string{
				`no cluster is READY: cluster "east" is UNREACHABLE, cluster "west" is CORDONED`,
			}}}},
		},
		"node names repeat across clusters: a pod on east's n1 does not fill west's n1": {
			snap: snapshot([]Tenant{a}, twoOf8,
				makeJob("a", "running", 1).Workers(1, 8).Running(t0).In("east").On("n1").Obj(),
				makeJob("a", "next", 2).Workers(1, 8).Obj()),
			want: wantClusters{placed: map[string]placedIn{"next": {"west", []string{"n1"}}}},
		},
		"preemption frees room in the cluster where the preemptor goes, not elsewhere": {
			// Stopping low-east (started last) would free 2 GPUs in east,
			// where b's job holds the rest: useless. low-west frees west.
			snap: snapshot([]Tenant{a.preempting(), b}, twoOf8,
				makeJob("b", "other", 1).Workers(1, 6).Running(t0).In("east").On("n1").Obj(),
				makeJob("a", "low-east", 2).Workers(1, 2).Running(t0.Add(2*time.Minute)).In("east").On("n1").Obj(),
				makeJob("a", "low-west", 3).Workers(1, 8).Running(t0.Add(time.Minute)).In("west").On("n1").Obj(),
				makeJob("a", "urgent", 4).Workers(1, 8).Priority(100).Obj()),
			want: wantClusters{
				preempt: map[string]string{"low-west": "urgent"},
				waiting: map[string]wantWaitMsg{"urgent": {job.WaitCapacity, []string{"preempting low-west"}}},
			},
		},
		"preemption: victims in two clusters do not add up to room in one": {
			snap: snapshot([]Tenant{a.preempting(), b}, twoOf8,
				makeJob("b", "other-east", 1).Workers(1, 4).Running(t0).In("east").On("n1").Obj(),
				makeJob("b", "other-west", 2).Workers(1, 4).Running(t0).In("west").On("n1").Obj(),
				makeJob("a", "low-east", 3).Workers(1, 4).Running(t0).In("east").On("n1").Obj(),
				makeJob("a", "low-west", 4).Workers(1, 4).Running(t0).In("west").On("n1").Obj(),
				makeJob("a", "urgent", 5).Workers(1, 8).Priority(100).Obj()),
			want: wantClusters{waiting: map[string]wantWaitMsg{"urgent": {job.WaitCapacity, []string{
				"no cluster can hold all of its pods now",
			}}}},
		},
		"preemption for quota: a victim in another cluster frees the quota, the room is where the preemptor goes": {
			snap: snapshot([]Tenant{a.quota(8).preempting()}, twoOf8,
				makeJob("a", "low", 1).Workers(1, 8).Running(t0).In("east").On("n1").Obj(),
				makeJob("a", "urgent", 2).Workers(1, 8).Priority(100).Obj()),
			want: wantClusters{
				preempt: map[string]string{"low": "urgent"},
				waiting: map[string]wantWaitMsg{"urgent": {job.WaitQuota, []string{"preempting low"}}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Schedule(tc.snap)
			checkInvariants(t, tc.snap, d)
			names := map[Key]string{}
			for _, j := range tc.snap.Jobs {
				names[j.Key] = j.Name
			}
			got := wantClusters{placed: map[string]placedIn{}, preempt: map[string]string{}, waiting: map[string]wantWaitMsg{}}
			for _, k := range d.Admit {
				got.placed[names[k]] = placedIn{d.Clusters[k], d.Assigned[k]}
			}
			for _, p := range d.Preempt {
				got.preempt[p.VictimName] = p.ByName
			}
			msgs := map[string]string{}
			for _, w := range d.Waiting {
				msgs[names[w.Key]] = w.Message
				got.waiting[names[w.Key]] = wantWaitMsg{Reason: w.Reason}
			}
			want := tc.want
			if want.placed == nil {
				want.placed = map[string]placedIn{}
			}
			if want.preempt == nil {
				want.preempt = map[string]string{}
			}
			// Waiting jobs the case does not name need only be waiting.
			wantWaiting := map[string]wantWaitMsg{}
			for n, w := range got.waiting {
				wantWaiting[n] = w
				if ww, ok := want.waiting[n]; ok {
					wantWaiting[n] = wantWaitMsg{Reason: ww.Reason}
					for _, s := range ww.Says {
						require.Contains(t, msgs[n], s, "message of %s", n)
					}
				}
			}
			for n := range want.waiting {
				if _, ok := got.waiting[n]; !ok {
					wantWaiting[n] = want.waiting[n]
				}
			}
			want.waiting = wantWaiting
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(wantClusters{})); diff != "" {
				t.Errorf("decision (-want +got):\n%s\nwaiting: %q", diff, msgs)
			}
		})
	}
}

// TestScheduleOneClusterUnchanged: naming the one cluster (READY, with
// labels) changes no decision of a one-cluster installation, except that
// Decision.Clusters names it.
func TestScheduleOneClusterUnchanged(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 1))
		s := randomSnapshot(r)
		d := Schedule(s)
		named := s
		named.Clusters = []Cluster{{Name: "", Labels: map[string]string{"region": "here"}, State: ClusterReady}}
		require.Empty(t, cmp.Diff(d, Schedule(named)), "seed %d", seed)
		for _, k := range d.Admit {
			require.Equal(t, "", d.Clusters[k])
		}
	}
}
