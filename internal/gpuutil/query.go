package gpuutil

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/trainyard/trainyard/internal/job"
)

// The DCGM exporter's series and labels (NVIDIA dcgm-exporter, with its
// Kubernetes pod mapping on: pod, namespace and container name the pod
// that holds the GPU). Prometheus must keep the exporter's pod and
// namespace labels (honor_labels: true, as the exporter's ServiceMonitor
// sets), not rename them exported_pod and exported_namespace.
const (
	MetricUtil     = "DCGM_FI_DEV_GPU_UTIL" // percent, an integer 0..100
	MetricFB       = "DCGM_FI_DEV_FB_USED"  // MiB
	LabelNamespace = "namespace"
	LabelPod       = "pod"
	LabelUUID      = "UUID"
	LabelGPU       = "gpu"
)

// replicaTypes is the pod name regexp's alternation of replica types.
var replicaTypes = strings.Join([]string{string(job.Chief), string(job.Worker), string(job.PS), string(job.Evaluator)}, "|")

// Selector is the PromQL range selector of both DCGM series of the pods
// of jobs (their names) in namespace ns, over the window ending at the
// query's time: evaluated at t it returns every raw sample in
// (t-window, t] (range selectors are left-open since Prometheus 3), so
// successive windows neither miss nor repeat a sample.
func Selector(ns string, jobs []string, window time.Duration) string {
	return Series(ns, jobs) + `[` + strconv.FormatInt(max(window.Milliseconds(), 1), 10) + `ms]`
}

// Series is the PromQL instant selector of both DCGM series of the pods
// of jobs (their names) in namespace ns.
func Series(ns string, jobs []string) string {
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = regexp.QuoteMeta(j)
	}
	slices.Sort(names)
	pods := "(?:" + strings.Join(names, "|") + ")-(?:" + replicaTypes + ")-[0-9]+"
	return `{__name__=~"` + MetricUtil + `|` + MetricFB + `",` +
		LabelNamespace + `=` + strconv.Quote(ns) + `,` +
		LabelPod + `=~` + strconv.Quote(pods) + `}`
}

// PodReplicas maps the pod names of a job's replicas to the replicas'
// names (worker-0).
func PodReplicas(name string, spec job.Spec) map[string]string {
	out := map[string]string{}
	for _, r := range spec.Replicas {
		for i := range max(r.Count, 1) {
			out[job.PodName(name, r.Type, i)] = job.ReplicaName(r.Type, i)
		}
	}
	return out
}

// Tally sums a query's raw samples (a matrix) by replica. pods maps each
// pod to its replica (PodReplicas; other pods are skipped); busy says
// whether a utilisation sample counts as busy (at or above the idle
// threshold). It also returns the latest utilisation of each GPU in the
// matrix (percent, by UUID, or pod and gpu index when there is none), for
// the GPUs-used gauge.
func Tally(m model.Matrix, pods map[string]string, busy func(float64) bool) (byReplica map[string]*job.GPUFigures, latest map[string]float64) {
	byReplica = map[string]*job.GPUFigures{}
	latest = map[string]float64{}
	for _, s := range m {
		pod := string(s.Metric[LabelPod])
		replica, ok := pods[pod]
		if !ok || len(s.Values) == 0 {
			continue
		}
		f := byReplica[replica]
		if f == nil {
			f = &job.GPUFigures{Replica: replica}
			byReplica[replica] = f
		}
		uuid := string(s.Metric[LabelUUID])
		f.AddGPU(uuid)
		switch string(s.Metric[model.MetricNameLabel]) {
		case MetricUtil:
			for _, p := range s.Values {
				v := float64(p.Value)
				f.AddUtil(v, p.Timestamp.Time().UTC(), busy(v))
			}
			key := uuid
			if key == "" {
				key = pod + "/" + string(s.Metric[LabelGPU])
			}
			latest[key] = float64(s.Values[len(s.Values)-1].Value)
		case MetricFB:
			for _, p := range s.Values {
				f.AddFB(float64(p.Value), p.Timestamp.Time().UTC())
			}
		}
	}
	return byReplica, latest
}
