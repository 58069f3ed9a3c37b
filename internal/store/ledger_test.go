//go:build integration

package store

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// The usage ledger is exact: a job's GPU-, CPU- and memory-seconds are the
// sum of its admitted spans, each opened and closed by the job's own
// fenced transitions at the store's clock, whatever happens in between
// (preemptions, a worker killed mid-run, a scheduler fail-over), and the
// hours split at UTC hour boundaries add up to the same.

// clock is a settable store clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// ledgerSetup is setup with the store on a clock the test sets.
func ledgerSetup(t *testing.T, start time.Time) (*testBundle, *clock) {
	b := setup(t)
	c := &clock{t: start}
	b.store = New(b.pool, WithClock(c.Now))
	return b, c
}

// at is a time on the tests' day.
func at(hms string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05.999", "2026-03-02 "+hms)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// ledgerSave writes a worker's save of key in state at the clock's time.
func (b *testBundle) ledgerSave(t *testing.T, worker string, key JobKey, state job.State, requeue, done bool) error {
	t.Helper()
	w, err := b.store.JobLoad(b.ctx, key.Tenant, key.UID)
	require.NoError(t, err)
	st := w.Job.Status
	st.State = state
	p := JobSaveParams{WorkerID: worker, Tenant: key.Tenant, UID: key.UID, Version: w.Version, Status: st, Done: done}
	if requeue {
		p.Requeue = &Requeue{}
	}
	_, err = b.store.JobSave(b.ctx, p)
	return err
}

// usageTotal sums the tenant's usage by hour over the tests' day.
func (b *testBundle) usageTotal(t *testing.T, tenantID string) (gpu, cpu, mem float64, hours map[time.Time]float64) {
	t.Helper()
	rows, err := b.store.UsageQuery(b.ctx, UsageQueryParams{Tenant: tenantID, Start: at("00:00:00"), End: at("00:00:00").Add(24 * time.Hour), Step: StepHour})
	require.NoError(t, err)
	hours = map[time.Time]float64{}
	for _, r := range rows {
		gpu, cpu, mem = gpu+r.GPUSeconds, cpu+r.CPUSeconds, mem+r.MemoryByteSeconds
		hours[r.Start] += r.GPUSeconds
	}
	return gpu, cpu, mem, hours
}

// spanSeconds sums a job's closed spans, in seconds.
func (b *testBundle) spanSeconds(t *testing.T, key JobKey) (float64, []UsageSpan) {
	t.Helper()
	spans, err := b.store.UsageSpans(b.ctx, key.Tenant, key.UID)
	require.NoError(t, err)
	var sec float64
	for _, s := range spans {
		require.False(t, s.End.IsZero(), "every span is closed")
		sec += s.End.Sub(s.Start).Seconds()
	}
	return sec, spans
}

// testSpec's job with 2 GPUs a worker: 4 GPUs, 2 cores, 2 GiB, 2 pods.
const (
	jobGPUs  = 4
	jobCores = 2
	jobBytes = 2 << 30
)

func TestLedgerPreemptedTwiceAndResumed(t *testing.T) {
	b, c := ledgerSetup(t, at("10:20:00.5"))
	b.tenantCreate(t, "a")
	key := keyOf(b.jobCreate(t, "a", "train", 2))
	other := b.jobCreate(t, "a", "other", 1)

	spans := [][2]string{{"10:20:00.5", "11:47:13.25"}, {"12:05:00", "12:30:30"}, {"13:00:00", "15:10:07"}}
	for i, sp := range spans {
		c.set(at(sp[0]))
		b.admit(t, key)
		// A replayed admission (a second leader's, a retried commit) opens nothing.
		res, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: b.lease(t), Admit: []JobKey{key}})
		require.NoError(t, err)
		require.Empty(t, res.Admitted)
		b.own(t, "w1", key)
		require.NoError(t, b.ledgerSave(t, "w1", key, job.Running, false, false))
		if i == 1 {
			// The rollup runs mid-way: it moves what is done, the rest stays exact.
			c.set(at("12:40:00"))
			_, err := b.store.UsageRollup(b.ctx)
			require.NoError(t, err)
		}
		c.set(at(sp[1]))
		if i < len(spans)-1 {
			res, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: b.lease(t),
				Preempt: []PreemptWrite{{Victim: key, For: other.UID, Message: "preempted"}}})
			require.NoError(t, err)
			require.Len(t, res.Preempted, 1)
			require.NoError(t, b.ledgerSave(t, "w1", key, job.Queued, true, false))
		} else {
			require.NoError(t, b.ledgerSave(t, "w1", key, job.Succeeded, false, true))
		}
		// Later saves of the requeued or finished job close nothing again.
	}
	want := at("11:47:13.25").Sub(at("10:20:00.5")) + at("12:30:30").Sub(at("12:05:00")) + at("15:10:07").Sub(at("13:00:00"))
	sec, got := b.spanSeconds(t, key)
	require.Len(t, got, 3)
	require.Equal(t, want.Seconds(), sec)
	for i, sp := range spans {
		require.Equal(t, at(sp[0]), got[i].Start)
		require.Equal(t, at(sp[1]), got[i].End)
		require.EqualValues(t, jobGPUs, got[i].Demand[job.GPU])
	}

	check := func(when string) {
		gpu, cpu, mem, hours := b.usageTotal(t, "a")
		require.InDelta(t, jobGPUs*want.Seconds(), gpu, 1e-6, when)
		require.InDelta(t, jobCores*want.Seconds(), cpu, 1e-6, when)
		require.InDelta(t, float64(jobBytes)*want.Seconds(), mem, 1, when)
		require.InDelta(t, jobGPUs*2399.5, hours[at("10:00:00")], 1e-6, "split at the hour: %s", when)
		require.InDelta(t, jobGPUs*(47*60+13.25), hours[at("11:00:00")], 1e-6, when)
		require.InDelta(t, jobGPUs*(25*60+30), hours[at("12:00:00")], 1e-6, when)
		require.InDelta(t, jobGPUs*3600, hours[at("14:00:00")], 1e-6, when)
		require.InDelta(t, jobGPUs*607, hours[at("15:00:00")], 1e-6, when)
	}
	check("before the rollup")
	c.set(at("23:00:00"))
	_, err := b.store.UsageRollup(b.ctx)
	require.NoError(t, err)
	require.Zero(t, b.count(t, `SELECT count(*) FROM usage_intervals WHERE rolled_to < end_time`))
	check("after the rollup")
	_, err = b.store.UsageRollup(b.ctx)
	require.NoError(t, err)
	check("after a second rollup")

	// Budgets read the same ledger: the day's GPU-seconds.
	sh, err := b.store.UsageSharing(b.ctx, at("23:00:00"), []SharingAsk{{Tenant: "a", BudgetFrom: at("00:00:00"), HalfLife: time.Hour}})
	require.NoError(t, err)
	require.InDelta(t, jobGPUs*want.Seconds(), sh["a"].BudgetGPUSeconds, 1e-6)
	require.Equal(t, at("10:00:00"), sh["a"].FirstUse)
	// Eight half-lives after the end of 4 GPUs held for over two hours:
	// about 4 * 2^-8, a little more for the earlier spans.
	require.Greater(t, sh["a"].Decayed[job.GPU], 4*math.Exp2(-8))
	require.Less(t, sh["a"].Decayed[job.GPU], 4*math.Exp2(-7))
}

