package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// A job is urgent from its claim until its first save moves it past
// QUEUED: its pass is the one that creates its pods.
func TestOwnedJobsAreUrgentUntilStarted(t *testing.T) {
	o := newOwnership()
	k := store.JobKey{Tenant: "acme", UID: "u1"}
	require.False(t, o.unstarted(k), "not owned")
	o.add([]store.JobKey{k}, time.Now().Add(time.Minute))
	require.True(t, o.unstarted(k), "claimed, not loaded yet")
	o.setState(k, job.Queued)
	require.True(t, o.unstarted(k), "admitted, its objects next")
	for _, s := range []job.State{job.Starting, job.Running, job.Succeeded} {
		o.setState(k, s)
		require.False(t, o.unstarted(k), s)
	}
	o.setState(k, job.Queued)
	o.drop(k)
	require.False(t, o.unstarted(k), "dropped")
}

// The resync requeues only the jobs no pass has loaded since the last one.
func TestIdleJobsAreTheOnesNotLoadedSince(t *testing.T) {
	o := newOwnership()
	t0 := time.Now()
	busy, quiet, fresh := store.JobKey{Tenant: "a", UID: "busy"}, store.JobKey{Tenant: "a", UID: "quiet"}, store.JobKey{Tenant: "a", UID: "fresh"}
	o.add([]store.JobKey{busy, quiet, fresh}, t0.Add(time.Minute))
	o.loaded(busy, job.Running, t0.Add(-time.Minute))
	o.loaded(quiet, job.Running, t0.Add(-10*time.Minute))
	require.ElementsMatch(t, []store.JobKey{quiet, fresh}, o.idle(t0.Add(-5*time.Minute)),
		"loaded 10 minutes ago, and claimed but never loaded")
	o.drop(quiet)
	require.ElementsMatch(t, []store.JobKey{fresh}, o.idle(t0.Add(-5*time.Minute)))
	require.Equal(t, job.Running, o.jobs[busy].state, "a load records the state read")
}
