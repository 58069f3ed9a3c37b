//go:build integration

package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// testClock is a settable store clock.
type testClock struct{ t time.Time }

func (c *testClock) Now() time.Time { return c.t }

// The migration's default cluster; register, get, list, update, drain,
// cordon, uncordon and delete, each audited under no tenant; the default
// cluster cannot be deleted, a reporting one only by force.
func TestClusters(t *testing.T) {
	b := setup(t)
	ctx := as(b.ctx, "root")

	def, err := b.store.ClusterGet(b.ctx, cluster.Default)
	require.NoError(t, err, "the migration creates the default cluster")
	require.Equal(t, cluster.Ready, def.State(), "a one-cluster installation changes nothing")
	require.Equal(t, "Default", def.DisplayName)
	require.True(t, def.HeartbeatTime.IsZero())

	eu, err := b.store.ClusterCreate(ctx, cluster.Cluster{Name: "eu-1", DisplayName: "Frankfurt", Labels: map[string]string{"region": "eu"}})
	require.NoError(t, err)
	require.Equal(t, cluster.Unreachable, eu.State(), "unreachable until its agent reports")
	require.Equal(t, cluster.Active, eu.Admin)
	require.Equal(t, map[string]string{"region": "eu"}, eu.Labels)
	require.False(t, eu.CreateTime.IsZero())
	_, err = b.store.ClusterCreate(ctx, cluster.Cluster{Name: "eu-1"})
	require.ErrorIs(t, err, ErrAlreadyExists)
	_, err = b.store.ClusterGet(b.ctx, "nowhere")
	require.ErrorIs(t, err, ErrNotFound)

	list, err := b.store.ClusterList(b.ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []string{"default", "eu-1"}, []string{list[0].Name, list[1].Name})

	up, err := b.store.ClusterUpdate(ctx, "eu-1", func(c *cluster.Cluster) error {
		c.Labels["cloud"] = "gcp"
		c.DisplayName = "Frankfurt 1"
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"region": "eu", "cloud": "gcp"}, up.Labels)
	require.Equal(t, "Frankfurt 1", up.DisplayName)
	_, err = b.store.ClusterUpdate(ctx, "nowhere", func(*cluster.Cluster) error { return nil })
	require.ErrorIs(t, err, ErrNotFound)

	dr, err := b.store.ClusterSetAdmin(ctx, "default", cluster.AdminDraining)
	require.NoError(t, err)
	require.Equal(t, cluster.Draining, dr.State())
	_, err = b.store.ClusterSetAdmin(ctx, "default", cluster.AdminDraining)
	require.NoError(t, err, "draining a draining cluster is a no-op")
	co, err := b.store.ClusterSetAdmin(ctx, "default", cluster.AdminCordoned)
	require.NoError(t, err)
	require.Equal(t, cluster.Cordoned, co.State())
	back, err := b.store.ClusterSetAdmin(ctx, "default", cluster.Active)
	require.NoError(t, err)
	require.Equal(t, cluster.Ready, back.State())
	_, err = b.store.ClusterSetAdmin(ctx, "nowhere", cluster.AdminCordoned)
	require.ErrorIs(t, err, ErrNotFound)

	require.ErrorIs(t, b.store.ClusterDelete(ctx, "default", true), ErrFailedPrecondition, "never the default cluster")
	require.ErrorIs(t, b.store.ClusterDelete(ctx, "nowhere", false), ErrNotFound)

	// A reporting cluster is deleted only by force.
	_, err = b.store.ClusterCreate(ctx, cluster.Cluster{Name: "us-1"})
	require.NoError(t, err)
	_, err = b.store.ClusterHeartbeat(b.ctx, ClusterHeartbeatParams{Cluster: "us-1", Agent: "w1"})
	require.NoError(t, err)
	_, err = b.store.ClusterSweep(b.ctx, time.Minute)
	require.NoError(t, err)
	require.ErrorIs(t, b.store.ClusterDelete(ctx, "us-1", false), ErrFailedPrecondition)
	require.NoError(t, b.store.ClusterDelete(ctx, "us-1", true))
	require.NoError(t, b.store.ClusterDelete(ctx, "eu-1", false), "never heard from: nothing runs there")
	_, err = b.store.ClusterGet(b.ctx, "eu-1")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = b.store.ClusterHeartbeat(b.ctx, ClusterHeartbeatParams{Cluster: "eu-1", Agent: "w1"})
	require.ErrorIs(t, err, ErrNotFound, "a heartbeat does not bring a deleted cluster back")

	require.Equal(t, []audit.Action{audit.ClusterCreate, audit.ClusterUpdate, audit.ClusterDrain, audit.ClusterCordon,
		audit.ClusterUncordon, audit.ClusterCreate, audit.ClusterDelete, audit.ClusterDelete},
		actions(t, b, AuditListParams{}))
	recs, _, err := b.store.AuditList(b.ctx, AuditListParams{Action: audit.ClusterUpdate})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, "clusters/eu-1", recs[0].Resource)
	require.Empty(t, recs[0].Tenant)
	require.Contains(t, recs[0].Details, "labels")
}

