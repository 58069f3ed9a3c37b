//go:build integration

package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

func TestClaimsAreDisjointAndBounded(t *testing.T) {
	b := setup(t, func(c *Config) { c.MaxOwnedJobs = 3 })
	w2 := b.newWorker(t, "w2", func(c *Config) { c.MaxOwnedJobs = 3 })
	b.tenant(t, "acme", tenant.Quota{})
	var keys []store.JobKey
	for _, n := range []string{"j1", "j2", "j3", "j4", "j5"} {
		keys = append(keys, b.submit(t, "acme", n, spec(replica(job.Worker, 1, job.RestartNever))))
	}
	var wg sync.WaitGroup
	wg.Go(func() { b.w.claim(b.ctx) })
	wg.Go(func() { w2.claim(b.ctx) })
	wg.Wait()
	require.LessOrEqual(t, b.w.own.Count(), 3)
	require.LessOrEqual(t, w2.own.Count(), 3)
	require.Equal(t, 5, b.w.own.Count()+w2.own.Count(), "every job has an owner")
	for _, k := range keys {
		require.NotEqual(t, b.w.own.Owns(k), w2.own.Owns(k), "job %s owned by exactly one worker", k)
	}
}

func TestRenewalKeepsAndDropsJobs(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	k1 := b.submit(t, "acme", "j1", spec(replica(job.Worker, 1, job.RestartNever)))
	k2 := b.submit(t, "acme", "j2", spec(replica(job.Worker, 1, job.RestartNever)))
	b.own(t, k1)
	require.True(t, b.w.own.Owns(k2))

	// This worker pauses past its lease; w2, with room for one job, takes
	// one of the two over.
	expire := func() {
		_, err := b.pool.Exec(b.ctx, `UPDATE worker_leases SET expires_at = now() - interval '1 second' WHERE worker_id = $1`, b.w.cfg.ID)
		require.NoError(t, err)
	}
	expire()
	w2 := b.buildWorker(t, "w2", func(c *Config) { c.MaxOwnedJobs = 1 })
	w2.claim(b.ctx)
	require.Equal(t, 1, w2.own.Count())
	taken, kept := k1, k2
	if w2.own.Owns(k2) {
		taken, kept = k2, k1
	}

	b.w.renew(b.ctx)
	require.True(t, b.w.own.Owns(kept))
	require.False(t, b.w.own.Owns(taken))
	require.EqualValues(t, 1, testutil.ToFloat64(b.w.metrics.leasesLost))

	// Paused past its lease again, and nobody took anything: the renewal
	// starts the lease again and the job is still this worker's.
	expire()
	b.w.renew(b.ctx)
	require.True(t, b.w.own.Owns(kept))
	require.EqualValues(t, 1, testutil.ToFloat64(b.w.metrics.leasesLost))
	w2.claim(b.ctx)
	require.False(t, w2.own.Owns(kept), "a live lease is not taken over")

	// When renewals fail, jobs are dropped once their lease has surely expired.
	b.w.own.Add([]store.JobKey{kept}, time.Now().Add(-time.Second))
	require.Len(t, b.w.own.Expire(time.Now()), 1)
	require.Zero(t, b.w.own.Count())
}

// TestRunDispatchesOnNotification runs a whole worker (listener, claimer,
// queue) with polling slowed to a minute: a submitted job gets its pods
// through the NOTIFY path alone. A graceful stop releases its jobs.
func TestRunDispatchesOnNotification(t *testing.T) {
	b := setup(t)
	l, err := store.NewListener(b.url, store.ListenerConfig{})
	require.NoError(t, err)
	lctx, stopListener := context.WithCancel(b.ctx)
	defer stopListener()
	go l.Run(lctx)

	w := b.buildWorker(t, "runner", func(c *Config) {
		c.Listener = l
		c.ClaimInterval = time.Minute
		c.LeaseTTL = 3 * time.Second
	})
	b.tenant(t, "acme", tenant.Quota{})
	ctx, stop := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	require.Eventually(t, func() bool { return l.Listening(store.ChannelJobs) && w.Ready() == nil }, 10*time.Second, 10*time.Millisecond)
	// The first claim ran at start; everything after it comes by NOTIFY.

	key := b.submit(t, "acme", "tj", spec(replica(job.Chief, 1, job.RestartNever), replica(job.Worker, 2, job.RestartNever)))
	require.Eventually(t, func() bool {
		objs, _ := w.pods.GetIndexer().ByIndex(indexJobUID, jobIndexKey("ty-acme", key.UID))
		return len(objs) == 3
	}, 10*time.Second, 5*time.Millisecond, "pods created through the notification path")

	// Its pods run: the informers alone drive the job to RUNNING.
	for _, n := range []string{"tj-chief-0", "tj-worker-0", "tj-worker-1"} {
		pod, err := b.kube.CoreV1().Pods("ty-acme").Get(b.ctx, n, metav1.GetOptions{})
		require.NoError(t, err)
		pod.Status.Phase = corev1.PodRunning
		_, err = b.kube.CoreV1().Pods("ty-acme").UpdateStatus(b.ctx, pod, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return b.load(t, key).Job.Status.State == job.Running }, 10*time.Second, 10*time.Millisecond)

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("worker did not stop")
	}
	wj := b.load(t, key)
	require.Empty(t, wj.WorkerID, "released at shutdown")
	require.True(t, wj.Active)
}

// The worker's queue hands out a job it has claimed and not started before
// a started job's pass queued earlier: a burst of admissions is not served
// behind the pod events of the jobs admitted before it.
func TestUnstartedJobsLeaveTheQueueFirst(t *testing.T) {
	b := setup(t)
	started, claimed := store.JobKey{Tenant: "a", UID: "started"}, store.JobKey{Tenant: "a", UID: "claimed"}
	b.w.own.Add([]store.JobKey{started, claimed}, time.Now().Add(time.Minute))
	b.w.own.Loaded(started, job.Running, time.Now())
	b.w.queue.Add(started)
	b.w.queue.Add(claimed)
	for _, want := range []store.JobKey{claimed, started} {
		k, quit := b.w.queue.Get()
		require.False(t, quit)
		require.Equal(t, want, k)
		b.w.queue.Done(k)
	}
}
