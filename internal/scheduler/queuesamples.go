package scheduler

import (
	"context"
	"slices"
	"time"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
)

// The queue over time (store.QueueSampleWrite): each cycle keeps what
// waits per tenant (queueOf), and every UsageRefresh the leader writes it
// with the cluster's GPU capacity as one sample. A cycle skipped because
// nothing waited leaves the last (empty) queue in place.

// queueOf sums the decision's waiting jobs per tenant: how many, the GPUs
// they ask for, and how long the longest has waited at now. Tenants with
// nothing waiting are absent; the result is sorted by tenant.
func queueOf(v view, d admission.Decision, now time.Time) []store.QueueSample {
	by := map[string]*store.QueueSample{}
	gpus := map[admission.Key]int64{}
	for _, j := range v.snap.Jobs {
		for _, g := range j.Groups {
			gpus[j.Key] += g.Request[job.GPU] * int64(g.Count)
		}
	}
	for _, w := range d.Waiting {
		q := by[w.Key.Tenant]
		if q == nil {
			q = &store.QueueSample{Tenant: w.Key.Tenant}
			by[w.Key.Tenant] = q
		}
		q.PendingJobs++
		q.PendingGPUs += gpus[w.Key]
		if at := v.jobs[w.Key].QueuedAt; !at.IsZero() {
			q.OldestWait = max(q.OldestWait, now.Sub(at))
		}
	}
	out := make([]store.QueueSample, 0, len(by))
	for _, q := range by {
		out = append(out, *q)
	}
	slices.SortFunc(out, func(a, b store.QueueSample) int {
		if a.Tenant < b.Tenant {
			return -1
		}
		if a.Tenant > b.Tenant {
			return 1
		}
		return 0
	})
	return out
}

// capacityGPUs is the GPUs of the nodes this scheduler places on that
// take new pods: its cluster's (informers) and the other READY clusters'.
func capacityGPUs(nodes ...[]admission.Node) int64 {
	var n int64
	for _, list := range nodes {
		for _, node := range list {
			if !node.Unschedulable {
				n += node.Allocatable[job.GPU]
			}
		}
	}
	return n
}

// sampleQueue writes the queue as the last cycle left it, its waits aged
// to now, and the capacity; nothing before this leadership's first full
// cycle (the queue is not known yet: an empty one would be false).
func (s *Scheduler) sampleQueue(ctx context.Context, now time.Time) error {
	if s.queueAt.IsZero() {
		return nil
	}
	_, others, err := s.others(ctx, now)
	if err != nil {
		return err
	}
	q := make([]store.QueueSample, len(s.queue))
	for i, t := range s.queue {
		t.OldestWait += now.Sub(s.queueAt)
		q[i] = t
	}
	capacity := capacityGPUs(s.nodes(), others)
	s.metrics.gpuCapacity.WithLabelValues().Set(float64(capacity))
	return s.store.QueueSampleWrite(ctx, now, capacity, q)
}
