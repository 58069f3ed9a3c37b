package worker

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
)

// result says when a job is reconciled again (besides informer events).
type result struct {
	requeue bool          // at once
	after   time.Duration // after this long
}

// pass is one reconcile of one job: what was loaded, where it lives, and
// the Kubernetes objects seen for it.
type pass struct {
	key    store.JobKey
	wj     store.WorkerJob
	loaded job.State // the state as loaded, before this pass
	ns     string
	now    time.Time
	objs   objects
}

// objects are the job's objects in the informer caches, for delete
// preconditions.
type objects struct {
	pods  map[string]*corev1.Pod // replica pods by name
	tbPod *corev1.Pod
	svc   *corev1.Service
	tbSvc *corev1.Service
}

// reconcile loads a job, admits it if it waits for quota, plans from what
// the informers show and applies the plan in the order of the job
// package's documentation.
func (w *Worker) reconcile(ctx context.Context, key store.JobKey) (result, error) {
	if !w.own.owns(key) {
		return result{}, nil
	}
	if !w.synced.Load() {
		return result{}, errorf(errReasonNotSync, errors.New("informer caches not synced"))
	}
	wj, err := w.store.JobLoad(ctx, key.Tenant, key.UID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		w.disown(key)
		return result{}, nil
	case err != nil:
		return result{}, errorf(errReasonStore, err)
	}
	if wj.WorkerID != w.cfg.ID || !wj.Active {
		// Taken over, released, or nothing left to do (a job cancelled
		// while it waited for quota needs no worker).
		w.disown(key)
		return result{}, nil
	}
	w.own.setState(key, wj.Job.Status.State)
	t, err := w.tenants.get(ctx, key.Tenant)
	if err != nil {
		return result{}, errorf(errReasonStore, err)
	}
	p := &pass{key: key, wj: wj, loaded: wj.Job.Status.State, ns: namespaceOf(t, w.cfg.NamespacePrefix), now: w.cfg.Now()}

	st := wj.Job.Status
	if (st.State == job.Queued || st.State == "") && !wj.Admitted && !wj.Deleted && !st.CancelRequested {
		limits, err := t.Quota.Limits()
		if err != nil {
			return result{}, errorf(errReasonStore, fmt.Errorf("tenant %s: %w", t.ID, err))
		}
		admitted, res, err := w.admit(ctx, p, limits)
		if !admitted || err != nil {
			return res, err
		}
	}

	var obs job.Observed
	obs, p.objs = w.observe(key.UID)
	plan := job.Plan(job.PlanInput{
		Job: p.wj.Job, Admitted: p.wj.Admitted, Deleted: p.wj.Deleted, Observed: obs, Now: p.now,
	})
	return w.apply(ctx, p, plan)
}

// observe reads the job's pods and Services from the informer caches.
func (w *Worker) observe(uid string) (job.Observed, objects) {
	var obs job.Observed
	objs := objects{pods: map[string]*corev1.Pod{}}
	pods, _ := w.pods.GetIndexer().ByIndex(indexJobUID, uid)
	for _, o := range pods {
		pod, ok := o.(*corev1.Pod)
		if !ok {
			continue
		}
		if pod.Labels[kube.LabelComponent] == kube.ComponentTensorBoard {
			obs.TensorBoardPod, objs.tbPod = true, pod
			continue
		}
		if op, ok := kube.ObservePod(pod); ok {
			obs.Pods = append(obs.Pods, op)
			objs.pods[pod.Name] = pod
		}
	}
	svcs, _ := w.services.GetIndexer().ByIndex(indexJobUID, uid)
	for _, o := range svcs {
		svc, ok := o.(*corev1.Service)
		if !ok {
			continue
		}
		if svc.Labels[kube.LabelComponent] == kube.ComponentTensorBoard {
			obs.TensorBoardSvc, objs.tbSvc = true, svc
		} else {
			obs.Service, objs.svc = true, svc
		}
	}
	return obs, objs
}

