package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"
)

// script is a Sync whose answers a test sets per key, recording every call.
type script struct {
	mu      sync.Mutex
	answers map[string][]answer // popped in order; the last one repeats
	calls   []string
	failed  []string // OnError: key, in order
	retries []int
	synced  chan string
}

type answer struct {
	res Result
	err error
}

func newScript() *script {
	return &script{answers: map[string][]answer{}, synced: make(chan string, 100)}
}

func (s *script) sync(_ context.Context, key string) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, key)
	as := s.answers[key]
	var a answer
	if len(as) > 0 {
		a = as[0]
		if len(as) > 1 {
			s.answers[key] = as[1:]
		}
	}
	return a.res, a.err
}

func (s *script) onError(key string, _ error, retries int) {
	s.mu.Lock()
	s.failed = append(s.failed, key)
	s.retries = append(s.retries, retries)
	s.mu.Unlock()
}

func (s *script) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c == key {
			n++
		}
	}
	return n
}

// start runs a loop over s until the test ends.
func start(t *testing.T, s *script, reg prometheus.Registerer) *Loop[string] {
	t.Helper()
	l := New(Config[string]{
		Name:        "test",
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond),
		Sync:        s.sync,
		Metrics:     QueueMetrics(reg),
		OnError:     s.onError,
		AfterSync:   func(key string, _ error) { s.synced <- key },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx, 2); close(done) }()
	t.Cleanup(func() { l.ShutDown(); <-done; cancel() })
	return l
}

func TestLoopRetriesFailuresWithBackoffThenForgets(t *testing.T) {
	s := newScript()
	boom := errors.New("boom")
	s.answers["a"] = []answer{{err: boom}, {err: boom}, {}}
	l := start(t, s, prometheus.NewRegistry())
	l.Queue().Add("a")
	require.Eventually(t, func() bool { return s.count("a") == 3 }, 5*time.Second, time.Millisecond)
	require.Never(t, func() bool { return s.count("a") > 3 }, 50*time.Millisecond, 5*time.Millisecond, "a success is not synced again")
	s.mu.Lock()
	require.Equal(t, []string{"a", "a"}, s.failed)
	require.Equal(t, []int{0, 1}, s.retries, "OnError sees the retries so far")
	s.mu.Unlock()
	require.Zero(t, l.Queue().NumRequeues("a"), "forgotten after the success")
}

func TestLoopRequeues(t *testing.T) {
	s := newScript()
	s.answers["now"] = []answer{{res: Result{Requeue: true}}, {}}
	s.answers["later"] = []answer{{res: Result{RequeueAfter: 100 * time.Millisecond}}, {}}
	l := start(t, s, prometheus.NewRegistry())
	began := time.Now()
	l.Queue().Add("now")
	l.Queue().Add("later")
	require.Eventually(t, func() bool { return s.count("now") == 2 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return s.count("later") == 2 }, 5*time.Second, time.Millisecond)
	require.GreaterOrEqual(t, time.Since(began), 100*time.Millisecond, "RequeueAfter waits")
	s.mu.Lock()
	require.Empty(t, s.failed)
	s.mu.Unlock()
}

// A failure once the loop's context ended is not retried (the process is
// stopping), nor reported.
func TestLoopDoesNotRetryAfterItsContextEnded(t *testing.T) {
	s := newScript()
	l := New(Config[string]{
		Name:        "test",
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Millisecond),
		Sync: func(ctx context.Context, key string) (Result, error) {
			s.sync(ctx, key)
			return Result{}, ctx.Err()
		},
		OnError: s.onError,
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.Queue().Add("a")
	require.True(t, l.processNextWorkItem(ctx))
	require.Zero(t, l.Queue().Len())
	require.Zero(t, l.Queue().NumRequeues("a"))
	require.Empty(t, s.failed)
}

// ShutDown skips what is still queued, and Run returns.
func TestLoopShutDownSkipsQueuedKeys(t *testing.T) {
	s := newScript()
	l := New(Config[string]{Name: "test", RateLimiter: workqueue.DefaultTypedControllerRateLimiter[string](), Sync: s.sync})
	for _, k := range []string{"a", "b", "c"} {
		l.Queue().Add(k)
	}
	l.ShutDown()
	done := make(chan struct{})
	go func() { l.Run(context.Background(), 2); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after ShutDown")
	}
	require.Empty(t, s.calls)
}

// Two loops on one registry (the worker and the tenant reconciler in one
// process) report under their own names on shared series.
func TestQueueMetricsSharedByLoopsOnOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, name := range []string{"jobs", "tenants"} {
		s := newScript()
		l := New(Config[string]{Name: name, RateLimiter: workqueue.DefaultTypedControllerRateLimiter[string](),
			Sync: s.sync, Metrics: QueueMetrics(reg), AfterSync: func(key string, _ error) { s.synced <- key }})
		done := make(chan struct{})
		go func() { l.Run(context.Background(), 1); close(done) }()
		l.Queue().Add("k")
		<-s.synced
		l.ShutDown()
		<-done
	}
	n, err := testutil.GatherAndCount(reg, "trainyard_workqueue_adds_total")
	require.NoError(t, err)
	require.Equal(t, 2, n, "one series per queue name")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP trainyard_workqueue_adds_total Adds to the work queue.
# TYPE trainyard_workqueue_adds_total counter
trainyard_workqueue_adds_total{name="jobs"} 1
trainyard_workqueue_adds_total{name="tenants"} 1
`), "trainyard_workqueue_adds_total"))
}

// With Urgent, keys urgent when added are synced before the others, each
// class in the order it arrived, and the queue still holds a key once.
func TestLoopSyncsUrgentKeysFirst(t *testing.T) {
	s := newScript()
	reg := prometheus.NewRegistry()
	l := New(Config[string]{
		Name:        "test",
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Millisecond),
		Sync:        s.sync,
		Metrics:     QueueMetrics(reg),
		Urgent:      func(key string) bool { return strings.HasPrefix(key, "!") },
	})
	for _, k := range []string{"a", "b", "!x", "a", "c", "!y", "!x"} {
		l.Queue().Add(k)
	}
	require.Equal(t, 5, l.Queue().Len(), "a key waits in the queue once")
	require.Equal(t, 5.0, depthOf(t, reg), "the depth gauge counts both classes")
	ctx := context.Background()
	for l.Queue().Len() > 0 {
		require.True(t, l.processNextWorkItem(ctx))
	}
	require.Equal(t, []string{"!x", "!y", "a", "b", "c"}, s.calls)
	l.ShutDown()
}

func TestUrgentFirstReleasesWhatItPopped(t *testing.T) {
	q := &urgentFirst[int]{urgent: func(k int) bool { return k%10 == 0 }}
	for i := range 5000 {
		q.Push(i)
	}
	require.Equal(t, 5000, q.Len())
	for i := range 500 {
		require.Equal(t, 10*i, q.Pop(), "the urgent keys first, in order")
	}
	for i := range 4000 {
		k := q.Pop()
		require.NotZero(t, k%10, "then the others")
		if i == 0 {
			require.Equal(t, 1, k)
		}
	}
	require.Equal(t, 500, q.Len())
	require.Less(t, cap(q.lo), 5000, "a drained head is released")
	q.Push(7)
	require.Equal(t, 501, q.Len())
	last := 0
	for q.Len() > 0 {
		last = q.Pop()
	}
	require.Equal(t, 7, last, "first in, first out within a class")
	require.Zero(t, q.hi.len()+q.lo.len())
}

func depthOf(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "trainyard_workqueue_depth" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no trainyard_workqueue_depth")
	return 0
}
