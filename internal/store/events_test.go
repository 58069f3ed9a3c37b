//go:build integration

package store

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

func TestEventsOrderedResumable(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	j := b.jobCreate(t, "a", "j", 0)
	other := b.jobCreate(t, "a", "other", 0)
	b.jobCreate(t, "b", "j", 0)
	w := b.own(t, "w", keyOf(j))

	st := w.Job.Status
	st.State = job.Starting
	v, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w", Tenant: "a", UID: j.UID, Version: w.Version, Status: st,
		Events: []job.Event{{Reason: "Admitted"}, {Reason: "PodsCreated", Message: "3 pods"}}})
	require.NoError(t, err)
	st.State = job.Running
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w", Tenant: "a", UID: j.UID, Version: v, Status: st,
		Events: []job.Event{{Type: job.EventWarning, Reason: "Restarting", State: job.Restarting}, {Reason: "Running"}}})
	require.NoError(t, err)

	all, err := b.store.EventList(b.ctx, "a", "j", 0, 0)
	require.NoError(t, err)
	var reasons []string
	for i, e := range all {
		reasons = append(reasons, e.Reason)
		require.Equal(t, "a", e.Tenant)
		require.Equal(t, "j", e.Job)
		require.Equal(t, j.UID, e.JobUID)
		if i > 0 {
			require.Greater(t, e.ID, all[i-1].ID)
		}
	}
	require.Equal(t, []string{"Queued", "Admitted", "PodsCreated", "Restarting", "Running"}, reasons)
	require.Equal(t, job.EventWarning, all[3].Type)
	require.Equal(t, job.Restarting, all[3].State)
	require.Equal(t, job.Running, all[4].State)
	require.Equal(t, "3 pods", all[2].Message)

	// Resume after any id; page with limit.
	rest, err := b.store.EventList(b.ctx, "a", "j", all[1].ID, 0)
	require.NoError(t, err)
	require.Equal(t, all[2:], rest)
	page, err := b.store.EventList(b.ctx, "a", "j", all[0].ID, 2)
	require.NoError(t, err)
	require.Equal(t, all[1:3], page)
	none, err := b.store.EventList(b.ctx, "a", "j", all[4].ID, 0)
	require.NoError(t, err)
	require.Empty(t, none)

	// Tenant-wide: both jobs of a, none of b.
	tenantEvents, err := b.store.EventListTenant(b.ctx, "a", 0, 0)
	require.NoError(t, err)
	require.Len(t, tenantEvents, 6)
	for i, e := range tenantEvents {
		require.Equal(t, "a", e.Tenant)
		if i > 0 {
			require.Greater(t, e.ID, tenantEvents[i-1].ID)
		}
	}
	require.Equal(t, other.UID, tenantEvents[1].JobUID)
	last, err := b.store.EventLastID(b.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, all[4].ID, last)
}

// TestEventsResumeUnderConcurrentWriters checks the property watches rely
// on: a reader that only ever asks for "ids after the last one I saw",
// while several workers write events at once, misses nothing.
func TestEventsResumeUnderConcurrentWriters(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	const writers, saves = 4, 25
	var jobs []WorkerJob
	for i := range writers {
		jobs = append(jobs, b.own(t, fmt.Sprintf("w%d", i), keyOf(b.jobCreate(t, "a", fmt.Sprintf("j%d", i), 0))))
	}
	from, err := b.store.EventLastID(b.ctx, "a")
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i, w := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := w.Version
			for n := range saves {
				var err error
				v, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: fmt.Sprintf("w%d", i), Tenant: "a",
					UID: w.Job.UID, Version: v, Status: job.Status{State: job.Running},
					Events: []job.Event{{Reason: "Tick", Message: fmt.Sprint(n)}}})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }()

	seen := map[int64]bool{}
	cursor := from
	read := func() {
		events, err := b.store.EventListTenant(b.ctx, "a", cursor, 7)
		require.NoError(t, err)
		for _, e := range events {
			require.False(t, seen[e.ID])
			seen[e.ID] = true
			cursor = e.ID
		}
	}
	readWhileWriting(writing, read, func() int { return len(seen) })
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, seen, writers*saves, "the resuming reader saw every event")
}

// EventListByJob follows one job by uid: a job created later under the
// name of a deleted one is never mixed in, and the deleted job's events
// (its Deleted event included) stay readable until it is purged.
func TestEventListByJobFollowsTheUID(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	old := b.jobCreate(t, "a", "j", 0)
	_, err := b.store.JobCancel(b.ctx, "a", "j")
	require.NoError(t, err)
	require.NoError(t, b.store.JobDelete(b.ctx, "a", "j"))
	cur := b.jobCreate(t, "a", "j", 0)

	reasons := func(events []job.Event) []string {
		var out []string
		for _, e := range events {
			out = append(out, e.Reason)
		}
		return out
	}
	oldEvents, err := b.store.EventListByJob(b.ctx, "a", old.UID, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"Queued", "Cancelled", "Deleted"}, reasons(oldEvents))
	curEvents, err := b.store.EventListByJob(b.ctx, "a", cur.UID, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"Queued"}, reasons(curEvents))
	require.Equal(t, cur.UID, curEvents[0].JobUID)

	after, err := b.store.EventListByJob(b.ctx, "a", old.UID, oldEvents[0].ID, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"Cancelled"}, reasons(after), "resume after an id, with a limit")

	byName, err := b.store.EventList(b.ctx, "a", "j", 0, 0)
	require.NoError(t, err)
	require.Equal(t, curEvents, byName, "by name: the live job")

	for _, uid := range []string{"not-a-uuid", cur.UID} {
		none, err := b.store.EventListByJob(b.ctx, "b", uid, 0, 0)
		require.NoError(t, err)
		require.Empty(t, none, "another tenant sees nothing")
	}
}
