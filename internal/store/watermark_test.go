//go:build integration

package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// An event written by a transaction that is still open holds back every
// event with a larger id, even one that committed: a reader that resumed
// after the committed one would never see the other.
func TestEventWatermarkHoldsBackLaterIDs(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	first := b.jobCreate(t, "a", "first", 0)
	second := b.own(t, "w", keyOf(b.jobCreate(t, "a", "second", 0)))
	cursor, err := b.store.EventLastID(b.ctx, "a")
	require.NoError(t, err)

	inserted, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	defer open() // a failing require must not leave the transaction open: the pool would never close
	go func() {
		done <- b.store.inTx(b.ctx, func(tx *txn) error {
			if err := eventsInsert(b.ctx, tx, first, []job.Event{{Reason: "Early"}}, time.Now()); err != nil {
				return err
			}
			close(inserted)
			<-release // open, with the smaller id
			return nil
		})
	}()
	<-inserted
	_, err = b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w", Tenant: "a", UID: second.Job.UID, Version: second.Version,
		Status: second.Job.Status, Events: []job.Event{{Reason: "Late"}}})
	require.NoError(t, err, "a later transaction commits first")

	got, err := b.store.EventListTenant(b.ctx, "a", cursor, 0)
	require.NoError(t, err)
	require.Empty(t, got, "the committed event waits for the open transaction below it")
	byJob, err := b.store.EventListByJob(b.ctx, "a", second.Job.UID, cursor, 0)
	require.NoError(t, err)
	require.Empty(t, byJob, "by job too")

	open()
	require.NoError(t, <-done)
	got, err = b.store.EventListTenant(b.ctx, "a", cursor, 0)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, []string{"Early", "Late"}, []string{got[0].Reason, got[1].Reason}, "id order: transaction, then write order")
	last, err := b.store.EventLastID(b.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, got[1].ID, last)
}

var errRollback = errors.New("rolled back on purpose")

// The property watches rely on, under the interleavings that break an
// id-only cursor: writers keep their transactions open for a while after
// their events got ids, commit in any order (some roll back), and a reader
// that only ever asks for "ids after the last one I saw" must still get
// every committed event, once, in id order. With a reader that ignores the
// watermark this test fails within its first hundred events.
func TestEventsResumeUnderInterleavedWriters(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	var jobs []job.Job
	for i := range 3 {
		jobs = append(jobs, b.jobCreate(t, "a", fmt.Sprintf("j%d", i), 0))
	}
	from, err := b.store.EventLastID(b.ctx, "a")
	require.NoError(t, err)

	const writers, txsPerWriter = 6, 40
	var (
		wg        sync.WaitGroup
		committed atomic.Int64
		errs      = make(chan error, writers)
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			for n := range txsPerWriter {
				events := make([]job.Event, 1+rng.IntN(3))
				for k := range events {
					events[k] = job.Event{Reason: "Tick", Message: fmt.Sprintf("w%d/%d/%d", w, n, k)}
				}
				rollback := rng.IntN(8) == 0
				hold := time.Duration(rng.IntN(4000)) * time.Microsecond
				err := b.store.inTx(b.ctx, func(tx *txn) error {
					if err := eventsInsert(b.ctx, tx, jobs[rng.IntN(len(jobs))], events, time.Now()); err != nil {
						return err
					}
					time.Sleep(hold) // the workload, not a wait: the ids are taken, the transaction stays open, others commit meanwhile
					if rollback {
						return errRollback
					}
					return nil
				})
				switch {
				case errors.Is(err, errRollback):
				case err != nil:
					errs <- err
					return
				default:
					committed.Add(int64(len(events)))
				}
			}
		}()
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }()

	seen := map[int64]bool{}
	cursor := from
	read := func() {
		events, err := b.store.EventListTenant(b.ctx, "a", cursor, 5)
		require.NoError(t, err)
		for _, e := range events {
			require.False(t, seen[e.ID], "event %d delivered twice", e.ID)
			require.Greater(t, e.ID, cursor, "delivered in id order")
			seen[e.ID] = true
			cursor = e.ID
		}
	}
	readWhileWriting(writing, read, func() int { return len(seen) })
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var all int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM job_events WHERE tenant_id = 'a' AND id > $1`, from).Scan(&all))
	require.EqualValues(t, committed.Load(), all, "rolled-back events are gone")
	require.Equal(t, all, len(seen), "the resuming reader saw every committed event")
}

// readWhileWriting calls read until writing closes, then until a read
// delivers nothing more (seen stops growing): a resuming reader racing
// concurrent writers, as a watch is.
func readWhileWriting(writing <-chan struct{}, read func(), seen func() int) {
	for done := false; !done; {
		select {
		case <-writing:
			done = true
		default:
		}
		read()
	}
	for before := -1; before != seen(); {
		before = seen()
		read()
	}
}
