package job_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// A job taken back from a lost cluster is QUEUED in no cluster, with a
// restart counted, conditions that say why, and a warning event.
func TestClusterLost(t *testing.T) {
	now := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	start := now.Add(-time.Hour)
	s := job.Status{State: job.Running, Restarts: 2, Requeues: 1, Cluster: "b", StartTime: &start,
		ReplicaCounts: []job.ReplicaCounts{{Type: job.Worker, Active: 3}},
		Replicas:      []job.ReplicaStatus{{Type: job.Worker, Index: 0, Pod: "j-worker-0", Node: "n1", State: job.ReplicaRunning}}}
	got, events := job.ClusterLost(s, "b", 11*time.Minute, now)
	require.Equal(t, job.Queued, got.State)
	require.Equal(t, job.ReasonClusterLost, got.Reason)
	require.EqualValues(t, 3, got.Restarts, "a restart, not a requeue")
	require.EqualValues(t, 1, got.Requeues)
	require.Empty(t, got.Cluster)
	require.Nil(t, got.StartTime)
	require.Nil(t, got.ReplicaCounts)
	require.Equal(t, job.ReplicaPending, got.Replicas[0].State, "it starts again elsewhere")
	require.Empty(t, got.Replicas[0].Node)
	conds := map[string]job.Condition{}
	for _, c := range got.Conditions {
		conds[c.Type] = c
	}
	require.True(t, conds[job.CondClusterLost].Status)
	require.Contains(t, conds[job.CondClusterLost].Message, `cluster "b" has not answered for 11m0s`)
	require.False(t, conds[job.CondAdmitted].Status)
	require.True(t, conds[job.CondQueued].Status)
	require.Len(t, events, 1)
	require.Equal(t, job.ReasonClusterLost, events[0].Reason)
	require.Equal(t, job.Running, s.State, "the input is not changed")
}
