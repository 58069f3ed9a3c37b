package scheduler

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// metrics are the scheduler's, all trainyard_scheduler_. The queue gauges
// are set by the leader only (and cleared when it steps down): take max
// over processes.
type metrics struct {
	leader           prometheus.Gauge
	pending          *prometheus.GaugeVec
	pendingDemand    *prometheus.GaugeVec
	admissionLatency prometheus.Histogram
	admissions       prometheus.Counter
	preemptions      *prometheus.CounterVec
	cycleSeconds     *prometheus.HistogramVec
	cycleErrors      prometheus.Counter
	budget           *prometheus.GaugeVec
	decayedUsage     *prometheus.GaugeVec
	// Per tenant, from the usage ledger (leader only).
	gpusAllocated *prometheus.GaugeVec
	gpuHours      *ledgerCounter
	oldestWait    *prometheus.GaugeVec
	queueLength   *prometheus.GaugeVec
	gpuQuota      *prometheus.GaugeVec
	gpuCapacity   *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "trainyard_scheduler_leader",
			Help: "1 while this process holds the scheduler lease.",
		}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_scheduler_pending_jobs",
			Help: "Jobs waiting to be admitted, by tenant and reason (QUOTA, CAPACITY, PRIORITY, ORDER, PREEMPTED, UNSCHEDULABLE), as of the last cycle.",
		}, []string{"tenant", "reason"}),
		pendingDemand: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_scheduler_pending_demand",
			Help: "What the waiting jobs ask for, by tenant, reason and resource (cpu in cores, memory in bytes, nvidia.com/gpu, pods).",
		}, []string{"tenant", "reason", "resource"}),
		admissionLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "trainyard_scheduler_admission_latency_seconds",
			Help:    "From a job entering the queue (submission or requeue) to its admission.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}),
		admissions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trainyard_scheduler_admissions_total",
			Help: "Jobs admitted.",
		}),
		preemptions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_scheduler_preemptions_total",
			Help: "Running jobs preempted, by what the preempting job lacked: QUOTA or CAPACITY.",
		}, []string{"reason"}),
		cycleSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trainyard_scheduler_cycle_duration_seconds",
			Help:    "Time of a scheduling cycle, by phase: snapshot (Postgres and informers), decide (admission.Schedule), commit (decisions and queue view), total.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"phase"}),
		cycleErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trainyard_scheduler_cycle_errors_total",
			Help: "Scheduling cycles that failed (retried on the next trigger or period).",
		}),
		budget: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_scheduler_tenant_budget_gpu_hours",
			Help: "A tenant's GPU-hour budget in its current period, by kind: budget, used, remaining (never below 0). Tenants with a budget only; leader only.",
		}, []string{"tenant", "kind"}),
		decayedUsage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_scheduler_tenant_decayed_usage",
			Help: "A tenant's decayed usage (fair share that remembers), by resource (cpu in cores, memory in bytes, nvidia.com/gpu, pods). Tenants with a usage half-life only; leader only.",
		}, []string{"tenant", "resource"}),
		gpusAllocated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_tenant_gpus_allocated",
			Help: "GPUs a tenant's admitted jobs hold, from the usage ledger (allocated, not measured). Leader only, every scheduler UsageRefresh.",
		}, []string{"tenant"}),
		gpuHours: &ledgerCounter{desc: prometheus.NewDesc("trainyard_tenant_gpu_hours_total",
			"GPU-hours a tenant's jobs held (allocated) since the start of the UTC month, from the usage ledger: a counter that resets at each month's start. Leader only, every scheduler UsageRefresh.",
			[]string{"tenant"}, nil)},
		oldestWait: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_tenant_oldest_wait_seconds",
			Help: "How long a tenant's longest-waiting job has waited for admission (since it entered the queue), as of the last cycle. Leader only.",
		}, []string{"tenant"}),
		queueLength: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_tenant_queue_length",
			Help: "Jobs of a tenant waiting for admission, whatever the reason, as of the last cycle (trainyard_scheduler_pending_jobs has them by reason). Leader only.",
		}, []string{"tenant"}),
	}
	m.gpuQuota = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "trainyard_tenant_gpu_quota",
		Help: "A tenant's GPU quota (tenants with one), beside trainyard_tenant_gpus_allocated. Leader only.",
	}, []string{"tenant"})
	// A vector without labels, so that stepping down removes it.
	m.gpuCapacity = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "trainyard_scheduler_gpu_capacity",
		Help: "GPUs of the nodes that take new pods, in every READY cluster this scheduler places on, every UsageRefresh (the queue sample's). Leader only.",
	}, nil)
	reg.MustRegister(m.gpusAllocated, m.gpuHours, m.oldestWait, m.queueLength, m.gpuQuota, m.gpuCapacity)
	reg.MustRegister(m.budget, m.decayedUsage)
	reg.MustRegister(m.leader, m.pending, m.pendingDemand, m.admissionLatency, m.admissions, m.preemptions, m.cycleSeconds, m.cycleErrors)
	return m
}

