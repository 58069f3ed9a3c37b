package worker

import (
	"bufio"
	"context"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/experiment"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tune"
)

// Trial metrics (issue 46). A trial reports metrics by printing
// `trainyard-metric name=value step=N` lines; the worker that owns the
// trial's job reads them from the log of its chief (or of worker 0 when it
// has none):
//
//   - every MetricsInterval, for each running trial it owns whose pod is
//     in its cache, the lines since its last read of that job (less a few
//     seconds of overlap, so that nothing falls between two reads);
//   - once more when the job ends, before the save that ends it, so the
//     experiments controller, which reads a trial's objective when its job
//     has ended, sees the last points.
//
// Reading logs costs the API server a request per trial per interval;
// with SinceTime each returns only the new lines. Points are keyed by
// (job, name, step) in the store, so the overlap, a second read at the
// end, and a resumed trial printing a step again store nothing twice. A
// line without step= is not stored (there is nothing to key it by).

// MetricsStore is what the worker needs to store trial metrics
// (*store.Store).
type MetricsStore interface {
	// TrialRunningJobs returns the job uids of every RUNNING trial.
	TrialRunningJobs(ctx context.Context) (map[string]bool, error)
	TrialMetricsAdd(ctx context.Context, jobUID string, points []experiment.MetricPoint) (int, error)
}

var _ MetricsStore = (*store.Store)(nil)

// metricsOverlap is how far before the last read a read starts.
const metricsOverlap = 5 * time.Second

// maxMetricsLogBytes bounds one read of a trial's log.
const maxMetricsLogBytes = 16 << 20

func (w *Worker) runTrialMetrics(ctx context.Context) {
	t := time.NewTicker(w.cfg.MetricsInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := w.readRunningTrialMetrics(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("trial metrics not read", "error", err)
		}
	}
}

// readRunningTrialMetrics reads the metric lines of every running trial
// this worker owns.
func (w *Worker) readRunningTrialMetrics(ctx context.Context) error {
	running, err := w.cfg.Metrics.TrialRunningJobs(ctx)
	if err != nil || len(running) == 0 {
		return err
	}
	// The reporting pod of each job: its chief, else its worker 0.
	chosen := map[string]*corev1.Pod{}
	for _, obj := range w.pods.GetStore().List() {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		uid := pod.Labels[kube.LabelJobUID]
		if !running[uid] || !w.own.Owns(store.JobKey{Tenant: pod.Labels[kube.LabelTenant], UID: uid}) {
			continue
		}
		if reports(pod) && (chosen[uid] == nil || pod.Labels[kube.LabelReplicaType] == string(job.Chief)) {
			chosen[uid] = pod
		}
	}
	for uid, pod := range chosen {
		if pod.Status.Phase == corev1.PodPending {
			continue
		}
		w.readTrialMetrics(ctx, pod.Namespace, pod.Name, uid)
	}
	return nil
}

// reports says whether pod is one whose log holds its job's metrics: a
// chief, or worker 0.
func reports(pod *corev1.Pod) bool {
	switch job.ReplicaType(pod.Labels[kube.LabelReplicaType]) {
	case job.Chief:
		return true
	case job.Worker:
		return pod.Labels[kube.LabelReplicaIndex] == "0"
	}
	return false
}

// readTrialMetricsOfJob reads a trial's metrics as its job ends, from the
// pods its pass observed.
func (w *Worker) readTrialMetricsOfJob(ctx context.Context, p *pass) {
	var chosen *corev1.Pod
	for _, pod := range p.objs.pods {
		if reports(pod) && (chosen == nil || pod.Labels[kube.LabelReplicaType] == string(job.Chief)) {
			chosen = pod
		}
	}
	if chosen != nil {
		w.readTrialMetrics(ctx, chosen.Namespace, chosen.Name, p.key.UID)
	}
	w.metricsSince.Delete(p.key.UID)
}

// readTrialMetrics reads the metric lines a pod printed since the last
// read and stores their points. Failures are logged: the next read
// covers them.
func (w *Worker) readTrialMetrics(ctx context.Context, ns, pod, jobUID string) {
	start := time.Now()
	opts := &corev1.PodLogOptions{Container: kube.ContainerName, LimitBytes: ptr(int64(maxMetricsLogBytes))}
	if last, ok := w.metricsSince.Load(jobUID); ok {
		opts.SinceTime = &metav1.Time{Time: last.(time.Time).Add(-metricsOverlap)}
	}
	ctx, cancel := context.WithTimeout(ctx, logTailTimeout)
	defer cancel()
	rc, err := w.kube.CoreV1().Pods(ns).GetLogs(pod, opts).Stream(ctx)
	w.count("get", "pods/log", start, err)
	if err != nil {
		w.log.Debug("trial log unavailable", "pod", pod, "error", err)
		return
	}
	defer rc.Close()
	points := parseMetricLines(rc, start)
	if _, err := w.cfg.Metrics.TrialMetricsAdd(ctx, jobUID, points); err != nil {
		w.log.Warn("trial metrics not stored", "pod", pod, "error", err)
		return
	}
	w.metricsSince.Store(jobUID, start)
}

// parseMetricLines reads the points of every valid metric line with a
// step; at is their time.
func parseMetricLines(r io.Reader, at time.Time) []experiment.MetricPoint {
	var out []experiment.MetricPoint
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		m, ok, err := tune.ParseMetricLine(sc.Text())
		if !ok || err != nil || !m.HasStep {
			continue
		}
		for _, s := range m.Samples {
			out = append(out, experiment.MetricPoint{Name: s.Name, Step: m.Step, Value: s.Value, Time: at})
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }
