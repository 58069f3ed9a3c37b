package cluster

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// Pod logs of the simulated kubelet (see doc.go, "Pod logs"). kwok serves
// `kubectl logs` from files in CRI log format; the pod Stages point each pod
// at one of them with a kwok Logs object (kwok.x-k8s.io/v1alpha1, namespaced,
// named after the pod, owned by it) chosen by the outcome the annotations ask
// for; a ClusterLogs rule in kwok.yaml covers any pod without one.
const (
	// PodLogDir is the directory, relative to the state directory (kwok's
	// working directory), holding the log files.
	PodLogDir = "pod-logs"
	// LogFileRunning is the log of a replica that has not ended yet
	// (run-forever): the progress part only.
	LogFileRunning = "running.log"
	// LogFileSucceeded is the progress part and then LogLineSucceeded.
	LogFileSucceeded = "succeeded.log"
	// LogFileFailed is the progress part, a Python traceback on stderr and
	// then LogLineFailed.
	LogFileFailed = "failed.log"

	// LogLineStep starts each progress line: "step N loss=... accuracy=...".
	LogLineStep = "step "
	// LogLineSucceeded is the last line of a replica that exits with code 0.
	LogLineSucceeded = "training finished"
	// LogLineFailed is the last line of a replica that exits non-zero.
	LogLineFailed = "RuntimeError: simulated failure"
)

// kwokLogsCRD is the definition of kwok's namespaced Logs resource, which
// kwok watches with --enable-crds=Logs. With kwokPortForwardCRD (PortForward,
// --enable-crds=PortForward: where a port-forward to a pod goes) they are the
// only APIs this cluster adds to the built-in ones.
//
//go:embed crds/logs.kwok.x-k8s.io.yaml
var kwokLogsCRD []byte

//go:embed crds/portforwards.kwok.x-k8s.io.yaml
var kwokPortForwardCRD []byte

var (
	crdGVR  = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	kwokGV  = schema.GroupVersion{Group: "kwok.x-k8s.io", Version: "v1alpha1"}
	logsGVR = kwokGV.WithResource("logs")
	pfGVR   = kwokGV.WithResource("portforwards")
)

// KwokPortForwardResource is kwok's PortForward resource: one object per
// pod, named after it, saying where port-forwards to its ports go.
func KwokPortForwardResource() schema.GroupVersionResource { return pfGVR }

// KwokLogsResource is kwok's Logs resource: one object per pod, named after
// it, saying which file its containers' logs come from.
func KwokLogsResource() schema.GroupVersionResource { return logsGVR }

type logLine struct {
	stream string // "stdout" or "stderr"
	text   string
}

// progressLines is what every simulated replica prints while it trains: a
// banner, TensorFlow's start-up messages (stamped like TensorFlow's C++
// logging, at start) and one line per step.
func progressLines(start time.Time) []logLine {
	tf := start.UTC().Format("2006-01-02 15:04:05.000000")
	lines := []logLine{
		{"stdout", "[trainyard-sim] simulated TensorFlow replica: this log is served by kwok, no container runs"},
		{"stderr", tf + ": I tensorflow/core/platform/cpu_feature_guard.cc:210] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations."},
		{"stderr", tf + ": I tensorflow/core/distributed_runtime/rpc/grpc_server_lib.cc:457] Started server with target: grpc://localhost:2222"},
		{"stdout", "Epoch 1/1"},
	}
	loss, acc := 2.3026, 0.1016
	for step := 1; step <= 10; step++ {
		lines = append(lines, logLine{"stdout", fmt.Sprintf("%s%d loss=%.4f accuracy=%.4f", LogLineStep, step, loss, acc)})
		loss *= 0.78
		acc += (0.98 - acc) * 0.35
	}
	return lines
}

// MetricsCurves is how many metric curves there are (metrics-0.log to
// metrics-9.log), MetricsSteps the steps of each.
const (
	MetricsCurves = 10
	MetricsSteps  = 10
)

// MetricsCurveLoss is the loss curve q reports at step: decreasing with
// the step, larger for a larger q at every step, so that the best final
// loss is curve 0's and the median rule stops the larger ones.
func MetricsCurveLoss(q, step int) float64 {
	return (0.2 + 0.1*float64(q)) * math.Pow(0.85, float64(step))
}

