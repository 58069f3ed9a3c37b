package worker

import (
	"context"
	"errors"
	"time"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// requeue sends a job whose pods are gone back to the scheduler's queue
// (job.Plan's Requeued: preempted, or pods unschedulable too long). The
// save makes it unadmitted and unowned in one fenced write; a job requeued
// for unschedulable pods is not admitted again before its backoff.
func (w *Worker) requeue(ctx context.Context, p *pass, plan job.PlanResult) (result, error) {
	rq := &store.Requeue{PreemptedBy: plan.Requeued.PreemptedBy}
	if plan.Requeued.Reason == job.ReasonUnschedulable {
		rq.After = w.cfg.requeueBackoff(plan.Status.Requeues)
	}
	_, err := w.store.JobSave(ctx, store.JobSaveParams{
		WorkerID: w.cfg.ID, Tenant: p.key.Tenant, UID: p.key.UID, Version: p.wj.Version,
		Status: plan.Status, Events: eventsOf(plan.Events), Requeue: rq,
	})
	switch {
	case errors.Is(err, store.ErrConflict):
		// A cancel or delete landed since the load: decide again on it.
		w.metrics.reconcileErrors.WithLabelValues(errReasonConflict).Inc()
		return result{requeue: true}, nil
	case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrNotFound):
		w.disown(p.key)
		return result{}, nil
	case err != nil:
		return result{}, errorf(errReasonStore, err)
	}
	w.metrics.requeues.WithLabelValues(plan.Requeued.Reason).Inc()
	w.log.Info("job back in the queue", "job", p.key, "name", p.wj.Job.Name, "reason", plan.Requeued.Reason,
		"message", plan.Requeued.Message, "backoff", rq.After)
	w.disown(p.key)
	return result{}, nil
}

// requeueBackoff is how long a job requeued for the n-th time (n ≥ 1)
// because its pods stayed unschedulable waits before it may be admitted
// again: RequeueBackoff doubling each time, up to RequeueBackoffMax.
func (c Config) requeueBackoff(n int32) time.Duration {
	d := c.RequeueBackoff
	for i := int32(1); i < n && d < c.RequeueBackoffMax; i++ {
		d *= 2
	}
	return min(d, c.RequeueBackoffMax)
}

func eventsOf(drafts []job.EventDraft) []job.Event {
	events := make([]job.Event, len(drafts))
	for i, d := range drafts {
		events[i] = job.Event{Type: d.Type, Reason: d.Reason, Message: d.Message}
	}
	return events
}
