//go:build integration || chaos

package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"
)

// table renders the report: per fault kind how long the component was
// out and how long the system took to be whole again, then the checks.
func (r *report) table() string {
	var b strings.Builder
	injected := 0
	for _, f := range r.faults {
		if f.kind != faultNone {
			injected++
		}
	}
	fmt.Fprintf(&b, "chaos: %d faults in %s of load from %d tenants; %d jobs acknowledged, %d pods\n\n",
		injected, r.duration.Round(time.Second), r.tenants, r.acked, r.pods)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "fault\tcount\tout p50\tconverged p50\tp90\tmax")
	for _, k := range faultKinds {
		var out, conv []time.Duration
		for _, f := range r.faults {
			if f.kind == k {
				out, conv = append(out, f.down), append(conv, f.converge)
			}
		}
		if len(conv) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", k, len(conv), seconds(quantile(out, 0.5)),
			seconds(quantile(conv, 0.5)), seconds(quantile(conv, 0.9)), seconds(quantile(conv, 1)))
	}
	w.Flush()
	var firsts, each []string
	var ds []time.Duration
	for _, f := range r.faults {
		if f.kind != faultFailover {
			continue
		}
		if f.firstSubmit < 0 {
			each = append(each, "none")
			continue
		}
		ds = append(ds, f.firstSubmit)
		each = append(each, seconds(f.firstSubmit))
	}
	if len(each) > 0 {
		if len(ds) > 0 {
			firsts = append(firsts, fmt.Sprintf("p50 %s, max %s", seconds(quantile(ds, 0.5)), seconds(quantile(ds, 1))))
		}
		firsts = append(firsts, "each: "+strings.Join(each, " "))
		fmt.Fprintf(&b, "\nPostgres fail-over, primary killed to the first acknowledged CreateJob sent after: %s\n",
			strings.Join(firsts, "; "))
	}
	b.WriteString("\n")
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "check\tfound")
	row := func(what string, v any) { fmt.Fprintf(w, "%s\t%v\n", what, v) }
	row("acknowledged jobs lost", len(r.lost))
	row("jobs in Postgres / acknowledged", fmt.Sprintf("%d / %d", r.jobsInPostgres, r.acked))
	row("submissions never acknowledged", r.neverAcked)
	row("pods created twice under one identity", len(r.createdTwice))
	row("replicas with two live pods at once", len(r.twoLive))
	row("jobs admitted twice", len(r.admittedTwice))
	row("jobs that never reached a final state", len(r.stuck))
	row("jobs that ended other than SUCCEEDED", len(r.notSucceeded))
	row("restarts expected / counted", fmt.Sprintf("%d / %d", r.restartsExpected, r.restartsCounted))
	row("jobs or replicas with a wrong restart count", len(r.restartsOff))
	row("replicas whose attempts were not 0..K once each", len(r.attemptsOff))
	row("API errors other than UNAVAILABLE", len(r.otherErrors))
	row("UNAVAILABLE during faults / outside", fmt.Sprintf("%d / %d", r.unavailableInFaults, r.unavailableOutside))
	row("pod watch resumed by a relist", r.relists)
	var exited []string
	for _, name := range slices.Sorted(maps.Keys(r.exited)) {
		exited = append(exited, fmt.Sprintf("%s ×%d", name, r.exited[name]))
	}
	if len(exited) == 0 {
		exited = append(exited, "none")
	}
	row("control plane components that exited by themselves (restarted)", strings.Join(exited, ", "))
	w.Flush()
	return b.String()
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// require fails the test on anything the report found, naming the first
// few of each.
func (r *report) require(t *testing.T, minFaults int) {
	t.Helper()
	injected := 0
	for _, f := range r.faults {
		require.True(t, f.converged, "%s at %s: %s", f.kind, f.at.Format(time.TimeOnly), f.detail)
		if f.kind != faultNone {
			injected++
		}
	}
	require.GreaterOrEqual(t, injected, minFaults, "faults injected")
	require.Positive(t, r.acked, "jobs acknowledged")
	first := func(s []string) []string { return s[:min(len(s), 10)] }
	require.Empty(t, r.lost, "acknowledged jobs lost: %v", first(r.lost))
	require.Zero(t, r.neverAcked, "submissions never acknowledged within %s", giveUp)
	require.Equal(t, r.acked, r.jobsInPostgres, "jobs in Postgres: one per acknowledged submission")
	require.Empty(t, r.createdTwice, "pods created twice: %v", first(r.createdTwice))
	require.Empty(t, r.twoLive, "two live pods of a replica: %v", first(r.twoLive))
	require.Empty(t, r.admittedTwice, "admitted twice: %v", first(r.admittedTwice))
	require.Empty(t, r.stuck, "never final: %v", first(r.stuck))
	require.Empty(t, r.notSucceeded, "ended other than SUCCEEDED: %v", first(r.notSucceeded))
	require.Empty(t, r.restartsOff, "restart counts: %v", first(r.restartsOff))
	require.Empty(t, r.attemptsOff, "attempts: %v", first(r.attemptsOff))
	var other []string
	for _, e := range r.otherErrors[:min(len(r.otherErrors), 10)] {
		other = append(other, fmt.Sprintf("%s %s %s: %s", e.at.Format(time.TimeOnly), e.method, e.code, e.msg))
	}
	require.Empty(t, r.otherErrors, "API errors other than UNAVAILABLE: %v", other)
}
