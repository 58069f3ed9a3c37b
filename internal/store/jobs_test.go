//go:build integration

package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

func TestJobCreate(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	in := job.Job{Tenant: "a", Name: "mnist", DisplayName: "MNIST", Creator: "alice",
		Labels: map[string]string{"team": "vision"}, Spec: testSpec()}
	in.Spec.Priority = 7
	got, created, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: in})
	require.NoError(t, err)
	require.True(t, created)

	uid, err := uuid.Parse(got.UID)
	require.NoError(t, err)
	require.EqualValues(t, 7, uid.Version(), "generated uids are UUIDv7")
	require.Equal(t, job.Queued, got.Status.State)
	require.Len(t, got.Status.Conditions, 1)
	require.Equal(t, job.CondQueued, got.Status.Conditions[0].Type)
	require.True(t, got.Status.Conditions[0].Status)
	require.Equal(t, in.Spec, got.Spec)
	require.Equal(t, in.Labels, got.Labels)
	require.Equal(t, "MNIST", got.DisplayName)
	require.Equal(t, "alice", got.Creator)

	read, err := b.store.JobGet(b.ctx, "a", "mnist")
	require.NoError(t, err)
	require.Equal(t, got, read)

	w, err := b.store.JobLoad(b.ctx, "a", got.UID)
	require.NoError(t, err)
	require.True(t, w.Active)
	require.False(t, w.Admitted)
	require.EqualValues(t, 0, b.count(t, `SELECT count(*) FROM jobs WHERE uid = $1 AND claim_after <= now()`, got.UID),
		"not claimable before the scheduler admits it")
	require.Empty(t, w.WorkerID)
	require.EqualValues(t, 7, b.count(t, `SELECT priority FROM jobs WHERE uid = $1`, got.UID))

	events, err := b.store.EventList(b.ctx, "a", "mnist", 0, 0)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, "Queued", events[0].Reason)
	require.Equal(t, got.UID, events[0].JobUID)
	require.Equal(t, job.Queued, events[0].State)

	// A client-chosen uid is kept.
	mine := uuid.NewString()
	j2, _, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: "two", UID: mine, Spec: testSpec()}})
	require.NoError(t, err)
	require.Equal(t, mine, j2.UID)

	_, _, err = b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: "mnist", Spec: testSpec()}})
	require.ErrorIs(t, err, ErrAlreadyExists)
	_, _, err = b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "nope", Name: "x", Spec: testSpec()}})
	require.ErrorIs(t, err, ErrNotFound)
	_, _, err = b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: "x", UID: "not-a-uuid"}})
	require.ErrorIs(t, err, ErrFailedPrecondition)

	_, err = b.store.TenantSetState(b.ctx, "a", tenant.Offboarding)
	require.NoError(t, err)
	_, _, err = b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: "late", Spec: testSpec()}})
	require.ErrorIs(t, err, ErrFailedPrecondition)
	require.ErrorContains(t, err, "OFFBOARDING")
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM jobs`), "failed creates leave nothing")
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM job_events`))
}