// apply carries out a plan: log tails, then the fenced save, then the
// Kubernetes actions, then done or purge.
func (w *Worker) apply(ctx context.Context, p *pass, plan job.PlanResult) (result, error) {
	w.log.Debug("plan", "job", p.key, "actions", plan.Actions, "forget", plan.Forget, "deleted", p.wj.Deleted)
	w.captureLogTails(ctx, p, &plan)

	purge := p.wj.Deleted && plan.Forget
	done := plan.Forget && !p.wj.Deleted
	saved := false
	if !purge && (done || len(plan.Events) > 0 || !equalStatus(p.wj.Job.Status, plan.Status)) {
		ok, res, err := w.save(ctx, p, plan.Status, plan.Events, done)
		if !ok {
			return res, err
		}
		saved = true
		if p.loaded == job.Queued && plan.Status.State == job.Starting {
			w.own.markDispatch(p.key, true)
		}
	}
	if done {
		w.log.Debug("job needs no more work", "job", p.key, "state", plan.Status.State)
		w.disown(p.key)
		return result{}, nil
	}
	// Actions are not fenced. Without a save just now proving the lease,
	// act only while it is certainly live; a successor that took the job
	// over meanwhile would adopt (AlreadyExists) anyway, and deletes carry
	// UID preconditions, but a worker past its lease has no business in
	// the cluster.
	if !saved && !w.own.leased(p.key, time.Now(), w.cfg.LeaseTTL/10) {
		return result{}, errorf(errReasonLease, fmt.Errorf("job %s: lease not confirmed; waiting for renewal", p.key))
	}
	actStart := time.Now()
	err := w.act(ctx, p, plan.Actions)
	if len(plan.Actions) > 0 {
		w.log.Debug("actions applied", "job", p.key, "actions", len(plan.Actions), "took", time.Since(actStart), "error", err)
	}
	if err != nil {
		if !isTerminal(err) {
			return result{}, errorf(errReasonKube, err)
		}
		return w.failTerminal(ctx, p, plan.Status, err)
	}
	w.noteDispatch(p)
	if purge {
		if err := w.store.JobPurge(ctx, w.cfg.ID, p.key.Tenant, p.key.UID); err != nil {
			if errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrNotFound) {
				w.disown(p.key)
				return result{}, nil
			}
			return result{}, errorf(errReasonStore, err)
		}
		w.log.Info("deleted job purged", "job", p.key)
		w.disown(p.key)
		w.wakeWaiting(p.key.Tenant)
		return result{}, nil
	}
	return result{requeue: plan.Requeue, after: plan.RequeueAfter}, nil
}

// save writes status and events, fenced by the lease and the version read.
// ok is false when the pass must stop: res and err then say what next (a
// conflict re-reads at once; a lost lease drops the job).
func (w *Worker) save(ctx context.Context, p *pass, st job.Status, drafts []job.EventDraft, done bool) (ok bool, res result, err error) {
	events := make([]job.Event, len(drafts))
	for i, d := range drafts {
		events[i] = job.Event{Type: d.Type, Reason: d.Reason, Message: d.Message}
	}
	version, err := w.store.JobSave(ctx, store.JobSaveParams{
		WorkerID: w.cfg.ID, Tenant: p.key.Tenant, UID: p.key.UID, Version: p.wj.Version,
		Status: st, Events: events, Done: done,
	})
	switch {
	case errors.Is(err, store.ErrConflict):
		// A cancel or delete landed since the load: decide again on it.
		w.metrics.reconcileErrors.WithLabelValues(errReasonConflict).Inc()
		return false, result{requeue: true}, nil
	case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrNotFound):
		w.metrics.reconcileErrors.WithLabelValues(errReasonLease).Inc()
		w.log.Info("job no longer owned; stopping work on it", "job", p.key, "reason", err)
		w.disown(p.key)
		w.metrics.leasesLost.Inc()
		return false, result{}, nil
	case err != nil:
		return false, result{}, errorf(errReasonStore, err)
	}
	old := p.wj.Job.Status.State
	p.wj.Version, p.wj.Job.Status = version, st
	w.own.setState(p.key, st.State)
	if st.State != old {
		w.metrics.transitions.WithLabelValues(string(st.State)).Inc()
		w.log.Info("job state changed", "job", p.key, "name", p.wj.Job.Name, "from", old, "to", st.State, "reason", st.Reason)
		if st.State.Final() {
			// Its quota is free: the tenant's waiting jobs try at once.
			w.wakeWaiting(p.key.Tenant)
		}
	}
	return true, result{}, nil
}

