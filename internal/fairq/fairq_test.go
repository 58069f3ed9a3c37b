package fairq

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitFor waits until the tenant has n requests waiting.
func waitFor(t *testing.T, a *Admitter, tenant string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return a.Stats(tenant).Waiting == n }, 5*time.Second, time.Millisecond)
}

func TestSeatsQueueAndRefusal(t *testing.T) {
	a := New(Limits{Concurrency: 2, Queue: 1})
	ctx := context.Background()
	r1, err := a.Acquire(ctx, "vision", "alice")
	require.NoError(t, err)
	r2, err := a.Acquire(ctx, "vision", "alice")
	require.NoError(t, err)

	got := make(chan func(), 1)
	go func() {
		r, err := a.Acquire(ctx, "vision", "bob")
		require.NoError(t, err)
		got <- r
	}()
	waitFor(t, a, "vision", 1)

	_, err = a.Acquire(ctx, "vision", "carol")
	var rej *Rejected
	require.ErrorAs(t, err, &rej)
	require.False(t, rej.Waited)
	require.Contains(t, err.Error(), `vision is at its limit of 2 concurrent requests with 1 more waiting`)

	// Another tenant is not affected.
	r, err := a.Acquire(ctx, "speech", "dave")
	require.NoError(t, err)
	r()

	r1()
	r3 := <-got
	require.Equal(t, Stats{Running: 2}, a.Stats("vision"))
	r1() // a second call of the same release does nothing
	require.Equal(t, Stats{Running: 2}, a.Stats("vision"))
	r2()
	r3()
	require.Equal(t, Stats{}, a.Stats("vision"))
	require.Empty(t, a.tenants, "an idle tenant leaves nothing behind")
}

func TestWaitRunsOut(t *testing.T) {
	a := New(Limits{Concurrency: 1, Queue: 4, Wait: 20 * time.Millisecond})
	r, err := a.Acquire(context.Background(), "t", "a")
	require.NoError(t, err)
	_, err = a.Acquire(context.Background(), "t", "b")
	var rej *Rejected
	require.ErrorAs(t, err, &rej)
	require.True(t, rej.Waited)
	require.Contains(t, err.Error(), "waited 20ms")
	require.Equal(t, Stats{Running: 1}, a.Stats("t"))
	r()
	require.Equal(t, Stats{}, a.Stats("t"))
}

func TestContextEndsTheWait(t *testing.T) {
	a := New(Limits{Concurrency: 1, Queue: 4})
	r, err := a.Acquire(context.Background(), "t", "a")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := a.Acquire(ctx, "t", "b"); errc <- err }()
	waitFor(t, a, "t", 1)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Equal(t, Stats{Running: 1}, a.Stats("t"))
	r()
	require.Equal(t, Stats{}, a.Stats("t"))
}

// A caller with a burst queued does not hold a colleague's one call back
// for more than a turn.
func TestCallersTakeTurns(t *testing.T) {
	a := New(Limits{Concurrency: 1, Queue: 10})
	ctx := context.Background()
	first, err := a.Acquire(ctx, "t", "burst")
	require.NoError(t, err)

	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
	)
	queued := 0
	enqueue := func(caller string, n int) {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := a.Acquire(ctx, "t", caller)
				require.NoError(t, err)
				mu.Lock()
				order = append(order, caller)
				mu.Unlock()
				r()
			}()
			queued++
			waitFor(t, a, "t", queued)
		}
	}
	enqueue("burst", 4)
	enqueue("single", 1)
	first()
	wg.Wait()
	require.Equal(t, []string{"burst", "single", "burst", "burst", "burst"}, order)
}

func TestNeverMoreThanConcurrency(t *testing.T) {
	const seats = 3
	a := New(Limits{Concurrency: seats, Queue: 1000})
	var running, peak atomic.Int64
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*time.Millisecond+time.Millisecond)
			defer cancel()
			r, err := a.Acquire(ctx, "t", []string{"a", "b", "c"}[i%3])
			if err != nil {
				require.True(t, errors.Is(err, context.DeadlineExceeded), err)
				return
			}
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(100 * time.Microsecond) // hold the seat a moment
			running.Add(-1)
			r()
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, peak.Load(), int64(seats))
	require.Equal(t, Stats{}, a.Stats("t"))
}
