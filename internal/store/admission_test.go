//go:build integration

package store

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

func TestJobAdmitConcurrentQuota(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	quota := job.Demand{GPU: 4}
	const n = 12
	var mine [2][]WorkerJob
	for i := range n {
		j := b.jobCreate(t, "a", fmt.Sprintf("j-%02d", i), 1)
		mine[i%2] = append(mine[i%2], b.own(t, fmt.Sprintf("w%d", i%2), keyOf(j)))
	}

	admitAll := func() {
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, n)
		for wi := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i, w := range mine[wi] {
					res, err := b.store.JobAdmit(b.ctx, fmt.Sprintf("w%d", wi), "a", w.Job.UID, w.Version, quota)
					if err != nil {
						errs <- err
						return
					}
					mine[wi][i].Version = res.Version
					mine[wi][i].Admitted = res.Admitted
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	admitted := func() int {
		return b.count(t, `SELECT count(*) FROM jobs WHERE admitted AND state NOT IN ('SUCCEEDED','FAILED','CANCELLED')`)
	}
	admitAll()
	require.Equal(t, 4, admitted(), "exactly the quota is admitted, never more")
	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM jobs WHERE admitted AND name <= 'j-03'`),
		"in submission order, whichever worker got there first")

	// Finishing an admitted job frees its share; the next round admits one more.
finish:
	for wi := range 2 {
		for i, w := range mine[wi] {
			if !w.Admitted {
				continue
			}
			st := w.Job.Status
			st.State = job.Succeeded
			_, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: fmt.Sprintf("w%d", wi), Tenant: "a",
				UID: w.Job.UID, Version: w.Version, Status: st})
			require.NoError(t, err)
			mine[wi] = append(mine[wi][:i], mine[wi][i+1:]...)
			break finish
		}
	}
	admitAll()
	require.Equal(t, 4, admitted())

	// Admission is fenced like a save.
	w := mine[0][0]
	_, err := b.store.JobAdmit(b.ctx, "w0", "a", w.Job.UID, w.Version-1, quota)
	require.ErrorIs(t, err, ErrConflict)
	_, err = b.store.JobAdmit(b.ctx, "w1", "a", w.Job.UID, w.Version, quota)
	require.ErrorIs(t, err, ErrLeaseLost)
}

func TestJobAdmitLimits(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	big := b.own(t, "w", keyOf(b.jobCreate(t, "a", "big", 8)))
	small := b.own(t, "w", keyOf(b.jobCreate(t, "a", "small", 1)))

	res, err := b.store.JobAdmit(b.ctx, "w", "a", big.Job.UID, big.Version, job.Demand{GPU: 4})
	require.NoError(t, err)
	require.False(t, res.Admitted, "larger than the whole quota")
	require.Equal(t, big.Version, res.Version, "a refusal changes nothing")

	res, err = b.store.JobAdmit(b.ctx, "w", "a", small.Job.UID, small.Version, job.Demand{GPU: 4, Pods: 2})
	require.NoError(t, err)
	require.True(t, res.Admitted)
	require.Greater(t, res.Version, small.Version)
	again, err := b.store.JobAdmit(b.ctx, "w", "a", small.Job.UID, res.Version, job.Demand{GPU: 1})
	require.NoError(t, err)
	require.True(t, again.Admitted, "an admitted job stays admitted")
	require.Equal(t, res.Version, again.Version)

	// Pods limit: small uses 2 pods of 2.
	res, err = b.store.JobAdmit(b.ctx, "w", "a", big.Job.UID, big.Version, job.Demand{Pods: 2})
	require.NoError(t, err)
	require.False(t, res.Admitted)
	require.Equal(t, job.Demand{GPU: 1, CPUMilli: 1000, MemoryBytes: 1 << 30, Pods: 2}, res.Used)

	// Zero quota: unlimited.
	res, err = b.store.JobAdmit(b.ctx, "w", "a", big.Job.UID, big.Version, job.Demand{})
	require.NoError(t, err)
	require.True(t, res.Admitted)

	_, err = b.store.JobAdmit(b.ctx, "w", "ghost", big.Job.UID, big.Version, job.Demand{})
	require.ErrorIs(t, err, ErrNotFound)
}

// Admission within a tenant is in (priority DESC, seq) order, strictly: a
// job that would fit waits behind an earlier one that does not, and says
// which. A job larger than the whole quota never blocks.
func TestJobAdmitStrictOrder(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a", Quota: tenant.Quota{GPU: 4}})
	require.NoError(t, err)
	quota := job.Demand{GPU: 4}
	run := b.own(t, "w", keyOf(b.jobCreatePrio(t, "a", "run", 2, 0)))
	res, err := b.store.JobAdmit(b.ctx, "w", "a", run.Job.UID, run.Version, quota)
	require.NoError(t, err)
	require.True(t, res.Admitted)

	huge := b.own(t, "w", keyOf(b.jobCreatePrio(t, "a", "huge", 8, 100))) // more than the whole quota
	big := b.own(t, "w", keyOf(b.jobCreatePrio(t, "a", "big", 3, 0)))
	small := b.own(t, "w", keyOf(b.jobCreatePrio(t, "a", "small", 1, 0)))
	urgent := b.own(t, "w", keyOf(b.jobCreatePrio(t, "a", "urgent", 2, 10)))

	admit := func(w WorkerJob) AdmitResult {
		t.Helper()
		cur, err := b.store.JobLoad(b.ctx, "a", w.Job.UID)
		require.NoError(t, err)
		res, err := b.store.JobAdmit(b.ctx, "w", "a", w.Job.UID, cur.Version, quota)
		require.NoError(t, err)
		return res
	}
	// small would fit (2+1 ≤ 4) but big (older) and urgent (higher
	// priority) come first.
	res = admit(small)
	require.False(t, res.Admitted)
	require.Equal(t, "urgent", res.Behind)
	res = admit(big)
	require.False(t, res.Admitted)
	require.Equal(t, "urgent", res.Behind)
	res = admit(huge)
	require.False(t, res.Admitted, "does not fit at all")
	require.Empty(t, res.Behind, "a job that can never fit is not held up by order either")

	// urgent fits (2+2): admitted. Then big is next in line but does not
	// fit (4+3); small stays behind it.
	require.True(t, admit(urgent).Admitted)
	res = admit(big)
	require.False(t, res.Admitted)
	require.Empty(t, res.Behind)
	res = admit(small)
	require.False(t, res.Admitted)
	require.Equal(t, "big", res.Behind)

	// run ends: 2 in use; big (3) does not fit yet; urgent ends: big fits.
	for _, w := range []WorkerJob{run, urgent} {
		cur, err := b.store.JobLoad(b.ctx, "a", w.Job.UID)
		require.NoError(t, err)
		st := cur.Job.Status
		st.State = job.Succeeded
		_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w", Tenant: "a", UID: w.Job.UID, Version: cur.Version, Status: st})
		require.NoError(t, err)
	}
	require.True(t, admit(big).Admitted)
	res = admit(small)
	require.True(t, res.Admitted, "3+1 fits and nothing waits before it")
}

// The end of a job wakes the tenant's next job in line (and only that one),
// with a notification; its admission wakes the one after it.
func TestJobWakeNextChain(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a", Quota: tenant.Quota{GPU: 2}})
	require.NoError(t, err)
	_, subs, _ := listenerStart(t, b, ChannelJobs)
	quota := job.Demand{GPU: 2}
	run := b.own(t, "w", keyOf(b.jobCreate(t, "a", "run", 2)))
	res, err := b.store.JobAdmit(b.ctx, "w", "a", run.Job.UID, run.Version, quota)
	require.NoError(t, err)
	require.True(t, res.Admitted)
	var waiting []WorkerJob
	for _, n := range []string{"q1", "q2", "q3"} {
		w := b.own(t, "w", keyOf(b.jobCreate(t, "a", n, 1)))
		var seen AdmitResult
		res, err := b.store.JobAdmitWait(b.ctx, AdmitParams{WorkerID: "w", Tenant: "a", UID: w.Job.UID,
			Version: w.Version, Quota: quota, Wait: waitFn(time.Hour, &seen)})
		require.NoError(t, err)
		require.True(t, res.Released)
		waiting = append(waiting, w)
	}
	require.Empty(t, b.claimAll(t, "w2"), "everything waits")

	// run ends: q1 (only) is woken and announced.
	cur, err := b.store.JobLoad(b.ctx, "a", run.Job.UID)
	require.NoError(t, err)
	st := cur.Job.Status
	st.State = job.Failed
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w", Tenant: "a", UID: run.Job.UID, Version: cur.Version, Status: st})
	require.NoError(t, err)
	waitPayload(t, subs[ChannelJobs], "a/"+waiting[0].Job.UID)
	require.Equal(t, []string{"q1"}, b.claimAll(t, "w2"))

	// q1's admission wakes q2, whose admission wakes q3.
	for i, w := range waiting {
		cur, err := b.store.JobLoad(b.ctx, "a", w.Job.UID)
		require.NoError(t, err)
		res, err := b.store.JobAdmit(b.ctx, cur.WorkerID, "a", w.Job.UID, cur.Version, quota)
		require.NoError(t, err)
		if i == 2 {
			require.False(t, res.Admitted, "2 of 2 GPUs in use")
			break
		}
		require.True(t, res.Admitted)
		require.Equal(t, []string{waiting[i+1].Job.Name}, b.claimAll(t, "w2"))
	}

	// A quota change (JobWakeNext) wakes a released head; nothing to wake
	// is no error.
	_, err = b.pool.Exec(b.ctx, `UPDATE jobs SET worker_id = NULL, lease_expires_at = NULL,
		claim_after = now() + interval '1 hour' WHERE uid = $1`, waiting[2].Job.UID)
	require.NoError(t, err)
	require.NoError(t, b.store.JobWakeNext(b.ctx, "a"))
	require.Equal(t, []string{"q3"}, b.claimAll(t, "w3"))
	require.NoError(t, b.store.JobWakeNext(b.ctx, "ghost"))
}

// waitPayload waits for a notification with this payload, skipping others.
func waitPayload(t *testing.T, c <-chan string, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-c:
			if got == want {
				return
			}
		case <-timeout:
			require.FailNow(t, "no notification "+want)
		}
	}
}

// Cancelling the head of a tenant's queue wakes the job behind it at once.
func TestJobCancelWakesTheNextInLine(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a", Quota: tenant.Quota{GPU: 2}})
	require.NoError(t, err)
	_, subs, _ := listenerStart(t, b, ChannelJobs)
	quota := job.Demand{GPU: 2}
	run := b.own(t, "w", keyOf(b.jobCreate(t, "a", "run", 2)))
	res, err := b.store.JobAdmit(b.ctx, "w", "a", run.Job.UID, run.Version, quota)
	require.NoError(t, err)
	require.True(t, res.Admitted)
	var waiting []WorkerJob
	for _, n := range []string{"q1", "q2"} {
		w := b.own(t, "w", keyOf(b.jobCreate(t, "a", n, 1)))
		var seen AdmitResult
		res, err := b.store.JobAdmitWait(b.ctx, AdmitParams{WorkerID: "w", Tenant: "a", UID: w.Job.UID,
			Version: w.Version, Quota: quota, Wait: waitFn(time.Hour, &seen)})
		require.NoError(t, err)
		require.True(t, res.Released)
		waiting = append(waiting, w)
	}
	require.Empty(t, b.claimAll(t, "w2"), "both wait")

	_, err = b.store.JobCancel(b.ctx, "a", "q1")
	require.NoError(t, err)
	waitPayload(t, subs[ChannelJobs], "a/"+waiting[1].Job.UID)
	require.Equal(t, []string{"q2"}, b.claimAll(t, "w2"), "q2 is next in line now")
}

func TestJobCounts(t *testing.T) {
	b := setup(t)
	_, err := b.store.TenantCreate(b.ctx, tenant.Tenant{ID: "a", Namespace: "ty-a", Quota: tenant.Quota{GPU: 2}})
	require.NoError(t, err)
	quota := job.Demand{GPU: 2}
	run := b.own(t, "w", keyOf(b.jobCreate(t, "a", "run", 2)))
	res, err := b.store.JobAdmit(b.ctx, "w", "a", run.Job.UID, run.Version, quota)
	require.NoError(t, err)
	require.True(t, res.Admitted)
	st := run.Job.Status
	st.State = job.Running
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w", Tenant: "a", UID: run.Job.UID, Version: res.Version, Status: st})
	require.NoError(t, err)
	w := b.own(t, "w", keyOf(b.jobCreate(t, "a", "waits", 1)))
	var seen AdmitResult
	_, err = b.store.JobAdmitWait(b.ctx, AdmitParams{WorkerID: "w", Tenant: "a", UID: w.Job.UID,
		Version: w.Version, Quota: quota, Wait: waitFn(time.Hour, &seen)})
	require.NoError(t, err)
	b.jobCreate(t, "a", "new", 1)

	counts, waiting, err := b.store.JobCounts(b.ctx)
	require.NoError(t, err)
	require.Equal(t, map[job.State]int64{job.Running: 1, job.Queued: 2}, counts)
	require.EqualValues(t, 1, waiting, "only the released job waits for quota; the new one is not claimed yet")
}
