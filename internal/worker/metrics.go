package worker

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"github.com/trainyard/trainyard/internal/controller"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/worker/ownership"
)

// metrics are the worker's Prometheus metrics. Names start with
// trainyard_worker_ (trainyard_workqueue_ for the queue's own).
type metrics struct {
	ownedJobs        prometheus.GaugeFunc
	jobs             jobsByState
	queued           *queueInPostgres
	transitions      *prometheus.CounterVec
	requeues         *prometheus.CounterVec
	orphans          *prometheus.CounterVec
	dispatchLatency  prometheus.Histogram
	reconcileSeconds prometheus.Histogram
	reconcileErrors  *prometheus.CounterVec
	kubeRequests     *prometheus.CounterVec
	kubeSeconds      *prometheus.HistogramVec
	kubeErrors       *prometheus.CounterVec
	claimed          prometheus.Counter
	claimDelay       prometheus.Histogram
	leasesLost       prometheus.Counter
	queue            workqueue.MetricsProvider
}

// Reasons of trainyard_worker_reconcile_errors_total.
const (
	errReasonStore    = "store"      // Postgres failed
	errReasonConflict = "conflict"   // the job changed under us; re-read at once
	errReasonLease    = "lease"      // the job is no longer ours
	errReasonKube     = "kubernetes" // a retryable API error
	errReasonTerminal = "terminal"   // an API error that failed the job
	errReasonNotSync  = "not_synced"
)

func newMetrics(reg prometheus.Registerer, w *Worker) *metrics {
	m := &metrics{
		ownedJobs: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "trainyard_worker_owned_jobs",
			Help: "Jobs this worker holds a lease on (starting, running or being cleaned up; jobs waiting for admission are not held).",
		}, func() float64 { return float64(w.own.Count()) }),
		jobs: jobsByState{own: w.own, desc: prometheus.NewDesc("trainyard_worker_jobs",
			"Jobs this worker owns, by state as last reconciled. Sum over workers for the cluster-wide picture of unfinished jobs.",
			[]string{"state"}, nil)},
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_worker_job_transitions_total",
			Help: "Jobs that entered a state, as written by this worker.",
		}, []string{"state"}),
		requeues: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_worker_requeues_total",
			Help: "Jobs this worker sent back to the scheduler's queue, by reason: Preempted, Unschedulable (pods unplaced past the timeout), or Suspended (held until resumed).",
		}, []string{"reason"}),
		orphans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_worker_orphans_deleted_total",
			Help: "Pods and Services deleted by the orphan sweep: Trainyard objects whose job is purged, or finished and cleaned up.",
		}, []string{"resource"}),
		dispatchLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "trainyard_worker_dispatch_latency_seconds",
			Help:    "From a job's creation (the acknowledged submit) to all of its objects created in Kubernetes.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		reconcileSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "trainyard_worker_reconcile_duration_seconds",
			Help:    "Time of one reconcile pass of one job.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		reconcileErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_worker_reconcile_errors_total",
			Help: "Reconcile passes that did not complete, by reason: store, conflict, lease, kubernetes, terminal, not_synced.",
		}, []string{"reason"}),
		kubeRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_worker_kube_requests_total",
			Help: "Kubernetes API calls by verb and resource (writes, log reads, and the reads of adoption and letting go).",
		}, []string{"verb", "resource"}),
		kubeSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "trainyard_worker_kube_request_seconds",
			Help: "How long the worker's Kubernetes API calls took, as the worker saw them (its client's rate limiting included), by verb and resource.",
			// 1 ms to 10 s.
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 11),
		}, []string{"verb", "resource"}),
		kubeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_worker_kube_api_errors_total",
			Help: "Kubernetes API errors by verb, resource and reason (AlreadyExists on create and NotFound on delete are not errors).",
		}, []string{"verb", "resource", "reason"}),
		claimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trainyard_worker_jobs_claimed_total",
			Help: "Jobs this worker claimed.",
		}),
		claimDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "trainyard_worker_claim_delay_seconds",
			Help:    "From a job's admission (its Admitted condition, the scheduler's clock) to this worker's claim of it, for jobs claimed before their pods exist (STARTING): how long admitted jobs wait for a worker.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		leasesLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trainyard_worker_leases_lost_total",
			Help: "Jobs this worker stopped owning without finishing them (lease expired or taken over).",
		}),
		queue:  controller.QueueMetrics(reg),
		queued: newQueueInPostgres(w.cfg.Store),
	}
	reg.MustRegister(m.ownedJobs, m.jobs, m.queued, m.transitions, m.requeues, m.orphans, m.dispatchLatency,
		m.reconcileSeconds, m.reconcileErrors, m.kubeRequests, m.kubeSeconds, m.kubeErrors, m.claimed, m.claimDelay, m.leasesLost)
	return m
}

// jobsByState counts owned jobs by their last reconciled state when
// scraped.
type jobsByState struct {
	desc *prometheus.Desc
	own  *ownership.Set
}

func (c jobsByState) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c jobsByState) Collect(ch chan<- prometheus.Metric) {
	counts := c.own.ByState()
	for _, s := range job.States {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
}

// queueInPostgres reports the unfinished jobs of all tenants from Postgres
// when scraped: owned-job gauges miss the jobs no worker holds (waiting for
// quota, or not claimed yet). Every worker reports the same numbers: take
// max, not sum.
type queueInPostgres struct {
	store   Store
	byState *prometheus.Desc
	waiting *prometheus.Desc
	up      *prometheus.Desc
}

func newQueueInPostgres(st Store) *queueInPostgres {
	return &queueInPostgres{
		store: st,
		byState: prometheus.NewDesc("trainyard_jobs",
			"Unfinished jobs of all tenants by state, from Postgres (every worker reports the same: aggregate with max).",
			[]string{"state"}, nil),
		waiting: prometheus.NewDesc("trainyard_jobs_waiting_for_quota",
			"QUEUED jobs of all tenants waiting for their tenant's quota, from Postgres (aggregate with max).", nil, nil),
		up: prometheus.NewDesc("trainyard_jobs_scrape_ok",
			"1 when the job counts above could be read from Postgres.", nil, nil),
	}
}

func (q *queueInPostgres) Describe(ch chan<- *prometheus.Desc) {
	ch <- q.byState
	ch <- q.waiting
	ch <- q.up
}

func (q *queueInPostgres) Collect(ch chan<- prometheus.Metric) {
	if q.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, waiting, err := q.store.JobCounts(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(q.up, prometheus.GaugeValue, 0)
		return
	}
	for _, s := range []job.State{job.Queued, job.Starting, job.Running, job.Restarting} {
		ch <- prometheus.MustNewConstMetric(q.byState, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
	ch <- prometheus.MustNewConstMetric(q.waiting, prometheus.GaugeValue, float64(waiting))
	ch <- prometheus.MustNewConstMetric(q.up, prometheus.GaugeValue, 1)
}
