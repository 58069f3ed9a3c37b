package job_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainyard/trainyard/internal/job"
)

func TestFail(t *testing.T) {
	start := t0.Add(-time.Minute)
	running := job.Status{State: job.Running, StartTime: &start, Conditions: []job.Condition{
		{Type: job.CondRunning, Status: true, Reason: job.ReasonRunning, LastTransitionTime: start},
	}}
	got, events := job.Fail(running, "PodSecurityForbidden", "pods \"x\" is forbidden", t0)
	want := job.Status{
		State: job.Failed, Reason: "PodSecurityForbidden", Message: "pods \"x\" is forbidden",
		StartTime: &start, CompletionTime: &t0,
		Conditions: []job.Condition{
			{Type: job.CondRunning, Status: false, Reason: "PodSecurityForbidden", LastTransitionTime: t0},
			{Type: job.CondFailed, Status: true, Reason: "PodSecurityForbidden", Message: "pods \"x\" is forbidden", LastTransitionTime: t0},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	wantEvents := []job.EventDraft{{Type: job.EventWarning, Reason: "PodSecurityForbidden", Message: "pods \"x\" is forbidden"}}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if running.State != job.Running || len(running.Conditions) != 1 {
		t.Errorf("Fail wrote into its input: %+v", running)
	}

	final := job.Status{State: job.Succeeded, CompletionTime: &start}
	got, events = job.Fail(final, "Forbidden", "no", t0)
	if diff := cmp.Diff(final, got); diff != "" || len(events) != 0 {
		t.Errorf("a final job changed (-want +got):\n%s, events %v", diff, events)
	}
}