func TestJobCreateIdempotentConcurrent(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")

	const callers = 20
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		jobs    = make([]job.Job, callers)
		created = make([]bool, callers)
		errs    = make([]error, callers)
	)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			jobs[i], created[i], errs[i] = b.store.JobCreate(b.ctx, JobCreateParams{
				Job:       job.Job{Tenant: "a", Name: "retried", Spec: testSpec()},
				RequestID: "req-1",
			})
		}()
	}
	close(start)
	wg.Wait()

	creators := 0
	for i := range callers {
		require.NoError(t, errs[i])
		require.Equal(t, jobs[0].UID, jobs[i].UID)
		if created[i] {
			creators++
		}
	}
	require.Equal(t, 1, creators)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM job_events`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM idempotency_keys`))

	// A later retry, even with a different body, returns the first job.
	again, wasCreated, err := b.store.JobCreate(b.ctx, JobCreateParams{
		Job: job.Job{Tenant: "a", Name: "other-name", Spec: testSpec()}, RequestID: "req-1"})
	require.NoError(t, err)
	require.False(t, wasCreated)
	require.Equal(t, jobs[0].UID, again.UID)

	// Request ids are per tenant.
	inB, wasCreated, err := b.store.JobCreate(b.ctx, JobCreateParams{
		Job: job.Job{Tenant: "b", Name: "retried", Spec: testSpec()}, RequestID: "req-1"})
	require.NoError(t, err)
	require.True(t, wasCreated)
	require.NotEqual(t, jobs[0].UID, inB.UID)

	// A new request id with a taken name is a conflict, and leaves no key.
	_, _, err = b.store.JobCreate(b.ctx, JobCreateParams{
		Job: job.Job{Tenant: "a", Name: "retried", Spec: testSpec()}, RequestID: "req-2"})
	require.ErrorIs(t, err, ErrAlreadyExists)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM idempotency_keys WHERE request_id = 'req-2'`))
}

func TestJobListPaginationConcurrentInserts(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	const initial = 150
	want := map[string]bool{}
	for i := range initial {
		want[b.jobCreate(t, "a", fmt.Sprintf("job-%03d", i), 0).UID] = true
	}

	// A writer inserts jobs all along; between pages the reader waits until
	// it has inserted more, so every page boundary sees new rows.
	stop := make(chan struct{})
	var inserted atomic.Int64
	writerDone := make(chan error, 1)
	go func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			_, _, err := b.store.JobCreate(b.ctx, JobCreateParams{
				Job: job.Job{Tenant: "a", Name: fmt.Sprintf("late-%04d", n), Spec: testSpec()}})
			if err != nil {
				writerDone <- err
				return
			}
			inserted.Add(1)
		}
	}()

	seen := map[string]bool{}
	var cursor int64
	var last job.Job
	pages := 0
	for {
		got, err := b.store.JobList(b.ctx, "a", JobListParams{PageSize: 7, Before: cursor})
		require.NoError(t, err)
		page, next := got.Jobs, got.Next
		pages++
		for _, j := range page {
			require.False(t, seen[j.UID], "job %s returned twice", j.Name)
			seen[j.UID] = true
			if last.UID != "" {
				require.False(t, j.CreateTime.After(last.CreateTime), "newest first")
			}
			last = j
		}
		if next == 0 {
			break
		}
		before := inserted.Load()
		require.Eventually(t, func() bool { return inserted.Load() > before }, 10*time.Second, time.Millisecond)
		if cursor != 0 {
			require.Less(t, next, cursor, "the cursor moves to older rows")
		}
		cursor = next
	}
	close(stop)
	require.NoError(t, <-writerDone)
	lateCount := inserted.Load()
	for uid := range want {
		require.True(t, seen[uid], "job %s missing", uid)
	}
	require.GreaterOrEqual(t, pages, initial/7)
	t.Logf("%d pages; %d jobs inserted while paging", pages, lateCount)
}

// A list, then the events after its WatchAfter, leave no job out: under
// creates from several writers, every job is in the list or has an event
// after it. (A watch started "now" beside a list could miss a job created
// between the two.)
func TestJobListWatchAfterMissesNothing(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	var created atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := b.store.JobCreate(b.ctx, JobCreateParams{
					Job: job.Job{Tenant: "a", Name: fmt.Sprintf("w%d-%04d", w, n), Spec: testSpec()}}); err != nil {
					errs <- err
					return
				}
				created.Add(1)
			}
		})
	}
	var pages []JobPage
	for range 20 {
		// Each list after more creates committed.
		seen := created.Load()
		require.Eventually(t, func() bool { return created.Load() > seen }, 10*time.Second, time.Millisecond)
		page, err := b.store.JobList(b.ctx, "a", JobListParams{PageSize: MaxPageSize})
		require.NoError(t, err)
		require.Zero(t, page.Next, "one page holds them all")
		pages = append(pages, page)
	}
	close(stop)
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)

	all, err := b.store.JobList(b.ctx, "a", JobListParams{PageSize: MaxPageSize})
	require.NoError(t, err)
	require.Zero(t, all.Next)
	for i, page := range pages {
		covered := map[string]bool{}
		for _, j := range page.Jobs {
			covered[j.UID] = true
		}
		for after := page.WatchAfter; ; {
			events, err := b.store.EventListTenant(b.ctx, "a", after, MaxPageSize)
			require.NoError(t, err)
			if len(events) == 0 {
				break
			}
			for _, e := range events {
				covered[e.JobUID] = true
			}
			after = events[len(events)-1].ID
		}
		for _, j := range all.Jobs {
			require.True(t, covered[j.UID], "list %d (%d jobs, watch after %d): job %s neither listed nor in an event after it",
				i, len(page.Jobs), page.WatchAfter, j.Name)
		}
	}
	require.Greater(t, len(all.Jobs), len(pages[0].Jobs), "jobs were created between the lists")
}

func TestJobListFilters(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	mk := func(name string, labels map[string]string) {
		_, _, err := b.store.JobCreate(b.ctx, JobCreateParams{
			Job: job.Job{Tenant: "a", Name: name, Labels: labels, Spec: testSpec(), Creator: "alice"}})
		require.NoError(t, err)
	}
	mk("q1", map[string]string{"team": "vision", "exp": "1"})
	mk("q2", map[string]string{"team": "nlp"})
	b.jobInState(t, "a", "r1", job.Running, true)
	b.jobInState(t, "a", "s1", job.Succeeded, true)
	b.jobInState(t, "a", "f1", job.Failed, true)
	b.jobInState(t, "a", "s2", job.Succeeded, true)
	require.NoError(t, b.store.JobDelete(b.ctx, "a", "s2"))
	mk("q3", map[string]string{"team": "vision"})
	b.jobCreate(t, "b", "other", 0)

	names := func(p JobListParams) []string {
		t.Helper()
		var out []string
		for {
			page, err := b.store.JobList(b.ctx, "a", p)
			require.NoError(t, err)
			next := page.Next
			for _, j := range page.Jobs {
				out = append(out, j.Name)
			}
			if next == 0 {
				return out
			}
			p.Before = next
		}
	}
	require.Equal(t, []string{"q3", "f1", "s1", "r1", "q2", "q1"}, names(JobListParams{}))
	require.Equal(t, []string{"q3", "f1", "s1", "r1", "q2", "q1"}, names(JobListParams{PageSize: 1}))
	require.Equal(t, []string{"q3", "q2", "q1"}, names(JobListParams{States: []job.State{job.Queued}}))
	require.Equal(t, []string{"f1", "s1", "r1"},
		names(JobListParams{States: []job.State{job.Running, job.Failed, job.Succeeded, job.Running}, PageSize: 2}))
	require.Equal(t, []string{"q3", "q1"}, names(JobListParams{LabelEquals: map[string]string{"team": "vision"}}))
	require.Equal(t, []string{"q1"}, names(JobListParams{LabelEquals: map[string]string{"team": "vision", "exp": "1"}}))
	require.Equal(t, []string{"q3", "q2", "q1"}, names(JobListParams{LabelExists: []string{"team"}}))
	require.Equal(t, []string{"q1"}, names(JobListParams{LabelExists: []string{"team", "exp"}}))
	require.Equal(t, []string{"q3", "q1"}, names(JobListParams{States: []job.State{job.Queued, job.Running},
		LabelEquals: map[string]string{"team": "vision"}, PageSize: 1}))
	require.Empty(t, names(JobListParams{States: []job.State{job.Cancelled}}))
	require.Equal(t, []string{"q3", "q1"}, names(JobListParams{Creator: "alice", LabelEquals: map[string]string{"team": "vision"}}))
	require.Empty(t, names(JobListParams{Creator: "mallory"}))
}

func TestTenantScoping(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a", tenant.Member{Subject: "alice", Role: tenant.RoleAdmin})
	b.tenantCreate(t, "b", tenant.Member{Subject: "bob", Role: tenant.RoleAdmin})
	ja := b.jobCreate(t, "a", "secret-project", 1)
	done := b.jobInState(t, "a", "finished", job.Succeeded, true)
	_, err := b.store.SecretPut(b.ctx, tenant.Secret{Tenant: "a", Name: "s3", Keys: []string{"key"}})
	require.NoError(t, err)

	// Tenant b, guessing every name and id of tenant a.
	_, err = b.store.JobGet(b.ctx, "b", "secret-project")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = b.store.JobCancel(b.ctx, "b", "secret-project")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, b.store.JobDelete(b.ctx, "b", "finished"), ErrNotFound)
	list, err := b.store.JobList(b.ctx, "b", JobListParams{})
	require.NoError(t, err)
	require.Empty(t, list.Jobs)
	require.Zero(t, list.Next)
	_, err = b.store.EventList(b.ctx, "b", "secret-project", 0, 0)
	require.ErrorIs(t, err, ErrNotFound)
	events, err := b.store.EventListTenant(b.ctx, "b", 0, 0)
	require.NoError(t, err)
	require.Empty(t, events)
	last, err := b.store.EventLastID(b.ctx, "b")
	require.NoError(t, err)
	require.Zero(t, last)
	_, err = b.store.SecretGet(b.ctx, "b", "s3")
	require.ErrorIs(t, err, ErrNotFound)
	secrets, err := b.store.SecretList(b.ctx, "b")
	require.NoError(t, err)
	require.Empty(t, secrets)
	require.ErrorIs(t, b.store.SecretDelete(b.ctx, "b", "s3"), ErrNotFound)
	_, err = b.store.JobLoad(b.ctx, "b", ja.UID)
	require.ErrorIs(t, err, ErrNotFound)
	active, err := b.store.JobListActiveByTenant(b.ctx, "b")
	require.NoError(t, err)
	require.Empty(t, active)
	tenants, err := b.store.TenantList(b.ctx, TenantListParams{Subject: "bob"})
	require.NoError(t, err)
	require.Len(t, tenants, 1)
	require.Equal(t, "b", tenants[0].ID)

	// b may use the same names without touching a's.
	jb := b.jobCreate(t, "b", "secret-project", 1)
	require.NotEqual(t, ja.UID, jb.UID)
	_, err = b.store.JobCancel(b.ctx, "b", "secret-project")
	require.NoError(t, err)

	// a is untouched.
	got, err := b.store.JobGet(b.ctx, "a", "secret-project")
	require.NoError(t, err)
	require.Equal(t, job.Queued, got.Status.State)
	require.False(t, got.Status.CancelRequested)
	_, err = b.store.JobGet(b.ctx, "a", "finished")
	require.NoError(t, err)
	_, err = b.store.SecretGet(b.ctx, "a", "s3")
	require.NoError(t, err)
	events, err = b.store.EventList(b.ctx, "a", "secret-project", 0, 0)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, done.Job.Tenant, "a")
}

func TestSecrets(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	s1, err := b.store.SecretPut(b.ctx, tenant.Secret{Tenant: "a", Name: "wandb", Keys: []string{"api-key"}})
	require.NoError(t, err)
	require.Equal(t, []string{"api-key"}, s1.Keys)
	require.False(t, s1.CreateTime.IsZero())

	s2, err := b.store.SecretPut(b.ctx, tenant.Secret{Tenant: "a", Name: "wandb", Keys: []string{"api-key", "entity"}})
	require.NoError(t, err)
	require.Equal(t, s1.CreateTime, s2.CreateTime)
	require.Equal(t, []string{"api-key", "entity"}, s2.Keys)

	_, err = b.store.SecretPut(b.ctx, tenant.Secret{Tenant: "a", Name: "aws"})
	require.NoError(t, err)
	list, err := b.store.SecretList(b.ctx, "a")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "aws", list[0].Name)
	require.Empty(t, list[0].Keys)
	require.Equal(t, s2, list[1])

	got, err := b.store.SecretGet(b.ctx, "a", "wandb")
	require.NoError(t, err)
	require.Equal(t, s2, got)

	require.NoError(t, b.store.SecretDelete(b.ctx, "a", "wandb"))
	require.ErrorIs(t, b.store.SecretDelete(b.ctx, "a", "wandb"), ErrNotFound)
	_, err = b.store.SecretGet(b.ctx, "a", "wandb")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = b.store.SecretPut(b.ctx, tenant.Secret{Tenant: "ghost", Name: "x"})
	require.ErrorIs(t, err, ErrNotFound)
}

// A retried create looks its request id up first (JobGetByRequestID); the
// job it finds is returned as it is now, final or not, and a deleted one is
// NOT_FOUND both there and in JobCreate's own replay.
func TestJobGetByRequestID(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	first, created, err := b.store.JobCreate(b.ctx, JobCreateParams{
		Job: job.Job{Tenant: "a", Name: "j", Spec: testSpec()}, RequestID: "r1"})
	require.NoError(t, err)
	require.True(t, created)

	got, ok, err := b.store.JobGetByRequestID(b.ctx, "a", "r1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, first, got)
	_, ok, err = b.store.JobGetByRequestID(b.ctx, "a", "r2")
	require.NoError(t, err)
	require.False(t, ok)
	_, ok, err = b.store.JobGetByRequestID(b.ctx, "b", "r1")
	require.NoError(t, err)
	require.False(t, ok, "request ids are per tenant")

	cancelled, err := b.store.JobCancel(b.ctx, "a", "j")
	require.NoError(t, err)
	got, ok, err = b.store.JobGetByRequestID(b.ctx, "a", "r1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, job.Cancelled, got.Status.State, "a final job is still the request's answer")
	require.Equal(t, cancelled.UID, got.UID)

	require.NoError(t, b.store.JobDelete(b.ctx, "a", "j"))
	_, _, err = b.store.JobGetByRequestID(b.ctx, "a", "r1")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorContains(t, err, "has been deleted")
	_, _, err = b.store.JobCreate(b.ctx, JobCreateParams{
		Job: job.Job{Tenant: "a", Name: "j", Spec: testSpec()}, RequestID: "r1"})
	require.ErrorIs(t, err, ErrNotFound, "the replay inside JobCreate says the same")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs`), "and creates nothing")

	// Purged: the key goes with the row, and the id is free again.
	_, err = b.pool.Exec(b.ctx, `DELETE FROM jobs WHERE uid = $1`, first.UID)
	require.NoError(t, err)
	_, ok, err = b.store.JobGetByRequestID(b.ctx, "a", "r1")
	require.NoError(t, err)
	require.False(t, ok)
}

