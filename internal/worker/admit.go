package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// admit asks Postgres to admit a QUEUED job against its tenant's quota.
// JobAdmit is fenced by the version read, so a cancel that landed since
// (the API ends an unadmitted job at once) fails it with ErrConflict, and
// nothing is ever created for a cancelled job. A job that does not fit
// records why (Admitted=false, QuotaExceeded, what it waits for) and tries
// again after QuotaPollInterval, or sooner when one of its tenant's jobs
// owned here ends.
func (w *Worker) admit(ctx context.Context, p *pass, limits job.Demand) (admitted bool, res result, err error) {
	ar, err := w.store.JobAdmit(ctx, w.cfg.ID, p.key.Tenant, p.key.UID, p.wj.Version, limits)
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
		w.waiting.remove(p.key)
		p.wj.Admitted, p.wj.Version = true, ar.Version
		return true, result{}, nil
	}
	w.waiting.add(p.key)
	msg := quotaMessage(p.wj.Demand, ar.Used, limits)
	st, events := job.WaitForQuota(p.wj.Job.Status, msg, p.now)
	if len(events) > 0 || !equalStatus(p.wj.Job.Status, st) {
		p.wj.Version = ar.Version
		if ok, res, err := w.save(ctx, p, st, events, false); !ok {
			return false, res, err
		}
	}
	return false, result{after: jitter(w.cfg.QuotaPollInterval)}, nil
}

// quotaMessage says what a job waits for: "waiting for quota: needs 4
// GPUs, 6 of 8 in use", one clause per limit it would exceed.
func quotaMessage(demand, used, limits job.Demand) string {
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
	if len(parts) == 0 {
		return "waiting for quota"
	}
	return "waiting for quota: " + strings.Join(parts, "; ")
}