// Heartbeats write capacity and usage, and the nodes only when their
// digest changes; the sweep flips a silent cluster to UNREACHABLE and back
// when it reports again, never touching a drain; only READY clusters'
// nodes are returned for scheduling.
func TestClusterHeartbeatAndSweep(t *testing.T) {
	b := setup(t)
	clk := &testClock{t: time.Now().UTC().Truncate(time.Second)}
	b.store = New(b.pool, WithClock(clk.Now))
	ctx := as(b.ctx, "root")
	_, err := b.store.ClusterCreate(ctx, cluster.Cluster{Name: "eu-1", Labels: map[string]string{"region": "eu"}})
	require.NoError(t, err)

	gpuNode := cluster.Node{Name: "n1", Labels: map[string]string{"gpu": "a100"},
		Taints:      []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}},
		Allocatable: job.Vector{job.CPU: 64000, job.Memory: 256 << 30, job.GPU: 8, job.Pods: 110},
		Used:        job.Vector{job.CPU: 2000, job.GPU: 2, job.Pods: 2}}
	cordoned := cluster.Node{Name: "n2", Unschedulable: true, Allocatable: job.Vector{job.CPU: 8000, job.Pods: 110}}
	nodes := []cluster.Node{gpuNode, cordoned}
	capacity, usage := cluster.Sum(nodes)
	beat := ClusterHeartbeatParams{Cluster: "eu-1", Agent: "w1", Capacity: capacity, Usage: usage, NodeCount: 2,
		Nodes: nodes, NodesDigest: "d1"}
	wrote, err := b.store.ClusterHeartbeat(b.ctx, beat)
	require.NoError(t, err)
	require.True(t, wrote)
	wrote, err = b.store.ClusterHeartbeat(b.ctx, beat)
	require.NoError(t, err)
	require.False(t, wrote, "the same digest: the nodes are not rewritten")

	got, err := b.store.ClusterGet(b.ctx, "eu-1")
	require.NoError(t, err)
	require.Equal(t, job.Vector{job.CPU: 64000, job.Memory: 256 << 30, job.GPU: 8, job.Pods: 110}, got.Capacity)
	require.Equal(t, job.Vector{job.CPU: 2000, job.GPU: 2, job.Pods: 2}, got.Usage)
	require.Equal(t, 2, got.Nodes)
	require.Equal(t, "w1", got.Agent)
	require.Equal(t, clk.t, got.HeartbeatTime.UTC())
	require.Equal(t, cluster.Unreachable, got.State(), "health is the sweep's to write")

	health, err := b.store.ClusterSweep(b.ctx, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []ClusterHealth{
		{Cluster: "default", State: cluster.Ready},
		{Cluster: "eu-1", State: cluster.Ready, HeartbeatTime: clk.t, Changed: true},
	}, utcHealth(health))

	ready, err := b.store.ClusterNodesReady(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []cluster.Nodes{{Cluster: "eu-1", Labels: map[string]string{"region": "eu"}, Nodes: nodes}}, ready,
		"the default cluster has published no nodes")

	// Drained: not READY, left out of scheduling; a heartbeat keeps the drain.
	_, err = b.store.ClusterSetAdmin(ctx, "eu-1", cluster.AdminDraining)
	require.NoError(t, err)
	_, err = b.store.ClusterHeartbeat(b.ctx, ClusterHeartbeatParams{Cluster: "eu-1", Agent: "w1", NodesDigest: "d2"})
	require.NoError(t, err)
	got, err = b.store.ClusterGet(b.ctx, "eu-1")
	require.NoError(t, err)
	require.Equal(t, cluster.Draining, got.State())
	ready, err = b.store.ClusterNodesReady(b.ctx)
	require.NoError(t, err)
	require.Empty(t, ready)
	_, err = b.store.ClusterSetAdmin(ctx, "eu-1", cluster.Active)
	require.NoError(t, err)
	ready, err = b.store.ClusterNodesReady(b.ctx)
	require.NoError(t, err)
	require.Len(t, ready, 1)
	require.Empty(t, ready[0].Nodes, "the new digest's (empty) nodes replaced the old")

	// Silent past the timeout: UNREACHABLE, the default cluster too (it
	// never reported); the drain it had survives.
	_, err = b.store.ClusterSetAdmin(ctx, "eu-1", cluster.AdminCordoned)
	require.NoError(t, err)
	clk.t = clk.t.Add(61 * time.Second)
	health, err = b.store.ClusterSweep(b.ctx, time.Minute)
	require.NoError(t, err)
	require.Len(t, health, 2)
	require.Equal(t, cluster.Unreachable, health[1].State)
	require.True(t, health[1].Changed)
	ready, err = b.store.ClusterNodesReady(b.ctx)
	require.NoError(t, err)
	require.Empty(t, ready)
	health, err = b.store.ClusterSweep(b.ctx, time.Minute)
	require.NoError(t, err)
	require.False(t, health[1].Changed, "a second sweep changes nothing")

	// Back: reachable again at the next sweep, still cordoned.
	_, err = b.store.ClusterHeartbeat(b.ctx, ClusterHeartbeatParams{Cluster: "eu-1", Agent: "w2"})
	require.NoError(t, err)
	health, err = b.store.ClusterSweep(b.ctx, time.Minute)
	require.NoError(t, err)
	require.Equal(t, cluster.Cordoned, health[1].State)
	require.True(t, health[1].Changed)
	got, err = b.store.ClusterGet(b.ctx, "eu-1")
	require.NoError(t, err)
	require.Equal(t, "w2", got.Agent)
	require.Equal(t, cluster.AdminCordoned, got.Admin)
}

