package gpuutil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// Store is what the poller reads and writes (*store.Store implements it).
type Store interface {
	GPUJobsRunning(ctx context.Context) ([]store.GPUJob, error)
	GPUFiguresRecord(ctx context.Context, r store.GPURecord) (bool, error)
	GPUIdleStop(ctx context.Context, tenant, uid, message string) (bool, error)
}

// Config configures a Poller.
type Config struct {
	// URL is Prometheus's base URL (http://prometheus:9090). Required.
	URL string
	// Store is required.
	Store Store
	// Interval between polls. Defaults to DefaultInterval.
	Interval time.Duration
	// Lag keeps a window's end this far behind the clock, so that the
	// scrapes of its last seconds are in Prometheus when it is read (a
	// sample is stamped with its scrape's start, and a window is read
	// once). Defaults to DefaultLag; at least the scrape timeout.
	Lag time.Duration
	// MaxWindow bounds the samples one query reads: a job seen for the
	// first time long after it started is caught up window by window.
	// Defaults to 1h.
	MaxWindow time.Duration
	// Stale: a job whose latest sample is older than this keeps its idle
	// verdict (no samples is no news). Defaults to max(3 Interval, 5m).
	Stale time.Duration
	// HTTPClient reaches Prometheus; defaults to api.DefaultRoundTripper.
	HTTPClient *http.Client
	// Registry receives the metrics; defaults to a private registry.
	Registry prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultInterval = time.Minute
	DefaultLag      = 30 * time.Second
	// jobsPerQuery bounds the pod regexp of a query.
	jobsPerQuery = 50
)

// Poller reads the running jobs' DCGM samples from Prometheus and keeps
// the figures and the idle verdict with the jobs.
type Poller struct {
	cfg     Config
	api     v1.API
	log     *slog.Logger
	metrics *metrics
}

