//go:build integration

package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/cluster"
)

// A remote agent's identity is kept with its cluster, listed for the
// authenticator, changed and removed; a store scoped to a cluster
// (InCluster, what AgentService serves each agent) claims and loads only
// that cluster's jobs: another cluster's job is not found.
func TestAgentScope(t *testing.T) {
	b := setup(t)
	ctx := as(b.ctx, "root")
	id := cluster.AgentIdentity{Issuer: "https://kubernetes.default.svc.cluster.local",
		Subject: "system:serviceaccount:trainyard:trainyard-worker", JWKS: `{"keys":[]}`}
	_, err := b.store.ClusterCreate(ctx, cluster.Cluster{Name: "two", AgentIdentity: id})
	require.NoError(t, err)
	got, err := b.store.ClusterGet(b.ctx, "two")
	require.NoError(t, err)
	require.Equal(t, id, got.AgentIdentity)
	ids, err := b.store.ClusterIdentities(b.ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]cluster.AgentIdentity{"two": id}, ids, "the default cluster has none")
	id.JWKS, id.JWKSURI = "", "https://two.example/openid/v1/jwks"
	_, err = b.store.ClusterUpdate(ctx, "two", func(c *cluster.Cluster) error { c.AgentIdentity = id; return nil })
	require.NoError(t, err)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM audit_records WHERE resource = 'clusters/two' AND details ? 'agentIdentity'`), "registration and change are audited")

	b.tenantCreate(t, "acme")
	inDefault := keyOf(b.jobCreate(t, "acme", "here", 1))
	inTwo := keyOf(b.jobCreate(t, "acme", "there", 1))
	_, err = b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: b.lease(t), Admit: []JobKey{inDefault, inTwo},
		Clusters: map[JobKey]string{inTwo: "two"}})
	require.NoError(t, err)

	two := b.store.InCluster("two")
	_, err = two.JobLoadInCluster(b.ctx, inDefault.Tenant, inDefault.UID)
	require.ErrorIs(t, err, ErrNotFound, "another cluster's job")
	w, err := two.JobLoadInCluster(b.ctx, inTwo.Tenant, inTwo.UID)
	require.NoError(t, err)
	require.Equal(t, "there", w.Job.Name)
	claimed, err := two.JobClaim(b.ctx, "agent:two:a", 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []JobKey{inTwo}, KeysOf(claimed))
	// The store it was made from is still the default cluster's.
	claimed, err = b.store.JobClaim(b.ctx, "local", 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []JobKey{inDefault}, KeysOf(claimed))
	// An agent's (scoped) id cannot write the local worker's job.
	_, err = two.JobSave(b.ctx, JobSaveParams{WorkerID: "agent:two:local", Tenant: inDefault.Tenant, UID: inDefault.UID,
		Version: claimed[0].Version, Status: claimed[0].Job.Status, Done: true})
	require.ErrorIs(t, err, ErrLeaseLost)

	_, err = b.store.ClusterUpdate(ctx, "two", func(c *cluster.Cluster) error { c.AgentIdentity = cluster.AgentIdentity{}; return nil })
	require.NoError(t, err)
	ids, err = b.store.ClusterIdentities(b.ctx)
	require.NoError(t, err)
	require.Empty(t, ids)
}