// A worker killed mid-run: its lease runs out, another worker takes the
// job over and ends it; the dead worker's late save is fenced and closes
// nothing. The span runs from the admission to the successor's end.
func TestLedgerWorkerKilledMidRun(t *testing.T) {
	b, c := ledgerSetup(t, at("09:59:59"))
	b.tenantCreate(t, "a")
	key := keyOf(b.jobCreate(t, "a", "train", 2))
	b.admit(t, key)
	b.own(t, "w1", key)
	c.set(at("10:10:00"))
	require.NoError(t, b.ledgerSave(t, "w1", key, job.Running, false, false))

	// w1 is killed: nothing more from it, and its lease runs out.
	b.exec(t, `UPDATE worker_leases SET expires_at = now() - interval '1 second' WHERE worker_id = 'w1'`)
	c.set(at("10:30:00"))
	claimed, err := b.store.JobClaim(b.ctx, "w2", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.NoError(t, b.ledgerSave(t, "w2", key, job.Running, false, false))
	c.set(at("10:31:00"))
	require.ErrorIs(t, b.ledgerSave(t, "w1", key, job.Failed, false, true), ErrLeaseLost, "the dead worker's save is fenced")
	c.set(at("12:00:00.75"))
	require.NoError(t, b.ledgerSave(t, "w2", key, job.Succeeded, false, true))

	want := at("12:00:00.75").Sub(at("09:59:59"))
	sec, spans := b.spanSeconds(t, key)
	require.Len(t, spans, 1)
	require.Equal(t, want.Seconds(), sec)
	gpu, _, _, hours := b.usageTotal(t, "a")
	require.InDelta(t, jobGPUs*want.Seconds(), gpu, 1e-6)
	require.InDelta(t, jobGPUs*1.0, hours[at("09:00:00")], 1e-6)
	require.InDelta(t, jobGPUs*0.75, hours[at("12:00:00")], 1e-6)
}

// A scheduler fail-over: the old leader's admissions stand and are counted
// once; its commit after losing the lease writes nothing, so the job it
// would have admitted is counted from the new leader's admission.
func TestLedgerSchedulerFailover(t *testing.T) {
	b, c := ledgerSetup(t, at("08:00:00"))
	b.tenantCreate(t, "a")
	first := keyOf(b.jobCreate(t, "a", "first", 2))
	second := keyOf(b.jobCreate(t, "a", "second", 1))

	s1, ok, err := b.store.SchedulerLeaseAcquire(b.ctx, "s1", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: s1, Admit: []JobKey{first}})
	require.NoError(t, err)

	// s1 stalls past its lease; s2 takes over.
	b.exec(t, `UPDATE scheduler_lease SET expires_at = now() - interval '1 second'`)
	s2, ok, err := b.store.SchedulerLeaseAcquire(b.ctx, "s2", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	c.set(at("08:15:00"))
	_, err = b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: s1, Admit: []JobKey{second}})
	require.ErrorIs(t, err, ErrLeaseLost)
	c.set(at("08:20:00"))
	res, err := b.store.SchedulerCommit(b.ctx, SchedulerCommitParams{Lease: s2, Admit: []JobKey{first, second}})
	require.NoError(t, err)
	require.Len(t, res.Admitted, 1, "the first job stays admitted by s1, once")

	c.set(at("09:30:00"))
	for _, k := range []JobKey{first, second} {
		b.own(t, "w1", k)
		require.NoError(t, b.ledgerSave(t, "w1", k, job.Succeeded, false, true))
	}
	s, spans := b.spanSeconds(t, first)
	require.Len(t, spans, 1)
	require.Equal(t, (90 * time.Minute).Seconds(), s)
	s, spans = b.spanSeconds(t, second)
	require.Len(t, spans, 1)
	require.Equal(t, (70 * time.Minute).Seconds(), s)
	gpu, _, _, _ := b.usageTotal(t, "a")
	require.InDelta(t, 4*90*60+2*70*60, gpu, 1e-6)
}

