package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSummarizeAudit(t *testing.T) {
	ev := func(stage, ua, verb, res, sub, recv string, ms int) string {
		r, _ := time.Parse(time.RFC3339Nano, recv)
		return `{"kind":"Event","stage":"` + stage + `","verb":"` + verb + `","userAgent":"` + ua +
			`","objectRef":{"resource":"` + res + `","subresource":"` + sub + `","namespace":"ns"},` +
			`"requestReceivedTimestamp":"` + r.Format(time.RFC3339Nano) +
			`","stageTimestamp":"` + r.Add(time.Duration(ms)*time.Millisecond).Format(time.RFC3339Nano) + `"}`
	}
	log := strings.Join([]string{
		ev("ResponseComplete", "trainyard", "create", "pods", "", "2026-12-02T08:00:00.000001Z", 100),
		ev("ResponseComplete", "trainyard", "create", "pods", "", "2026-12-02T08:00:01Z", 20),
		ev("ResponseComplete", "trainyard", "create", "pods", "", "2026-12-02T08:00:02Z", 30),
		ev("ResponseComplete", "bench.test/v0.0.0 (linux/amd64) kubernetes/$Format", "create", "pods", "", "2026-12-02T08:00:03Z", 10),
		ev("ResponseComplete", "kwok/v0.7.0", "patch", "pods", "status", "2026-12-02T08:00:04Z", 5),
		ev("Panic", "kwok/v0.7.0", "patch", "pods", "status", "2026-12-02T08:00:04Z", 5),
		ev("ResponseComplete", "trainyard", "create", "pods", "", "2026-12-02T09:00:00Z", 1000), // after the window
	}, "\n")
	from, _ := time.Parse(time.RFC3339, "2026-12-02T08:00:00Z")
	rows, err := SummarizeAudit(strings.NewReader(log), from, from.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, []AuditRow{
		{Client: "bench.test", Verb: "create", Resource: "pods", Count: 1, Mean: 10 * time.Millisecond, P50: 10 * time.Millisecond, P99: 10 * time.Millisecond},
		{Client: "kwok", Verb: "patch", Resource: "pods/status", Count: 1, Mean: 5 * time.Millisecond, P50: 5 * time.Millisecond, P99: 5 * time.Millisecond},
		{Client: "trainyard", Verb: "create", Resource: "pods", Count: 3, Mean: 50 * time.Millisecond, P50: 30 * time.Millisecond, P99: 100 * time.Millisecond},
	}, rows)

	_, err = SummarizeAudit(strings.NewReader("{not json"), time.Time{}, time.Time{})
	require.ErrorContains(t, err, "line 1")
}