func TestJobGetMany(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	one := b.jobCreate(t, "a", "one", 0)
	two := b.jobCreate(t, "a", "two", 0)
	theirs := b.jobCreate(t, "b", "one", 0)
	_, err := b.store.JobCancel(b.ctx, "a", "two")
	require.NoError(t, err)
	require.NoError(t, b.store.JobDelete(b.ctx, "a", "two"))
	again := b.jobCreate(t, "a", "two", 0) // the name is free at once

	got, err := b.store.JobGetMany(b.ctx, "a", []string{one.UID, two.UID, again.UID, theirs.UID, "not-a-uuid", uuid.NewString()})
	require.NoError(t, err)
	byUID := map[string]job.Job{}
	for _, j := range got {
		byUID[j.UID] = j
	}
	require.Len(t, byUID, 3, "another tenant's job, a bad and an unknown uid are left out")
	require.Equal(t, "one", byUID[one.UID].Name)
	require.Equal(t, "two", byUID[two.UID].Name, "a deleted job is still there until it is purged")
	require.Equal(t, job.Cancelled, byUID[two.UID].Status.State)
	require.Equal(t, job.Queued, byUID[again.UID].Status.State)

	none, err := b.store.JobGetMany(b.ctx, "a", nil)
	require.NoError(t, err)
	require.Empty(t, none)
}

// An offboarding that commits while a create is in flight is seen by the
// create: JobCreate's FOR SHARE on the tenant row waits for TenantUpdate's
// lock, then reads the new state.
func TestJobCreateWaitsForTenantUpdate(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	locked, release := make(chan struct{}), make(chan struct{})
	updated := make(chan error, 1)
	go func() {
		_, err := b.store.TenantUpdate(b.ctx, "a", func(tn *tenant.Tenant) error {
			tn.State = tenant.Offboarding
			close(locked)
			<-release
			return nil
		})
		updated <- err
	}()
	<-locked
	created := make(chan error, 1)
	go func() {
		_, _, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: "late", Spec: testSpec()}})
		created <- err
	}()
	// The create waits on the tenant row.
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND a.datname = current_database()`) > 0
	}, 10*time.Second, 10*time.Millisecond)
	close(release)
	require.NoError(t, <-updated)
	err := <-created
	require.ErrorIs(t, err, ErrFailedPrecondition)
	require.ErrorContains(t, err, "OFFBOARDING")
	require.Zero(t, b.count(t, `SELECT count(*) FROM jobs`))
}
