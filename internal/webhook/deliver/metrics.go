package deliver

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainyard/trainyard/internal/store"
)

type metrics struct {
	attempts *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_webhook_attempts_total",
			Help: "Webhook delivery attempts by outcome (delivered, retry, gone) and status class.",
		}, []string{"outcome", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trainyard_webhook_attempt_seconds",
			Help:    "Time from sending a webhook request to its response's headers.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.latency)
	}
	return m
}

func (m *metrics) observe(_ string, a store.Attempt) {
	outcome := map[store.Outcome]string{store.Delivered: "delivered", store.Retry: "retry", store.Gone: "gone"}[a.Outcome]
	code := "none"
	if a.StatusCode > 0 {
		code = strconv.Itoa(a.StatusCode/100) + "xx"
	}
	m.attempts.WithLabelValues(outcome, code).Inc()
	m.latency.WithLabelValues(outcome).Observe(a.Latency.Seconds())
}
