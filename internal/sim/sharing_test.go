package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
)

// The end-to-end case on virtual time: tenants a and b of 8
// nominal GPUs each on two 8-GPU nodes. a borrows all 16; b submits an
// 8-GPU job; at once a's most recently started job is preempted, b's job
// runs, and a's runs again when b's ends. Without cohorts a's second job
// waits for quota while b's GPUs sit idle.
func TestCohortReclaim(t *testing.T) {
	tr := Trace{
		Tenants: []admission.Tenant{{ID: "a", Quota: job.Vector{job.GPU: 8}}, {ID: "b", Quota: job.Vector{job.GPU: 8}}},
		Nodes:   gpuNodes(2),
		Jobs: []Job{
			gang("a", "first", 0, 4*time.Hour, 1, 8),
			gang("a", "second", time.Minute, 4*time.Hour, 1, 8),
			gang("b", "b", time.Hour+10*time.Minute, time.Hour, 1, 8),
		},
	}
	wall, err := Run(tr, PolicyScheduler, 48*time.Hour)
	require.NoError(t, err)
	c, err := Run(tr, PolicyCohort, 48*time.Hour)
	require.NoError(t, err)
	require.Equal(t, 3, c.Finished)
	require.Equal(t, 1, c.Preemptions, "a's second job gives b its nominal quota back")
	require.Equal(t, time.Duration(0), c.Sharing.ToNominal.Max, "b gets its nominal share in the cycle it asks")
	// The victim ran 1h09m since its start: the 9 minutes since its last
	// checkpoint (every 30 minutes) are lost, on 8 GPUs.
	require.InDelta(t, 8*9.0/60, c.Sharing.LostGPUHours, 1e-9)
	require.Greater(t, c.GPUUtilization, wall.GPUUtilization, "borrowing uses b's idle GPUs")
	require.Zero(t, wall.Preemptions)
	require.Equal(t, time.Duration(0), c.Wait["b"].Max)
	require.Equal(t, 4*time.Hour-time.Minute, wall.Wait["a"].Max, "without cohorts a's second job waits for its first")
}

// The bursty trace under every policy: every job finishes, cohort sharing
// uses the GPUs better than quota walls, every tenant gets at least its
// entitlement, and the figures are all there.
func TestBurstySmoke(t *testing.T) {
	tr := GenerateBursty(3, 16, 300, 0.8)
	var gpus, nominal int64
	for _, n := range tr.Nodes {
		gpus += n.Allocatable[job.GPU]
	}
	for _, tn := range tr.Tenants {
		nominal += tn.Quota[job.GPU]
	}
	require.InDelta(t, 0.7, float64(nominal)/float64(gpus), 0.03, "nominal quotas add up to 70 %% of the GPUs")
	res := map[string]Result{}
	for _, p := range Policies {
		r, err := Run(tr, p, 90*24*time.Hour)
		require.NoError(t, err)
		require.Zero(t, r.Stuck, p)
		require.Equal(t, 300, r.Finished, p)
		res[p] = r
	}
	for _, p := range []string{PolicyCohort, PolicyCohortHistory} {
		r := res[p]
		require.Greater(t, r.GPUUtilization, res[PolicyScheduler].GPUUtilization, p)
		require.Less(t, r.Makespan, res[PolicyScheduler].Makespan, p)
		require.Less(t, r.Sharing.LostGPUHours, 0.05*r.Sharing.BusyGPUHours, p)
		require.Len(t, r.Sharing.Tenants, len(BurstyTenants))
		for id, ts := range r.Sharing.Tenants {
			require.GreaterOrEqual(t, ts.Ratio, 0.9, "%s under %s received %.2f of its entitlement", id, p, ts.Ratio)
		}
		require.NotEmpty(t, r.Sharing.WaitBySize)
	}
	require.Zero(t, res[PolicyScheduler].Preemptions, "no preemption without cohorts on this trace: no priorities")
}
