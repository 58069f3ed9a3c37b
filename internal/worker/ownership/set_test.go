package ownership

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
	o := NewSet()
	k := store.JobKey{Tenant: "acme", UID: "u1"}
	require.False(t, o.Unstarted(k), "not owned")
	o.Add([]store.JobKey{k}, time.Now().Add(time.Minute))
	require.True(t, o.Unstarted(k), "claimed, not loaded yet")
	o.SetState(k, job.Queued)
	require.True(t, o.Unstarted(k), "admitted, its objects next")
	for _, s := range []job.State{job.Starting, job.Running, job.Succeeded} {
		o.SetState(k, s)
		require.False(t, o.Unstarted(k), s)
	}
	o.SetState(k, job.Queued)
	o.Drop(k)
	require.False(t, o.Unstarted(k), "dropped")
}

// The resync requeues only the jobs no pass has loaded since the last one.
func TestIdleJobsAreTheOnesNotLoadedSince(t *testing.T) {
	o := NewSet()
	t0 := time.Now()
	busy, quiet, fresh := store.JobKey{Tenant: "a", UID: "busy"}, store.JobKey{Tenant: "a", UID: "quiet"}, store.JobKey{Tenant: "a", UID: "fresh"}
	o.Add([]store.JobKey{busy, quiet, fresh}, t0.Add(time.Minute))
	o.Loaded(busy, job.Running, t0.Add(-time.Minute))
	o.Loaded(quiet, job.Running, t0.Add(-10*time.Minute))
	require.ElementsMatch(t, []store.JobKey{quiet, fresh}, o.Idle(t0.Add(-5*time.Minute)),
		"loaded 10 minutes ago, and claimed but never loaded")
	o.Drop(quiet)
	require.ElementsMatch(t, []store.JobKey{fresh}, o.Idle(t0.Add(-5*time.Minute)))
	require.Equal(t, job.Running, o.jobs[busy].state, "a load records the state read")
}