// New checks cfg and builds a Poller.
func New(cfg Config) (*Poller, error) {
	if cfg.URL == "" || cfg.Store == nil {
		return nil, errors.New("gpuutil: URL and Store are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Lag <= 0 {
		cfg.Lag = DefaultLag
	}
	if cfg.MaxWindow <= 0 {
		cfg.MaxWindow = time.Hour
	}
	if cfg.Stale <= 0 {
		cfg.Stale = max(3*cfg.Interval, 5*time.Minute)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ac := api.Config{Address: cfg.URL}
	if cfg.HTTPClient != nil {
		ac.Client = cfg.HTTPClient
	}
	client, err := api.NewClient(ac)
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	return &Poller{cfg: cfg, api: v1.NewAPI(client), log: cfg.Logger, metrics: m}, nil
}

// Run polls every Interval until ctx ends. A failed poll is logged and
// counted; the next one reads the same windows (nothing is lost).
func (p *Poller) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	defer p.metrics.reset()
	for {
		if err := p.Poll(ctx); err != nil && ctx.Err() == nil {
			p.metrics.errors.Inc()
			p.log.Warn("reading GPU utilisation from Prometheus failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// window is one query: jobs of one namespace whose samples are counted
// up to the same time.
type window struct {
	ns       string
	from, to time.Time
	jobs     []int
}

// Poll reads one window of every running job and records it.
func (p *Poller) Poll(ctx context.Context) error {
	start := time.Now()
	jobs, err := p.cfg.Store.GPUJobsRunning(ctx)
	if err != nil {
		return err
	}
	end := p.cfg.Now().Add(-p.cfg.Lag).UTC().Truncate(time.Millisecond)
	windows := plan(jobs, end, p.cfg.MaxWindow)
	used := map[string]float64{}
	idle := map[string]float64{}
	var errs []error
	for _, w := range windows {
		for chunk := range chunks(w.jobs, jobsPerQuery) {
			if err := p.read(ctx, jobs, w, chunk, end, used, idle); err != nil {
				errs = append(errs, err)
			}
		}
	}
	p.metrics.set(jobs, used, idle)
	p.metrics.duration.Observe(time.Since(start).Seconds())
	return errors.Join(errs...)
}

// plan groups the jobs into windows (namespace, from, to): from is where
// each job's counted samples end (its start the first time), to the
// poll's end, at most MaxWindow later. Jobs with nothing to read are left
// out.
func plan(jobs []store.GPUJob, end time.Time, maxWindow time.Duration) []window {
	byKey := map[[3]string]*window{}
	var out []*window
	for i, j := range jobs {
		from := j.SampledTo
		if from.IsZero() {
			from = j.StartTime.Truncate(time.Millisecond)
		}
		to := end
		if to.Sub(from) > maxWindow {
			to = from.Add(maxWindow)
		}
		if !to.After(from) {
			continue
		}
		k := [3]string{j.Namespace, from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano)}
		w := byKey[k]
		if w == nil {
			w = &window{ns: j.Namespace, from: from, to: to}
			byKey[k] = w
			out = append(out, w)
		}
		w.jobs = append(w.jobs, i)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].ns != out[b].ns {
			return out[a].ns < out[b].ns
		}
		return out[a].from.Before(out[b].from)
	})
	res := make([]window, len(out))
	for i, w := range out {
		res[i] = *w
	}
	return res
}

func chunks(s []int, n int) func(yield func([]int) bool) {
	return func(yield func([]int) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}

// read queries one chunk of a window and records each job's figures.
func (p *Poller) read(ctx context.Context, jobs []store.GPUJob, w window, chunk []int, end time.Time, used, idle map[string]float64) error {
	names := make([]string, len(chunk))
	for i, k := range chunk {
		names[i] = jobs[k].Name
	}
	q := Selector(w.ns, names, w.to.Sub(w.from))
	val, warnings, _, err := p.api.Query(ctx, q, w.to)
	if err != nil {
		return fmt.Errorf("query %s: %w", q, err)
	}
	if len(warnings) > 0 {
		p.log.Debug("Prometheus warnings", "query", q, "warnings", warnings)
	}
	m, ok := val.(model.Matrix)
	if !ok {
		return fmt.Errorf("query %s: a %s, not a matrix", q, val.Type())
	}
	var errs []error
	for _, k := range chunk {
		j := jobs[k]
		rule := RuleOf(j.Scheduling)
		deltas, latest := Tally(m, PodReplicas(j.Name, j.Spec), rule.Busy)
		rec := store.GPURecord{Tenant: j.Tenant, UID: j.UID, From: j.SampledTo, Start: w.from, To: w.to}
		merged := map[string]job.GPUFigures{}
		for _, f := range j.Replicas {
			merged[f.Replica] = f
		}
		for _, r := range sortedKeys(deltas) {
			f := merged[r]
			f.Replica = r
			f.Merge(*deltas[r])
			merged[r] = f
			rec.Replicas = append(rec.Replicas, *deltas[r])
		}
		all := make([]job.GPUFigures, 0, len(merged))
		for _, f := range merged {
			all = append(all, f)
		}
		verdict, known := Decide(all, rule, w.to, p.cfg.Stale)
		rec.Measured, rec.UsedPercent = usedPercent(rec.Replicas, all, known)
		if !known || (verdict.Idle && !j.IdleSince.IsZero()) {
			verdict = store.GPUIdle{Idle: !j.IdleSince.IsZero(), Since: j.IdleSince}
		}
		rec.Idle = verdict
		changed, err := p.cfg.Store.GPUFiguresRecord(ctx, rec)
		switch {
		case errors.Is(err, store.ErrGPUWindowMoved):
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		if changed {
			p.log.Info("idle GPU verdict changed", "tenant", j.Tenant, "job", j.Name, "idle", verdict.Idle, "message", verdict.Message)
		}
		if w.to.Equal(end) {
			for _, v := range latest {
				used[j.Tenant] += min(max(v, 0), 100) / 100
			}
		}
		if verdict.Idle {
			idle[j.Tenant]++
		}
		if msg, stop := rule.Stop(verdict, w.to); stop {
			stopped, err := p.cfg.Store.GPUIdleStop(ctx, j.Tenant, j.UID, msg)
			if err != nil {
				errs = append(errs, err)
			} else if stopped {
				p.log.Info("cancelled a job for its idle GPUs", "tenant", j.Tenant, "job", j.Name, "message", msg)
			}
		}
	}
	return errors.Join(errs...)
}

// usedPercent is the utilisation a window's GPU-seconds are used at: its
// own samples' mean; with none (a window shorter than the scrape
// interval may fall between two scrapes) but recent samples (known), the
// job's mean so far; without recent samples, unknown: the exporter or the
// scrape is down, and no GPU-hours used are counted.
func usedPercent(window, all []job.GPUFigures, known bool) (bool, float64) {
	if f := job.SumGPUFigures(window); f.Samples > 0 {
		return true, f.MeanUtil()
	}
	if known {
		return true, job.SumGPUFigures(all).MeanUtil()
	}
	return false, 0
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
