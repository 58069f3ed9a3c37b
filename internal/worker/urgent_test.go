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