// The usage query groups by creator and label, by day, and keeps tenants
// apart; every tenant's at once for the platform.
func TestUsageQueryGroups(t *testing.T) {
	b, c := ledgerSetup(t, at("10:00:00"))
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	mk := func(tenantID, name, creator, team string) JobKey {
		spec := testSpec()
		j, _, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: tenantID, Name: name, Spec: spec,
			Creator: creator, Labels: map[string]string{"team": team}}})
		require.NoError(t, err)
		return keyOf(j)
	}
	keys := []JobKey{mk("a", "j1", "alice", "vision"), mk("a", "j2", "bob", "vision"), mk("a", "j3", "alice", "nlp"), mk("b", "j4", "carol", "vision")}
	b.admit(t, keys...)
	c.set(at("11:00:00"))
	rows, err := b.store.UsageQuery(b.ctx, UsageQueryParams{Tenant: "a", Start: at("00:00:00"), End: at("00:00:00").Add(24 * time.Hour),
		Step: StepDay, ByCreator: true, ByLabels: []string{"team", "missing"}})
	require.NoError(t, err)
	require.Len(t, rows, 3, "open spans count up to now")
	for _, r := range rows {
		require.Equal(t, "a", r.Tenant)
		require.Equal(t, at("00:00:00"), r.Start)
		require.Equal(t, "", r.Labels[1])
		require.InDelta(t, 2*3600, r.GPUSeconds, 1e-6)
	}
	require.Equal(t, []string{"alice", "alice", "bob"}, []string{rows[0].Creator, rows[1].Creator, rows[2].Creator})
	require.Equal(t, []string{"nlp", "vision", "vision"}, []string{rows[0].Labels[0], rows[1].Labels[0], rows[2].Labels[0]})

	all, err := b.store.UsageQuery(b.ctx, UsageQueryParams{Start: at("00:00:00"), End: at("00:00:00").Add(24 * time.Hour), Step: StepHour})
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, "a", all[0].Tenant)
	require.InDelta(t, 6*3600, all[0].GPUSeconds, 1e-6)
	require.Equal(t, "b", all[1].Tenant)
	require.InDelta(t, 2*3600, all[1].GPUSeconds, 1e-6)
}

