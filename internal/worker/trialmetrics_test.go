package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/experiment"
	"github.com/trainyard/trainyard/internal/kube"
)

func TestParseMetricLines(t *testing.T) {
	at := time.Unix(100, 0)
	log := strings.Join([]string{
		"epoch 1 done",
		"trainyard-metric loss=0.9 accuracy=0.5 step=100",
		"trainyard-metric loss=NaN step=200", // rejected as a whole
		"trainyard-metric loss=0.7",          // no step: nothing to key it by
		"  trainyard-metric loss=0.4 step=300",
	}, "\n")
	got := parseMetricLines(strings.NewReader(log), at)
	require.Equal(t, []experiment.MetricPoint{
		{Name: "loss", Step: 100, Value: 0.9, Time: at},
		{Name: "accuracy", Step: 100, Value: 0.5, Time: at},
		{Name: "loss", Step: 300, Value: 0.4, Time: at},
	}, got)
}

func TestReportingPodIsTheChiefOrWorkerZero(t *testing.T) {
	pod := func(typ, index string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			kube.LabelReplicaType: typ, kube.LabelReplicaIndex: index}}}
	}
	require.True(t, reports(pod("chief", "0")))
	require.True(t, reports(pod("worker", "0")))
	require.False(t, reports(pod("worker", "1")))
	require.False(t, reports(pod("ps", "0")))
	require.False(t, reports(pod("evaluator", "0")))
}
