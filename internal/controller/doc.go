// Package controller is the one reconcile-loop skeleton of Trainyard's
// controllers — the job worker (internal/worker) and the tenant reconciler
// (internal/tenantctl) — named as kubernetes/sample-controller names it:
//
//	informers, notifications, timers ─► Add(key)
//	                                      │
//	                rate-limited workqueue keyed by K (per-key backoff;
//	                with Urgent: urgent keys first, each class FIFO)
//	                                      │
//	Run ─► runWorker ×n ─► processNextWorkItem: Get, defer Done
//	                            skip when shutting down (ShutDown)
//	                            sync(ctx, key) ─► error        → OnError, AddRateLimited
//	                                              Requeue      → Forget, Add (at once)
//	                                              RequeueAfter → Forget, AddAfter (timers)
//	                                              nothing      → Forget
//
// A controller builds a Loop with its sync function, its rate limiter and
// its hooks (metrics and log lines of a failed sync), feeds it keys from its
// informers and notifications, calls Run once its caches are synced, and
// ShutDown when it stops. The loop owns the queue's life and the rules
// above, so that both controllers retry, forget and time keys the same way.
//
// A sync that fails after the loop's context ended is not retried: the
// process is stopping, and the next owner of the key (another replica, or
// this one restarted) looks at it anyway. Keys still queued at ShutDown are
// skipped, not synced: the queue hands them out until it is empty, and a
// pass after the stop began would act on state the controller is letting
// go of.
//
// # Metrics
//
// QueueMetrics is a workqueue.MetricsProvider on a Prometheus registry
// (client-go's own registers on a global one). Both controllers run in one
// `trainyard worker` process on one registry: the series carry the queue's
// name, and the second QueueMetrics on a registry shares the first's.
//
//	trainyard_workqueue_depth{name}                              gauge
//	trainyard_workqueue_adds_total{name}                         counter
//	trainyard_workqueue_queue_duration_seconds{name}             histogram: added → taken
//	trainyard_workqueue_work_duration_seconds{name}              histogram: one sync
//	trainyard_workqueue_unfinished_work_seconds{name}            gauge: grows while a sync hangs
//	trainyard_workqueue_longest_running_processor_seconds{name}  gauge
//	trainyard_workqueue_retries_total{name}                      counter: AddRateLimited
//
// name is "jobs" (the worker) or "tenants" (the tenant reconciler).
package controller