// A query by day reads usage_daily, written with the hours by the same
// rollup: at every moment — before, between and after rollups, with spans
// open across midnight and closed mid-day — each day equals the sum of its
// hours, and a window that is not day-aligned still reads the hours.
func TestUsageDaysAreTheSumOfTheirHours(t *testing.T) {
	day := func(d int, hms string) time.Time { return at(hms).Add(time.Duration(d) * 24 * time.Hour) }
	b, c := ledgerSetup(t, day(0, "22:30:00"))
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	long := keyOf(b.jobCreate(t, "a", "long", 2))
	short := keyOf(b.jobCreate(t, "b", "short", 2))
	b.admit(t, long, short)
	b.own(t, "w1", long)
	b.own(t, "w1", short)

	compare := func(when string) {
		t.Helper()
		q := UsageQueryParams{Start: day(0, "00:00:00"), End: day(3, "00:00:00"), ByCreator: true}
		q.Step = StepHour
		hours, err := b.store.UsageQuery(b.ctx, q)
		require.NoError(t, err)
		q.Step = StepDay
		days, err := b.store.UsageQuery(b.ctx, q)
		require.NoError(t, err)
		want := map[[2]string]float64{}
		for _, r := range hours {
			want[[2]string{r.Tenant, r.Start.Truncate(24 * time.Hour).Format(time.RFC3339)}] += r.GPUSeconds
		}
		got := map[[2]string]float64{}
		for _, r := range days {
			got[[2]string{r.Tenant, r.Start.Format(time.RFC3339)}] += r.GPUSeconds
		}
		require.Equal(t, len(want), len(got), when)
		for k, v := range want {
			require.InDelta(t, v, got[k], 1e-6, "%s: %v", when, k)
		}
		// Not day-aligned: the same days, from the hours.
		q.Start = day(0, "12:00:00")
		odd, err := b.store.UsageQuery(b.ctx, q)
		require.NoError(t, err)
		var sum float64
		for _, r := range odd {
			sum += r.GPUSeconds
		}
		var all float64
		for _, v := range want {
			all += v
		}
		require.InDelta(t, all, sum, 1e-6, when)
	}
	rollup := func(when string) {
		t.Helper()
		_, err := b.store.UsageRollup(b.ctx)
		require.NoError(t, err)
		compare(when)
	}
	c.set(day(1, "03:10:00"))
	compare("open across midnight")
	rollup("rolled up to 03:00")
	c.set(day(1, "05:00:00"))
	require.NoError(t, b.ledgerSave(t, "w1", short, job.Succeeded, false, true))
	compare("one closed mid-day")
	c.set(day(2, "01:00:00"))
	rollup("rolled up across the second midnight")
	rollup("a second rollup adds nothing")
	require.InDelta(t, jobGPUs*(6*3600+30*60), b.count(t, `SELECT sum(gpu_seconds)::bigint FROM usage_daily WHERE tenant_id = 'b'`), 1)
}

// A rollup that holds the job's row while it moves the open span (the
// jobs' rows, migration 000025) delays the worker's save that closes the
// span; the save then sees how far the span was rolled and closes it
// there: its time is counted once.
func TestLedgerSaveWaitsForRollup(t *testing.T) {
	b, c := ledgerSetup(t, at("09:00:00"))
	b.tenantCreate(t, "a")
	key := keyOf(b.jobCreate(t, "a", "train", 2))
	b.admit(t, key)
	b.own(t, "w1", key)

	// The rollup's transaction, as sqlUsageRollupOpen writes it, open.
	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(b.ctx) //nolint:errcheck
	_, err = tx.Exec(b.ctx, `UPDATE jobs SET ledger_rolled = $1 WHERE tenant_id = $2 AND uid = $3`, at("10:00:00"), key.Tenant, key.UID)
	require.NoError(t, err)
	c.set(at("09:30:00")) // the save's clock is behind the rollup's cut
	saved := make(chan error, 1)
	go func() { saved <- b.ledgerSave(t, "w1", key, job.Succeeded, false, true) }()
	select {
	case err := <-saved:
		t.Fatalf("the save did not wait for the rollup's lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, tx.Commit(b.ctx))
	require.NoError(t, <-saved)

	var rolled, end time.Time
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT rolled_to, end_time FROM usage_intervals WHERE job_uid = $1`, key.UID).Scan(&rolled, &end))
	require.Equal(t, at("10:00:00"), rolled.UTC(), "the closed span starts its unrolled part where the rollup left it")
	require.Equal(t, at("10:00:00"), end.UTC(), "never before the part rolled up")
	require.Zero(t, b.count(t, `SELECT count(*) FROM jobs WHERE uid = $1 AND ledger_since IS NOT NULL`, key.UID))
}
