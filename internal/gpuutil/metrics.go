package gpuutil

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainyard/trainyard/internal/store"
)

type metrics struct {
	used     *prometheus.GaugeVec
	idle     *prometheus.GaugeVec
	errors   prometheus.Counter
	duration prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		used: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_tenant_gpus_used",
			Help: "GPUs a tenant's running jobs keep busy, as DCGM measures them: the sum of each GPU's latest utilisation (two GPUs at 50% are 1), beside trainyard_tenant_gpus_allocated. Leader only, with --prometheus-url.",
		}, []string{"tenant"}),
		idle: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trainyard_tenant_idle_gpu_jobs",
			Help: "A tenant's running jobs with the IdleGPUs condition (every GPU below the tenant's idle threshold for its idle time). Leader only, with --prometheus-url.",
		}, []string{"tenant"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trainyard_gpu_poll_errors_total",
			Help: "Polls of Prometheus for GPU utilisation that failed in part or whole (the next poll reads the same windows).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "trainyard_gpu_poll_duration_seconds",
			Help:    "Time of one poll of Prometheus for the running jobs' GPU utilisation, recording included.",
			Buckets: prometheus.DefBuckets,
		}),
	}
	for _, c := range []prometheus.Collector{m.used, m.idle, m.errors, m.duration} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
		}
	}
	return m, nil
}

// set replaces the gauges: every tenant with running jobs gets a value.
func (m *metrics) set(jobs []store.GPUJob, used, idle map[string]float64) {
	m.used.Reset()
	m.idle.Reset()
	for _, j := range jobs {
		m.used.WithLabelValues(j.Tenant).Set(used[j.Tenant])
		m.idle.WithLabelValues(j.Tenant).Set(idle[j.Tenant])
	}
}

// reset clears the gauges when the poller stops (leadership lost).
func (m *metrics) reset() {
	m.used.Reset()
	m.idle.Reset()
}
