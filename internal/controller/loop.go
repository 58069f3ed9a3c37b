package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Result says when to look at a key again after a sync that succeeded.
type Result struct {
	Requeue      bool          // at once
	RequeueAfter time.Duration // after this long (a deadline, a TTL, a poll)
}

// Config configures a Loop.
type Config[K comparable] struct {
	// Name is the queue's name in its metrics ("jobs", "tenants").
	Name string
	// RateLimiter spaces the retries of a key whose sync failed.
	RateLimiter workqueue.TypedRateLimiter[K]
	// Sync reconciles one key.
	Sync func(ctx context.Context, key K) (Result, error)
	// Metrics receives the queue's metrics (QueueMetrics). Defaults to
	// client-go's global provider (none unless one was registered).
	Metrics workqueue.MetricsProvider
	// Duration observes each sync's seconds. Optional.
	Duration prometheus.Observer
	// OnError is told of each failed sync, before its retry is queued,
	// with the key's retries so far (metrics, a log line). It is not
	// called once the loop's context has ended. Optional.
	OnError func(key K, err error, retries int)
	// AfterSync is called after every sync (tests wait on it). Optional.
	AfterSync func(key K, err error)
	// Urgent, when set, is asked of each key as it enters the queue: an
	// urgent key is synced before every key that is not, whatever their
	// order of arrival (each class first in, first out). Optional: one
	// FIFO without it. Called under the queue's lock; it must not touch
	// the queue.
	Urgent func(key K) bool
}

// Loop is a rate-limited workqueue and the workers that drain it into
// Sync. Build it with New; feed its Queue; Run it; ShutDown.
type Loop[K comparable] struct {
	cfg      Config[K]
	queue    workqueue.TypedRateLimitingInterface[K]
	stopping atomic.Bool
}

// New returns a Loop with an empty queue; nothing runs until Run.
func New[K comparable](cfg Config[K]) *Loop[K] {
	qc := workqueue.TypedRateLimitingQueueConfig[K]{Name: cfg.Name, MetricsProvider: cfg.Metrics}
	if cfg.Urgent != nil {
		qc.DelayingQueue = workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[K]{
			Name: cfg.Name, MetricsProvider: cfg.Metrics,
			Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[K]{
				Name: cfg.Name, MetricsProvider: cfg.Metrics, Queue: &urgentFirst[K]{urgent: cfg.Urgent},
			}),
		})
	}
	return &Loop[K]{cfg: cfg, queue: workqueue.NewTypedRateLimitingQueueWithConfig(cfg.RateLimiter, qc)}
}

// Queue is the loop's queue, for the controller to add keys to (Add,
// AddAfter). Shut it down with ShutDown, not through this.
func (l *Loop[K]) Queue() workqueue.TypedRateLimitingInterface[K] { return l.queue }

// Run runs workers goroutines that sync keys until ShutDown, and returns
// when every one of them has returned. Syncs get ctx.
func (l *Loop[K]) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { l.runWorker(ctx) })
	}
	wg.Wait()
}

// ShutDown stops the loop: the syncs in flight finish, the keys still
// queued are skipped, and Run returns.
func (l *Loop[K]) ShutDown() {
	l.stopping.Store(true)
	l.queue.ShutDown()
}

func (l *Loop[K]) runWorker(ctx context.Context) {
	for l.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem syncs one key: Forget on success (then Add or
// AddAfter as the Result asks), a rate-limited retry on error.
func (l *Loop[K]) processNextWorkItem(ctx context.Context) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	if l.stopping.Load() {
		return true
	}
	began := time.Now()
	res, err := l.cfg.Sync(ctx, key)
	if l.cfg.Duration != nil {
		l.cfg.Duration.Observe(time.Since(began).Seconds())
	}
	if l.cfg.AfterSync != nil {
		defer l.cfg.AfterSync(key, err)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopping: whoever owns the key next looks at it anyway.
	case err != nil:
		if l.cfg.OnError != nil {
			l.cfg.OnError(key, err, l.queue.NumRequeues(key))
		}
		l.queue.AddRateLimited(key)
	case res.Requeue:
		l.queue.Forget(key)
		l.queue.Add(key)
	case res.RequeueAfter > 0:
		l.queue.Forget(key)
		l.queue.AddAfter(key, res.RequeueAfter)
	default:
		l.queue.Forget(key)
	}
	return true
}
