package cluster

import (
	"embed"
	"os"
	"strings"
)

// The kwok Stages that make simulated nodes Ready and pods behave like
// TensorFlow replicas. They are handed to kwok as its configuration file
// (kwok --config), not installed as CRDs; the one kwok CRD the cluster has is
// Logs (podlogs.go).
//
//go:embed stages/*.yaml
var stageFiles embed.FS

// Annotation keys a pod (through a Trainyard job spec's pod_annotations) sets
// to drive the simulated kubelet; see doc.go for the contract.
const (
	AnnotationRunFor       = "sim.trainyard.dev/run-for"
	AnnotationExitCode     = "sim.trainyard.dev/exit-code"
	AnnotationRunForever   = "sim.trainyard.dev/run-forever"
	AnnotationFailAttempts = "sim.trainyard.dev/fail-attempts"
	AnnotationReason       = "sim.trainyard.dev/reason"
	AnnotationMessage      = "sim.trainyard.dev/message"
	AnnotationHistory      = "sim.trainyard.dev/history"
	// AnnotationMetricsCurve "Q" (a digit, 0-9) makes a pod that succeeds
	// print the metric lines of curve Q (podlogs.go, MetricsCurveLoss): an
	// experiment trial's template sets it from a parameter.
	AnnotationMetricsCurve = "sim.trainyard.dev/metrics-curve"
	// AttemptLabel is the label Trainyard sets on a replica's pod: "0" for the
	// first run, "1" for the first restart, and so on.
	AttemptLabel = "trainyard.dev/attempt"
)

// StagesYAML returns all Stage documents as one multi-document YAML stream.
func StagesYAML() (string, error) {
	entries, err := stageFiles.ReadDir("stages")
	if err != nil {
		return "", err
	}
	var docs []string
	for _, e := range entries {
		data, err := stageFiles.ReadFile("stages/" + e.Name())
		if err != nil {
			return "", err
		}
		docs = append(docs, strings.TrimSpace(string(data)))
	}
	return strings.Join(docs, "\n---\n") + "\n", nil
}

// writeKwokConfig writes kwok's --config: the Stages and the ClusterLogs
// fallback for pod logs.
func writeKwokConfig(path string) error {
	y, err := StagesYAML()
	if err != nil {
		return err
	}
	y += "---\n" + clusterLogsYAML()
	return os.WriteFile(path, []byte(y), 0o644)
}