// failTerminal fails a job that the API server refused for good (invalid,
// forbidden), with the server's reason and message, and asks for another
// pass at once to clean up what was created.
func (w *Worker) failTerminal(ctx context.Context, p *pass, st job.Status, cause error) (result, error) {
	reason, msg := kube.Reason(cause), kube.Message(cause)
	if st.State.Final() {
		// Cleanup of a finished job refused (RBAC?): nothing to fail;
		// retry with backoff and let the error show in the logs.
		return result{}, errorf(errReasonKube, cause)
	}
	w.metrics.reconcileErrors.WithLabelValues(errReasonTerminal).Inc()
	w.log.Warn("Kubernetes refused the job's objects; failing the job", "job", p.key, "reason", reason, "message", msg)
	failed, events := job.Fail(st, reason, msg, w.cfg.Now())
	if ok, res, err := w.save(ctx, p, failed, events, false); !ok {
		return res, err
	}
	return result{requeue: true}, nil
}

// noteDispatch observes the dispatch latency of a job this worker admitted
// once a pass created all its objects without error: the admission pass
// itself, or the retry that completed it.
func (w *Worker) noteDispatch(p *pass) {
	if !w.own.markDispatch(p.key, false) || p.wj.Job.Status.State.Final() {
		return
	}
	w.metrics.dispatchLatency.Observe(time.Since(p.wj.Job.CreateTime).Seconds())
}

// equalStatus reports whether a plan changed nothing worth a write.
func equalStatus(a, b job.Status) bool {
	// CancelRequested is a column, not part of what the worker writes.
	a.CancelRequested, b.CancelRequested = false, false
	return reflect.DeepEqual(normalizeTimes(a), normalizeTimes(b))
}

// normalizeTimes makes equal instants compare equal whatever their
// location or monotonic reading.
func normalizeTimes(s job.Status) job.Status {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC().Round(0)
		return &u
	}
	s.StartTime, s.CompletionTime = utc(s.StartTime), utc(s.CompletionTime)
	conds := make([]job.Condition, len(s.Conditions))
	for i, c := range s.Conditions {
		c.LastTransitionTime = c.LastTransitionTime.UTC().Round(0)
		conds[i] = c
	}
	s.Conditions = conds
	reps := make([]job.ReplicaStatus, len(s.Replicas))
	for i, r := range s.Replicas {
		if r.LastTermination != nil {
			t := *r.LastTermination
			t.FinishTime = t.FinishTime.UTC().Round(0)
			r.LastTermination = &t
		}
		reps[i] = r
	}
	s.Replicas = reps
	if len(s.Conditions) == 0 {
		s.Conditions = nil
	}
	if len(s.Replicas) == 0 {
		s.Replicas = nil
	}
	if len(s.ReplicaCounts) == 0 {
		s.ReplicaCounts = nil
	}
	return s
}

// equalObserved compares two observations of a pod field by field (times
// as instants).
func equalObserved(a, b job.ObservedPod) bool {
	ta, tb := a.Terminated, b.Terminated
	a.Terminated, b.Terminated = nil, nil
	if a != b || (ta == nil) != (tb == nil) {
		return false
	}
	if ta == nil {
		return true
	}
	return ta.Attempt == tb.Attempt && ta.ExitCode == tb.ExitCode && ta.Reason == tb.Reason &&
		ta.Message == tb.Message && ta.LogTail == tb.LogTail && ta.FinishTime.Equal(tb.FinishTime)
}