func (m *metrics) observeCycle(start, read, decided, end time.Time) {
	m.cycleSeconds.WithLabelValues("snapshot").Observe(read.Sub(start).Seconds())
	m.cycleSeconds.WithLabelValues("decide").Observe(decided.Sub(read).Seconds())
	m.cycleSeconds.WithLabelValues("commit").Observe(end.Sub(decided).Seconds())
	m.cycleSeconds.WithLabelValues("total").Observe(end.Sub(start).Seconds())
}

// observeDecision counts what the commit did and sets the queue gauges.
func (m *metrics) observeDecision(v view, d admission.Decision, res store.SchedulerCommitResult, now time.Time) {
	for _, a := range res.Admitted {
		m.admissions.Inc()
		m.admissionLatency.Observe(max(now.Sub(a.QueuedAt), 0).Seconds())
	}
	done := map[store.JobKey]bool{}
	for _, k := range res.Preempted {
		done[k] = true
	}
	for _, p := range d.Preempt {
		if done[store.JobKey(p.Victim)] {
			m.preemptions.WithLabelValues(string(p.Reason)).Inc()
		}
	}
	m.resetQueue()
	demand := map[admission.Key]job.Vector{}
	for _, j := range v.snap.Jobs {
		for _, g := range j.Groups {
			demand[j.Key] = demand[j.Key].Add(g.Request.Times(int64(g.Count)))
		}
	}
	oldest := map[string]time.Duration{}
	for _, w := range d.Waiting {
		if q := v.jobs[w.Key].QueuedAt; !q.IsZero() {
			oldest[w.Key.Tenant] = max(oldest[w.Key.Tenant], now.Sub(q))
		}
	}
	for id, age := range oldest {
		m.oldestWait.WithLabelValues(id).Set(max(age, 0).Seconds())
	}
	for _, w := range d.Waiting {
		reason := string(w.Reason)
		m.queueLength.WithLabelValues(w.Key.Tenant).Inc()
		m.pending.WithLabelValues(w.Key.Tenant, reason).Inc()
		for _, r := range job.AllResources {
			amount := float64(demand[w.Key][r])
			if r == job.CPU {
				amount /= 1000
			}
			m.pendingDemand.WithLabelValues(w.Key.Tenant, reason, r.Name()).Add(amount)
		}
	}
}

func (m *metrics) resetQueue() {
	m.pending.Reset()
	m.pendingDemand.Reset()
	m.oldestWait.Reset()
	m.queueLength.Reset()
}

func (m *metrics) resetHeld() {
	m.gpuCapacity.Reset()
	m.gpusAllocated.Reset()
	m.gpuHours.set(nil)
}

// observeHeld sets the ledger's gauges and counters.
func (m *metrics) observeHeld(held map[string]store.TenantHeld) {
	m.gpusAllocated.Reset()
	hours := make(map[string]float64, len(held))
	for id, h := range held {
		m.gpusAllocated.WithLabelValues(id).Set(float64(h.GPUs))
		hours[id] = h.GPUSeconds / 3600
	}
	m.gpuHours.set(hours)
}

// ledgerCounter exposes the ledger's monthly GPU-hours as counters: the
// ledger, not this process, counts them, so a new leader goes on from
// the same value.
type ledgerCounter struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	by   map[string]float64
}

func (c *ledgerCounter) set(by map[string]float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.by = by
}

func (c *ledgerCounter) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *ledgerCounter) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, v := range c.by {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, v, id)
	}
}

// observeSharing sets the tenants' budget and decayed usage gauges.
func (m *metrics) observeSharing(v view) {
	m.resetSharing()
	for _, t := range v.snap.Tenants {
		if q := t.Quota[job.GPU]; q > 0 {
			m.gpuQuota.WithLabelValues(t.ID).Set(float64(q))
		}
		if b := t.Sharing.Budget; b.GPUHours > 0 {
			m.budget.WithLabelValues(t.ID, "budget").Set(b.GPUHours)
			m.budget.WithLabelValues(t.ID, "used").Set(b.UsedGPUHours)
			m.budget.WithLabelValues(t.ID, "remaining").Set(max(b.GPUHours-b.UsedGPUHours, 0))
		}
		if v.sharing[t.ID].UsageHalfLifeSeconds > 0 {
			for _, r := range job.AllResources {
				amount := t.Sharing.Usage[r]
				if r == job.CPU {
					amount /= 1000
				}
				m.decayedUsage.WithLabelValues(t.ID, r.Name()).Set(amount)
			}
		}
	}
}

func (m *metrics) resetSharing() {
	m.gpuQuota.Reset()
	m.budget.Reset()
	m.decayedUsage.Reset()
}