// The default cluster, never heard from, stays reachable for one timeout
// after the migration and is then marked UNREACHABLE like any other.
func TestClusterSweepDefaultGrace(t *testing.T) {
	b := setup(t)
	health, err := b.store.ClusterSweep(b.ctx, time.Hour)
	require.NoError(t, err)
	require.Equal(t, cluster.Ready, health[0].State)
	require.False(t, health[0].Changed)
	clk := &testClock{t: time.Now().Add(2 * time.Hour)}
	b.store = New(b.pool, WithClock(clk.Now))
	health, err = b.store.ClusterSweep(b.ctx, time.Hour)
	require.NoError(t, err)
	require.Equal(t, ClusterHealth{Cluster: "default", State: cluster.Unreachable, Changed: true}, health[0])
}

func utcHealth(hs []ClusterHealth) []ClusterHealth {
	for i := range hs {
		if !hs[i].HeartbeatTime.IsZero() {
			hs[i].HeartbeatTime = hs[i].HeartbeatTime.UTC()
		}
	}
	return hs
}

// A cluster where an admitted job has not finished is deleted only by
// force, even when its agent is silent.
func TestClusterDeleteRefusedWithJobs(t *testing.T) {
	b := setup(t)
	ctx := as(b.ctx, "root")
	_, err := b.store.ClusterCreate(ctx, cluster.Cluster{Name: "eu-1"})
	require.NoError(t, err)
	b.tenantCreate(t, "acme")
	j := b.jobCreate(t, "acme", "train", 1)
	key := JobKey{Tenant: "acme", UID: j.UID}
	lease, ok, err := b.store.SchedulerLeaseAcquire(b.ctx, "s1", time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	res, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: lease, Admit: []JobKey{key},
		Clusters: map[JobKey]string{key: "eu-1"}})
	require.NoError(t, err)
	require.Len(t, res.Admitted, 1)

	err = b.store.ClusterDelete(ctx, "eu-1", false)
	require.ErrorIs(t, err, ErrFailedPrecondition)
	require.ErrorContains(t, err, "1 unfinished jobs are admitted")
	require.NoError(t, b.store.ClusterDelete(ctx, "eu-1", true))
}

