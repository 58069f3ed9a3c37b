package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// admit asks Postgres to admit a QUEUED job against its tenant's quota, in
// the tenant's admission order (store.JobAdmitWait). JobAdmitWait is fenced
// by the version read, so a cancel that landed since (the API ends an
// unadmitted job at once) fails it with ErrConflict, and nothing is ever
// created for a cancelled job.
//
// A job that is not admitted records why (Admitted=false, QuotaExceeded,
// what it waits for) and is released in the same transaction, not kept:
// a waiting job holds no lease and no slot of MaxOwnedJobs, so one
// tenant's queue can not fill the workers. It becomes claimable again
// after retryAfter, or at once when it is next in line and a job of its
// tenant ends or is admitted (the store wakes it, with a NOTIFY).
func (w *Worker) admit(ctx context.Context, p *pass, limits job.Demand) (admitted bool, res result, err error) {
	ar, err := w.store.JobAdmitWait(ctx, store.AdmitParams{
		WorkerID: w.cfg.ID, Tenant: p.key.Tenant, UID: p.key.UID, Version: p.wj.Version, Quota: limits,
		Wait: func(ar store.AdmitResult) (*job.Status, []job.Event, time.Duration) {
			cur := p.wj.Job.Status
			st, drafts := job.WaitForQuota(cur, waitMessage(p.wj.Demand, ar, limits), p.now)
			after := w.retryAfter(cur, ar, p.wj.Demand, limits, p.now)
			if len(drafts) == 0 && equalStatus(cur, st) {
				return nil, nil, after
			}
			return &st, eventsOf(drafts), after
		},
	})
	switch {
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrFailedPrecondition):
		// Changed since the load (cancelled, deleted): decide again.
		w.metrics.reconcileErrors.WithLabelValues(errReasonConflict).Inc()
		return false, result{requeue: true}, nil
	case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrNotFound):
		w.disown(p.key)
		return false, result{}, nil
	case err != nil:
		return false, result{}, errorf(errReasonStore, err)
	}
	if ar.Admitted {
		p.wj.Admitted, p.wj.Version = true, ar.Version
		return true, result{}, nil
	}
	// Released: not ours any more until it is claimed again.
	w.disown(p.key)
	reason := "quota"
	if ar.Behind != "" {
		reason = "order"
	}
	w.metrics.deferred.WithLabelValues(reason).Inc()
	w.log.Debug("job waits for admission; released", "job", p.key, "behind", ar.Behind, "used", ar.Used)
	return false, result{}, nil
}

// retryAfter is how long a job that was not admitted stays unclaimable.
// The job next in line (nothing ahead of it, it fits the whole quota)
// tries again every QuotaPollInterval. Every other one is woken by the
// chain (the end or admission of a job of its tenant wakes the next in
// line) and polls only as a safety net: the longer it has waited, the
// less often, up to MaxWaitPoll. A tenant's thousands of queued jobs then
// cost Postgres a few statements a second, not thousands.
func (w *Worker) retryAfter(st job.Status, ar store.AdmitResult, demand, limits job.Demand, now time.Time) time.Duration {
	poll := w.cfg.QuotaPollInterval
	if ar.Behind == "" && fitsQuota(demand, limits) {
		return jitter(poll)
	}
	waited := time.Duration(0)
	for _, c := range st.Conditions {
		if c.Type == job.CondAdmitted && !c.Status {
			waited = now.Sub(c.LastTransitionTime)
		}
	}
	return jitter(min(max(waited, poll), max(w.cfg.MaxWaitPoll, poll)))
}

// fitsQuota reports whether demand fits every non-zero limit on its own.
func fitsQuota(demand, limits job.Demand) bool {
	within := func(d, l int64) bool { return l == 0 || d <= l }
	return within(demand.GPU, limits.GPU) && within(demand.CPUMilli, limits.CPUMilli) &&
		within(demand.MemoryBytes, limits.MemoryBytes) && within(demand.Pods, limits.Pods)
}

func eventsOf(drafts []job.EventDraft) []job.Event {
	events := make([]job.Event, len(drafts))
	for i, d := range drafts {
		events[i] = job.Event{Type: d.Type, Reason: d.Reason, Message: d.Message}
	}
	return events
}

// waitMessage says what a job waits for: "waiting for quota: needs 4
// GPUs, 6 of 8 in use", one clause per limit it would exceed, and, when
// an earlier job of the tenant must be admitted first, "behind job
// \"big\", which is ahead in the tenant's queue".
func waitMessage(demand job.Demand, ar store.AdmitResult, limits job.Demand) string {
	parts := quotaParts(demand, ar.Used, limits)
	if ar.Behind != "" {
		parts = append(parts, fmt.Sprintf("behind job %q, which is ahead in the tenant's queue", ar.Behind))
	}
	if len(parts) == 0 {
		return "waiting for quota"
	}
	return "waiting for quota: " + strings.Join(parts, "; ")
}

// quotaMessage is waitMessage for a job with nothing ahead of it.
func quotaMessage(demand, used, limits job.Demand) string {
	return waitMessage(demand, store.AdmitResult{Used: used}, limits)
}

// quotaParts are the clauses of the limits demand would exceed next to used.
func quotaParts(demand, used, limits job.Demand) []string {
	var parts []string
	over := func(d, u, l int64) bool { return l > 0 && d+u > l }
	if over(demand.GPU, used.GPU, limits.GPU) {
		parts = append(parts, fmt.Sprintf("needs %d GPUs, %d of %d in use", demand.GPU, used.GPU, limits.GPU))
	}
	if over(demand.CPUMilli, used.CPUMilli, limits.CPUMilli) {
		cpu := func(m int64) string { return resource.NewMilliQuantity(m, resource.DecimalSI).String() }
		parts = append(parts, fmt.Sprintf("needs %s CPU, %s of %s in use", cpu(demand.CPUMilli), cpu(used.CPUMilli), cpu(limits.CPUMilli)))
	}
	if over(demand.MemoryBytes, used.MemoryBytes, limits.MemoryBytes) {
		mem := func(b int64) string { return resource.NewQuantity(b, resource.BinarySI).String() }
		parts = append(parts, fmt.Sprintf("needs %s memory, %s of %s in use", mem(demand.MemoryBytes), mem(used.MemoryBytes), mem(limits.MemoryBytes)))
	}
	if over(demand.Pods, used.Pods, limits.Pods) {
		parts = append(parts, fmt.Sprintf("needs %d pods, %d of %d in use", demand.Pods, used.Pods, limits.Pods))
	}
	return parts
}
