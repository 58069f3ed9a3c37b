package controller

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// queueMetrics is a workqueue.MetricsProvider on a registry.
type queueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

// QueueMetrics returns the workqueue metrics provider of reg: the queues
// given it report trainyard_workqueue_*{name="<queue>"}. Calling it again
// with the same registry (a second controller in the process) returns a
// provider on the same series.
func QueueMetrics(reg prometheus.Registerer) workqueue.MetricsProvider {
	buckets := prometheus.ExponentialBuckets(0.0005, 4, 10) // 0.5ms .. ~2m
	return &queueMetrics{
		depth: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_workqueue_depth", Help: "Keys waiting in the work queue.",
		}, []string{"name"})),
		adds: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_workqueue_adds_total", Help: "Adds to the work queue.",
		}, []string{"name"})),
		latency: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "trainyard_workqueue_queue_duration_seconds", Help: "Time a key waits in the queue before a sync takes it.",
			Buckets: buckets,
		}, []string{"name"})),
		work: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "trainyard_workqueue_work_duration_seconds", Help: "Time a sync holds a key.",
			Buckets: buckets,
		}, []string{"name"})),
		unfinished: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_workqueue_unfinished_work_seconds", Help: "Seconds of work in progress not yet finished (grows when a sync hangs).",
		}, []string{"name"})),
		longest: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_workqueue_longest_running_processor_seconds", Help: "Seconds the longest running sync has been running.",
		}, []string{"name"})),
		retries: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_workqueue_retries_total", Help: "Rate-limited re-adds (retries after errors).",
		}, []string{"name"})),
	}
}

// register registers c on reg, or returns the collector registered there
// before under the same name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(err)
}

func (q *queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return q.depth.WithLabelValues(name)
}

func (q *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return q.adds.WithLabelValues(name)
}

func (q *queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return q.latency.WithLabelValues(name)
}

func (q *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return q.work.WithLabelValues(name)
}

func (q *queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.unfinished.WithLabelValues(name)
}

func (q *queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.longest.WithLabelValues(name)
}

func (q *queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return q.retries.WithLabelValues(name)
}
