//go:build integration

package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// A job's spec.clusterSelector and spec.clusters reach the decision: the
// informer's nodes are the default cluster's, which has no labels and no
// id, so a job that selects a region or names a cluster waits, saying no
// cluster matches, and holds nobody up; a job without constraints runs.
func TestSchedulerClusterConstraints(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a"})
	require.NoError(t, err)
	submit := func(name string, mutate func(*job.Spec)) store.JobKey {
		spec := job.Spec{Replicas: []job.ReplicaSpec{{Type: job.Worker, Count: 1, Image: "tf", Resources: job.Resources{GPU: 1}}}}
		mutate(&spec)
		spec.Default()
		j, _, err := b.store.JobCreate(b.ctx, store.JobCreateParams{Job: job.Job{Tenant: "a", Name: name, Spec: spec}})
		require.NoError(t, err)
		return store.JobKey{Tenant: "a", UID: j.UID}
	}
	eu := submit("eu", func(s *job.Spec) { s.ClusterSelector = map[string]string{"region": "eu"} })
	named := submit("named", func(s *job.Spec) { s.Clusters = []string{"gpu-west"} })
	plain := submit("plain", func(*job.Spec) {})
	b.start(t, "s1")

	require.Eventually(t, func() bool { return b.admitted(t, plain) }, 10*time.Second, 20*time.Millisecond)
	var q map[string]job.QueueInfo
	require.Eventually(t, func() bool {
		q, _, err = b.store.QueueGet(b.ctx, "a")
		require.NoError(t, err)
		return len(q) == 2
	}, 10*time.Second, 20*time.Millisecond)
	require.False(t, b.admitted(t, eu))
	require.False(t, b.admitted(t, named))
	require.Equal(t, job.WaitUnschedulable, q[eu.UID].Reason)
	require.Equal(t, "no cluster matches its cluster selector region=eu", q[eu.UID].Message)
	require.Equal(t, job.WaitUnschedulable, q[named.UID].Reason)
	require.Equal(t, "no cluster matches its clusters gpu-west", q[named.UID].Message)
}
