package tenantctl

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainyard/trainyard/internal/tenant"
)

// Reasons of trainyard_tenant_reconcile_errors_total.
const (
	reasonStore       = "store"         // Postgres failed
	reasonKube        = "kubernetes"    // an API call failed (retried)
	reasonNotOwned    = "not_owned"     // the namespace exists without Trainyard's labels for this tenant
	reasonMisconfig   = "misconfigured" // the tenant's namespace is not <prefix><id>, or its quota does not render
	reasonTerminating = "terminating"   // an ACTIVE tenant's namespace is being deleted (by hand)
)

// metrics are the tenant reconciler's Prometheus metrics; names start with
// trainyard_tenant.
type metrics struct {
	states    *stateCounts
	errors    *prometheus.CounterVec
	writes    *prometheus.CounterVec
	duration  prometheus.Histogram
	offboards prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		states: &stateCounts{
			states: map[string]tenant.State{},
			desc: prometheus.NewDesc("trainyard_tenants",
				"Tenants by lifecycle state, as this worker last read them. Every worker reports the same numbers: aggregate with max, not sum.",
				[]string{"state"}, nil),
		},
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_tenant_reconcile_errors_total",
			Help: "Tenant reconcile passes that failed and will be retried, by reason: store, kubernetes, not_owned, misconfigured, terminating.",
		}, []string{"reason"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trainyard_tenant_object_writes_total",
			Help: "Writes to tenant namespace objects by kind and action (create, update, delete). Updates after the first create are repairs of drift.",
		}, []string{"kind", "action"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "trainyard_tenant_reconcile_duration_seconds",
			Help:    "Time of one reconcile pass of one tenant.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		offboards: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trainyard_tenant_offboardings_completed_total",
			Help: "Tenants this worker moved from OFFBOARDING to DELETED.",
		}),
	}
	reg.MustRegister(m.states, m.errors, m.writes, m.duration, m.offboards)
	for _, r := range []string{reasonStore, reasonKube, reasonNotOwned, reasonMisconfig, reasonTerminating} {
		m.errors.WithLabelValues(r) // export zeros, so rate() works from the start
	}
	return m
}

// stateCounts remembers each tenant's last seen state and counts them when
// scraped.
type stateCounts struct {
	desc   *prometheus.Desc
	mu     sync.Mutex
	states map[string]tenant.State
}

func (s *stateCounts) set(id string, st tenant.State) {
	s.mu.Lock()
	s.states[id] = st
	s.mu.Unlock()
}

func (s *stateCounts) forget(id string) {
	s.mu.Lock()
	delete(s.states, id)
	s.mu.Unlock()
}

func (s *stateCounts) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *stateCounts) Collect(ch chan<- prometheus.Metric) {
	counts := map[tenant.State]int{tenant.Active: 0, tenant.Offboarding: 0, tenant.Deleted: 0}
	s.mu.Lock()
	for _, st := range s.states {
		counts[st]++
	}
	s.mu.Unlock()
	for st, n := range counts {
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, float64(n), string(st))
	}
}
