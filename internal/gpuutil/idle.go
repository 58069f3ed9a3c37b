package gpuutil

import (
	"fmt"
	"time"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// IdleRule is a tenant's idle-GPU setting (tenant.Scheduling).
type IdleRule struct {
	// Percent: a sample below it is idle.
	Percent float64
	// For: how long every GPU of the job must stay idle.
	For time.Duration
	// StopAfter, when positive: an idle job is cancelled once its GPUs
	// have been idle this long.
	StopAfter time.Duration
}

// RuleOf is the tenant's rule, defaults filled.
func RuleOf(s tenant.Scheduling) IdleRule {
	s = s.WithDefaults()
	return IdleRule{Percent: s.IdleGPUPercent, For: time.Duration(s.IdleGPUSeconds) * time.Second,
		StopAfter: time.Duration(s.IdleGPUStopSeconds) * time.Second}
}

// Stop says whether an idle verdict at time at calls for cancelling the
// job (the tenant's IdleGPUStopSeconds), and the event's message.
func (r IdleRule) Stop(v store.GPUIdle, at time.Time) (string, bool) {
	if r.StopAfter <= 0 || !v.Idle || at.Sub(v.Since) < r.StopAfter {
		return "", false
	}
	return fmt.Sprintf("cancelled: every GPU of the job has been below %g%% utilisation since %s, longer than the tenant's %s",
		r.Percent, v.Since.UTC().Format(time.RFC3339), r.StopAfter), true
}

// Busy says whether a utilisation sample is at or above the threshold.
func (r IdleRule) Busy(v float64) bool { return v >= r.Percent }

// Decide is the idle rule, at time at (the end of the window just read),
// over a job's figures so far (every replica's, this window's included):
// the job is idle when it has samples, its latest sample is no older
// than stale (no samples is no news, not idleness: the exporter or the
// scrape may be down), and no sample of any of its GPUs has been at or
// above the threshold for rule.For — counted from the last busy sample,
// or from the first sample when none was busy. known is false without
// recent samples: the verdict stays what it was.
func Decide(replicas []job.GPUFigures, rule IdleRule, at time.Time, stale time.Duration) (v store.GPUIdle, known bool) {
	f := job.SumGPUFigures(replicas)
	if f.Samples == 0 || at.Sub(f.LastSample) > stale {
		return store.GPUIdle{}, false
	}
	since := f.LastBusy
	if since.IsZero() {
		since = f.FirstSample
	}
	if at.Sub(since) < rule.For {
		return store.GPUIdle{Message: activeMessage(rule)}, true
	}
	return store.GPUIdle{Idle: true, Since: since, Message: fmt.Sprintf(
		"every GPU of the job (%d) has been below %g%% utilisation since %s (%s; the tenant's idle time is %s)",
		len(f.GPUs), rule.Percent, since.UTC().Format(time.RFC3339), at.Sub(since).Round(time.Second), rule.For)}, true
}

// activeMessage is the event's message when an idle job's GPUs work again.
func activeMessage(rule IdleRule) string {
	return fmt.Sprintf("a GPU of the job is at or above %g%% utilisation again", rule.Percent)
}