// A lost cluster's unfinished jobs go back to the queue once their
// workers' leases have run out: QUEUED, unadmitted, in no cluster, a
// restart counted, the ledger's span closed. A job whose worker still
// holds its lease is left alone; a finished one too. The lost cluster's
// workers then see the moved job as elsewhere (their sweep deletes what is
// left of it there).
func TestClusterRequeueLost(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	_, err := b.store.ClusterCreate(b.ctx, cluster.Cluster{Name: "b", Admin: cluster.Active})
	require.NoError(t, err)
	lost := keyOf(b.jobCreate(t, "a", "lost", 1))
	held := keyOf(b.jobCreate(t, "a", "held", 1))
	here := keyOf(b.jobCreate(t, "a", "here", 1))
	_, err = b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: b.lease(t), Admit: []JobKey{lost, held, here},
		Clusters: map[JobKey]string{lost: "b", held: "b"}})
	require.NoError(t, err)
	inB := New(b.pool, WithCluster("b"))
	got, err := inB.JobClaim(b.ctx, "w-b-dead", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	dead := got[0].Key()
	got, err = inB.JobClaim(b.ctx, "w-b-alive", 1, time.Hour)
	require.NoError(t, err)
	require.Len(t, got, 1)
	alive := got[0].Key()
	b.exec(t, `UPDATE worker_leases SET expires_at = now() - interval '1 s' WHERE worker_id = 'w-b-dead'`)

	moved, err := b.store.ClusterRequeueLost(b.ctx, "sweeper/lost-clusters", "b", 11*time.Minute)
	require.NoError(t, err)
	require.Equal(t, []JobKey{dead}, moved, "only the job whose worker is silent too")
	j, err := b.store.JobLoad(b.ctx, dead.Tenant, dead.UID)
	require.NoError(t, err)
	require.Equal(t, job.Queued, j.Job.Status.State)
	require.Equal(t, job.ReasonClusterLost, j.Job.Status.Reason)
	require.EqualValues(t, 1, j.Job.Status.Restarts)
	require.Empty(t, j.Job.Status.Cluster)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE uid = $1 AND NOT admitted AND cluster = '' AND worker_id IS NULL`, dead.UID))
	require.Zero(t, b.count(t, `SELECT count(*) FROM usage_intervals WHERE job_uid = $1 AND end_time IS NULL`, dead.UID), "its span is closed")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM job_events WHERE job_uid = $1 AND reason = 'ClusterLost'`, dead.UID))

	// Seen from cluster b, the moved job is elsewhere; the held one is not.
	briefs, err := inB.JobListByKeys(b.ctx, []JobKey{dead, alive, here})
	require.NoError(t, err)
	elsewhere := map[JobKey]bool{}
	for _, br := range briefs {
		elsewhere[br.Key] = br.Elsewhere
	}
	require.Equal(t, map[JobKey]bool{dead: true, alive: false, here: true}, elsewhere)

	// Once the other worker is silent too, its job goes the same way; a
	// second pass finds nothing more.
	b.exec(t, `UPDATE worker_leases SET expires_at = now() - interval '1 s' WHERE worker_id = 'w-b-alive'`)
	moved, err = b.store.ClusterRequeueLost(b.ctx, "sweeper/lost-clusters", "b", 12*time.Minute)
	require.NoError(t, err)
	require.Equal(t, []JobKey{alive}, moved)
	moved, err = b.store.ClusterRequeueLost(b.ctx, "sweeper/lost-clusters", "b", 13*time.Minute)
	require.NoError(t, err)
	require.Empty(t, moved)
}