// metricsLines is what a simulated trial of curve q prints: a banner, one
// metric line per step, the succeeded line.
func metricsLines(q int) []logLine {
	lines := []logLine{{"stdout", "[trainyard-sim] simulated experiment trial, metrics curve " + strconv.Itoa(q)}}
	for step := 1; step <= MetricsSteps; step++ {
		lines = append(lines, logLine{"stdout", fmt.Sprintf("trainyard-metric loss=%s step=%d",
			strconv.FormatFloat(MetricsCurveLoss(q, step), 'g', -1, 64), step)})
	}
	return append(lines, logLine{"stdout", LogLineSucceeded})
}

func succeededLines(start time.Time) []logLine {
	return append(progressLines(start),
		logLine{"stdout", "saved checkpoint to /tmp/trainyard/ckpt-10"},
		logLine{"stdout", LogLineSucceeded},
	)
}

func failedLines(start time.Time) []logLine {
	return append(progressLines(start),
		logLine{"stderr", "Traceback (most recent call last):"},
		logLine{"stderr", `  File "/app/train.py", line 87, in <module>`},
		logLine{"stderr", "    model.fit(dataset, epochs=EPOCHS, steps_per_epoch=STEPS)"},
		logLine{"stderr", `  File "/usr/local/lib/python3.11/dist-packages/keras/src/utils/traceback_utils.py", line 122, in error_handler`},
		logLine{"stderr", "    raise e.with_traceback(filtered_tb) from None"},
		logLine{"stderr", LogLineFailed},
	)
}

// criLog renders lines in the CRI log format kwok (like the kubelet) reads:
// "<RFC3339Nano time> <stream> F <text>". Line i is stamped start + i*100ms.
func criLog(start time.Time, lines []logLine) []byte {
	var b strings.Builder
	for i, l := range lines {
		ts := start.Add(time.Duration(i) * 100 * time.Millisecond).UTC().Format(time.RFC3339Nano)
		fmt.Fprintf(&b, "%s %s F %s\n", ts, l.stream, l.text)
	}
	return []byte(b.String())
}

// writePodLogs writes the three log files into dir, stamped from start (the
// cluster's start).
func writePodLogs(dir string, start time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, lines := range map[string][]logLine{
		LogFileRunning:   progressLines(start),
		LogFileSucceeded: succeededLines(start),
		LogFileFailed:    failedLines(start),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), criLog(start, lines), 0o644); err != nil {
			return err
		}
	}
	for q := range MetricsCurves {
		name := fmt.Sprintf("metrics-%d.log", q)
		if err := os.WriteFile(filepath.Join(dir, name), criLog(start, metricsLines(q)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// clusterLogsYAML is the kwok ClusterLogs rule for pods that have no Logs
// object (yet): every container of every pod reads the progress part.
func clusterLogsYAML() string {
	return `# Fallback for pods without a Logs object of their own (the pod-running
# Stage applies one per pod): the progress part. Paths are relative to kwok's
# working directory, the state directory. follow is accepted but unused by
# kwok v0.8.0: a request with follow=true streams until the client goes.
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: trainyard-default
spec:
  logs:
  - logsFile: ` + PodLogDir + "/" + LogFileRunning + `
    follow: true
`
}

// installKwokCRDs creates the Logs and PortForward CRDs and waits until the
// API server serves them, so that kwok (started after) finds them in
// discovery and can watch them.
func installKwokCRDs(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface, s *State) error {
	if err := installKwokCRD(ctx, dyn, disc, s, kwokLogsCRD, logsGVR); err != nil {
		return err
	}
	return installKwokCRD(ctx, dyn, disc, s, kwokPortForwardCRD, pfGVR)
}

func installKwokCRD(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface, s *State, crd []byte, gvr schema.GroupVersionResource) error {
	data, err := yaml.ToJSON(crd)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &obj.Object); err != nil {
		return err
	}
	_, err = dyn.Resource(crdGVR).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD %s: %w", obj.GetName(), err)
	}
	return waitFor(ctx, "CRD "+obj.GetName()+" served", s, func() bool {
		got, err := dyn.Resource(crdGVR).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil || !crdEstablished(got) {
			return false
		}
		list, err := disc.ServerResourcesForGroupVersion(kwokGV.String())
		if err != nil {
			return false
		}
		return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource })
	})
}

func crdEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
