package ownership

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/worker/workertest"
)

func newTestKeeper(st *workertest.Store, queued *[]store.JobKey) (*Keeper, *Set) {
	set := NewSet()
	k := NewKeeper(KeeperConfig{
		ID: "w1", Store: st, LeaseTTL: time.Minute, ClaimInterval: time.Second, ClaimBatch: 10, MaxOwned: 100,
		Resync: time.Minute, Queue: func(k store.JobKey) { *queued = append(*queued, k) },
		StashGuard: func() (int64, bool) { return 0, false },
		Claimed:    prometheus.NewCounter(prometheus.CounterOpts{Name: "claimed"}),
		LeasesLost: prometheus.NewCounter(prometheus.CounterOpts{Name: "lost"}),
		Log:        slog.New(slog.DiscardHandler),
	}, set)
	return k, set
}

func addJob(st *workertest.Store, name string) store.JobKey {
	return st.AddJob(job.Job{Tenant: "acme", Name: name, Spec: job.Spec{Replicas: []job.ReplicaSpec{
		{Type: job.Worker, Count: 1, Image: "tf:2"}}}}, true)
}

// Renewals list the owned jobs every listEvery-th time, and the first one
// after a claim that failed (it may have committed, its answer lost).
func TestRenewalListsEverySixthAndAfterAFailedClaim(t *testing.T) {
	ctx := context.Background()
	st := workertest.New()
	var queued []store.JobKey
	k, set := newTestKeeper(st, &queued)
	key := addJob(st, "tj")
	k.Claim(ctx)
	require.Equal(t, []store.JobKey{key}, queued, "claimed and queued")
	var seen []int
	for range listEvery {
		k.Renew(ctx)
		n, _ := k.Listing()
		seen = append(seen, n)
	}
	require.Equal(t, []int{1, 2, 3, 4, 5, 0}, seen, "extended without a list five times, then listed")
	require.Equal(t, 1, st.Calls()["JobLeaseRenew"])

	failed, cancel := context.WithCancel(ctx)
	cancel()
	k.Claim(failed)
	_, next := k.Listing()
	require.True(t, next)
	k.Renew(ctx)
	n, next := k.Listing()
	require.Zero(t, n, "listed")
	require.False(t, next)
	require.Equal(t, 1, set.Count(), "the list keeps what the worker owns")
}

// A lease that ran out makes the next renewal list the jobs: those another
// worker took over meanwhile are dropped, the others kept.
func TestRenewalAfterTheLeaseRanOutDropsTakenJobs(t *testing.T) {
	ctx := context.Background()
	st := workertest.New()
	var queued []store.JobKey
	k, set := newTestKeeper(st, &queued)
	kept, taken := addJob(st, "a"), addJob(st, "b")
	k.Claim(ctx)
	require.Equal(t, 2, set.Count())
	st.ExpireLease("w1")
	st.TakeOver(taken, "w2", time.Minute)
	k.Renew(ctx)
	require.True(t, set.Owns(kept))
	require.False(t, set.Owns(taken), "taken over")
	require.True(t, set.Leased(kept, time.Now(), time.Second), "renewed")
}

// A claim observes each claimed job's time since its admission, for jobs
// whose pods do not exist yet; a job claimed again while it runs (its
// worker lost it) is not a wait for a worker to start it.
func TestClaimObservesTheDelaySinceAdmission(t *testing.T) {
	st := workertest.New()
	st.Now = func() time.Time { return time.Now().Add(-2 * time.Second) }
	var queued []store.JobKey
	k, _ := newTestKeeper(st, &queued)
	delay := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "delay", Buckets: []float64{1, 3, 10}})
	k.cfg.ClaimDelay = delay
	addJob(st, "starting")
	st.AddJob(job.Job{Tenant: "acme", Name: "running", Status: job.Status{State: job.Running},
		Spec: job.Spec{Replicas: []job.ReplicaSpec{{Type: job.Worker, Count: 1, Image: "tf:2"}}}}, true)
	k.Claim(context.Background())
	require.Len(t, queued, 2, "both claimed")
	var m dto.Metric
	require.NoError(t, delay.Write(&m))
	require.Equal(t, uint64(1), m.GetHistogram().GetSampleCount(), "the STARTING job only")
	require.InDelta(t, 2, m.GetHistogram().GetSampleSum(), 0.5, "admitted two seconds before the claim")
}