// A tenant's allowed clusters are stored and read back; taking away a
// cluster where its unfinished jobs are admitted is refused, naming the
// cluster and the jobs.
func TestTenantClustersNotTakenFromRunningJobs(t *testing.T) {
	b := setup(t)
	ctx := as(b.ctx, "root")
	_, err := b.store.ClusterCreate(ctx, cluster.Cluster{Name: "eu-1"})
	require.NoError(t, err)
	b.tenantCreate(t, "acme")
	j := b.jobCreate(t, "acme", "train", 1)
	key := JobKey{Tenant: "acme", UID: j.UID}
	lease, ok, err := b.store.SchedulerLeaseAcquire(b.ctx, "s1", time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: lease, Admit: []JobKey{key},
		Clusters: map[JobKey]string{key: "eu-1"}})
	require.NoError(t, err)

	allow := func(clusters ...string) (tenant.Tenant, error) {
		return b.store.TenantUpdate(ctx, "acme", func(t *tenant.Tenant) error { t.Clusters = clusters; return nil })
	}
	got, err := allow("eu-1", "default")
	require.NoError(t, err, "eu-1 stays allowed")
	require.Equal(t, []string{"eu-1", "default"}, got.Clusters)
	_, err = allow("default")
	require.ErrorIs(t, err, ErrFailedPrecondition)
	require.ErrorContains(t, err, `unfinished jobs admitted to cluster "eu-1" (train)`)
	_, err = allow()
	require.NoError(t, err, "every cluster: nothing taken away")
	_, err = allow("default")
	require.ErrorContains(t, err, `cluster "eu-1" (train)`, "from every cluster to one is taking the others away")

}

// An admission wakes the claimers of the cluster each job went to: one
// ChannelJobs payload per tenant and cluster (AdmittedPayload), none per
// job.
func TestAdmissionNotifiesItsCluster(t *testing.T) {
	b := setup(t)
	_, err := b.store.ClusterCreate(as(b.ctx, "root"), cluster.Cluster{Name: "eu-1"})
	require.NoError(t, err)
	b.tenantCreate(t, "acme")
	var keys []JobKey
	for _, name := range []string{"a", "b", "c"} {
		keys = append(keys, JobKey{Tenant: "acme", UID: b.jobCreate(t, "acme", name, 1).UID})
	}
	_, subs, _ := listenerStart(t, b, ChannelJobs)
	lease, ok, err := b.store.SchedulerLeaseAcquire(b.ctx, "s1", time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	res, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: lease, Admit: keys,
		Clusters: map[JobKey]string{keys[0]: "eu-1", keys[1]: "eu-1"}})
	require.NoError(t, err)
	require.Len(t, res.Admitted, 3)
	got := []string{waitFor(t, subs[ChannelJobs], "a payload"), waitFor(t, subs[ChannelJobs], "another")}
	require.ElementsMatch(t, []string{AdmittedPayload("acme", "eu-1"), AdmittedPayload("acme", DefaultCluster)}, got)
	select {
	case p := <-subs[ChannelJobs]:
		t.Fatalf("a third payload: %q", p)
	case <-time.After(200 * time.Millisecond):
	}
}
