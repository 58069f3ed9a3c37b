package worker

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/experiment"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
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
	tbSvc *corev1.Service
	// legacySvc is the headless Service of a job dispatched before the
	// Service of replicas was the namespace's: its pods' TF_CONFIG names
	// their peers under it, so its slice goes on naming it (package
	// endpoints); the orphan sweep deletes it once the job is let go.
	legacySvc *corev1.Service
}

// reconcile loads a job (the first pass over a job claimed unstarted takes
// the row its claim returned: ownership.Set.Stash), plans from what the
// informers show and applies the plan in the order of the job package's
// documentation.
func (w *Worker) reconcile(ctx context.Context, key store.JobKey) (result, error) {
	if !w.own.Owns(key) {
		return result{}, nil
	}
	if !w.synced.Load() {
		return result{}, errorf(errReasonNotSync, errors.New("informer caches not synced"))
	}
	began := time.Now()
	wj, claimed := w.own.TakeClaimed(key)
	var err error
	if !claimed {
		wj, err = w.store.JobLoad(ctx, key.Tenant, key.UID)
	}
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
	w.own.Loaded(key, wj.Job.Status.State, began)
	wj.Job.Spec.RunPolicy = w.cfg.runPolicy(wj.Job.Spec.RunPolicy)
	t, found, err := w.tenants.lookup(ctx, key.Tenant)
	if err != nil {
		return result{}, errorf(errReasonStore, err)
	}
	p := &pass{key: key, wj: wj, loaded: wj.Job.Status.State, now: w.cfg.Now()}
	if found {
		if p.ns, err = namespaceOf(t); err != nil {
			return result{}, errorf(errReasonStore, err)
		}
	}

	st := wj.Job.Status
	if !st.State.Final() && !st.CancelRequested && (!found || t.State != tenant.Active) {
		// The tenant is being offboarded (or is gone): its jobs end here,
		// whatever their state. A job can commit after offboarding's last
		// cancel sweep; it must not start then.
		w.log.Info("cancelling a job of a tenant that is not active", "job", key, "tenant_state", t.State)
		p.wj.Job.Status.CancelRequested = true
	}
	if (st.State == job.Queued || st.State == "") && !wj.Admitted && !wj.Deleted && !p.wj.Job.Status.CancelRequested {
		// Waiting for the scheduler: nothing for a worker to do. Such a job
		// is not claimable; let it go should one get here anyway.
		w.disown(key)
		if err := w.store.JobRelease(ctx, w.cfg.ID, key); err != nil {
			return result{}, errorf(errReasonStore, err)
		}
		return result{}, nil
	}

	var obs job.Observed
	obs, p.objs = w.observe(p.ns, key.UID)
	return w.apply(ctx, p, job.Plan(w.planInput(p, obs)))
}

// planInput is what Plan decides on for the pass: the job, what was
// observed, the scheduler's preemption if any, and the unschedulable
// timeout.
func (w *Worker) planInput(p *pass, obs job.Observed) job.PlanInput {
	in := job.PlanInput{
		Job: p.wj.Job, Admitted: p.wj.Admitted, Deleted: p.wj.Deleted, Observed: obs, Now: p.now,
		UnschedulableTimeout: w.cfg.UnschedulableTimeout,
	}
	if p.wj.PreemptFor != "" {
		in.Preempt = &job.Preemption{By: p.wj.PreemptFor, Message: p.wj.PreemptMessage}
	}
	return in
}

// observe reads the job's pods, Services and EndpointSlice from the
// informer caches: the objects labelled with its uid in its tenant's
// namespace (an object elsewhere carrying the label is not the job's).
func (w *Worker) observe(ns, uid string) (job.Observed, objects) {
	pods, _ := w.pods.GetIndexer().ByIndex(indexJobUID, jobIndexKey(ns, uid))
	svcs, _ := w.services.GetIndexer().ByIndex(indexJobUID, jobIndexKey(ns, uid))
	return observed(pods, svcs)
}

// observed builds Plan's view of a job from its pods and Services.
func observed(pods, svcs []any) (job.Observed, objects) {
	var obs job.Observed
	objs := objects{pods: map[string]*corev1.Pod{}}
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
	for _, o := range svcs {
		svc, ok := o.(*corev1.Service)
		if !ok {
			continue
		}
		// A job has no Service of its own but its TensorBoard's (the
		// replicas' is the namespace's, kube.RenderReplicaService), unless
		// it was dispatched before that.
		if svc.Labels[kube.LabelComponent] == kube.ComponentTensorBoard {
			obs.TensorBoardSvc, objs.tbSvc = true, svc
		} else {
			objs.legacySvc = svc
		}
	}
	return obs, objs
}

// observeLapsed is observe plus the job's lapsed creates (expectations.go)
// that a live GET by name finds: objects this worker created whose
// informer events never came. A lapsed create found gone, or found to be
// another object than the job's, is done with. found says whether any
// object was added to what the cache shows.
func (w *Worker) observeLapsed(ctx context.Context, p *pass, lapsed []string) (obs job.Observed, objs objects, found bool, err error) {
	pods, _ := w.pods.GetIndexer().ByIndex(indexJobUID, jobIndexKey(p.ns, p.key.UID))
	svcs, _ := w.services.GetIndexer().ByIndex(indexJobUID, jobIndexKey(p.ns, p.key.UID))
	seen := map[string]bool{}
	for _, o := range append(slices.Clone(pods), svcs...) {
		if m, ok := o.(metav1.Object); ok {
			seen[kindOf(o)+"/"+m.GetName()] = true
		}
	}
	for _, key := range lapsed {
		kind, ns, name, ok := parseCreateKey(key)
		if !ok || ns != p.ns {
			w.expect.observed(key)
			continue
		}
		obj, err := w.getLive(ctx, kind, ns, name)
		switch {
		case apierrors.IsNotFound(err):
			w.expect.observed(key)
			continue
		case err != nil:
			return job.Observed{}, objects{}, false, err
		case obj.GetLabels()[kube.LabelJobUID] != p.key.UID:
			w.expect.observed(key) // the name holds another object now
			continue
		case seen[kind+"/"+name]:
			continue // the cache shows it now; its event clears the lapse
		}
		found = true
		if kind == "pod" {
			pods = append(pods, obj)
		} else {
			svcs = append(svcs, obj)
		}
	}
	obs, objs = observed(pods, svcs)
	return obs, objs, found, nil
}

// kindOf is "pod" or "service", as in createKey.
func kindOf(o any) string {
	if _, ok := o.(*corev1.Service); ok {
		return "service"
	}
	return "pod"
}

// apply carries out a plan: log tails, then the fenced save, then the
// Kubernetes actions, then done or purge.
func (w *Worker) apply(ctx context.Context, p *pass, plan job.PlanResult) (result, error) {
	w.log.Debug("plan", "job", p.key, "actions", plan.Actions, "forget", plan.Forget, "deleted", p.wj.Deleted)
	if plan.Requeued != nil {
		return w.requeue(ctx, p, plan)
	}
	if plan.Forget {
		var (
			res  result
			err  error
			done bool
		)
		if plan, done, res, err = w.finishing(ctx, p, plan); !done {
			return res, err
		}
	}
	w.captureLogTails(ctx, p, &plan)
	if plan.Status.State.Final() && !p.wj.Job.Status.State.Final() && w.cfg.Metrics != nil &&
		p.wj.Job.Labels[experiment.LabelExperiment] != "" {
		// A trial's last points, before the save that ends it: the
		// experiments controller reads its objective once it has ended.
		w.readTrialMetricsOfJob(ctx, p)
	}

	purge := p.wj.Deleted && plan.Forget
	done := plan.Forget && !p.wj.Deleted
	mustSave := !purge && (done || len(plan.Events) > 0 || !equalStatus(p.wj.Job.Status, plan.Status))
	// A finished job that saves and then needs nothing before its TTL is
	// parked by that save (one statement, not two).
	var park time.Duration
	if mustSave {
		park = w.parkFor(p, plan)
	}
	saved := false
	if mustSave {
		ok, res, err := w.save(ctx, p, plan.Status, plan.Events, done, park)
		if !ok {
			return res, err
		}
		saved = true
	}
	if plan.Status.State == job.Starting && len(p.objs.pods) == 0 && createsPods(plan.Actions) {
		// The pass that dispatches the job (admitted STARTING, or saved so
		// just now by a job admitted QUEUED before admissions wrote it).
		w.own.MarkDispatch(p.key, true)
	}
	if done {
		w.log.Debug("job needs no more work", "job", p.key, "state", plan.Status.State)
		w.disown(p.key)
		return result{}, nil
	}
	if park > 0 {
		w.log.Debug("finished job parked until its TTL", "job", p.key, "for", park)
		w.disown(p.key)
		return result{}, nil
	}
	// Actions are not fenced. Without a save just now proving the lease,
	// act only while it is certainly live; a successor that took the job
	// over meanwhile would adopt (AlreadyExists) anyway, and deletes carry
	// UID preconditions, but a worker past its lease has no business in
	// the cluster.
	if !saved && !w.own.Leased(p.key, time.Now(), w.cfg.LeaseTTL/10) {
		return result{}, errorf(errReasonLease, fmt.Errorf("job %s: lease not confirmed; waiting for renewal", p.key))
	}
	actStart := time.Now()
	err := w.act(ctx, p, plan.Actions)
	if len(plan.Actions) > 0 {
		w.log.Debug("actions applied", "job", p.key, "actions", len(plan.Actions), "took", time.Since(actStart), "error", err)
	}
	if err != nil {
		if !isTerminal(err) {
			if _, ok := errors.AsType[*reconcileError](err); ok {
				return result{}, err
			}
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
		return result{}, nil
	}
	if after := w.parkFor(p, plan); after > 0 {
		return w.park(ctx, p, after)
	}
	return result{requeue: plan.Requeue, after: plan.RequeueAfter}, nil
}

// parkFor is how long a finished job that needs nothing before its kept
// objects' TTL can be let go for (park), or 0 when it must stay owned.
func (w *Worker) parkFor(p *pass, plan job.PlanResult) time.Duration {
	if plan.Status.State.Final() && !plan.Forget && !p.wj.Deleted && len(plan.Actions) == 0 &&
		plan.RequeueAfter > w.cfg.LeaseTTL && !w.expect.creating(p.key.UID) {
		return plan.RequeueAfter
	}
	return 0
}

// park lets a finished job whose kept objects wait for its TTL go until
// then (store.JobPark): a TTL of a day must not hold a worker slot, and a
// lease renewed every few seconds, for a day. Whichever worker claims the
// job when it is due deletes what is left; a delete of the job meanwhile
// makes it claimable at once.
func (w *Worker) park(ctx context.Context, p *pass, after time.Duration) (result, error) {
	err := w.store.JobPark(ctx, w.cfg.ID, p.key.Tenant, p.key.UID, p.wj.Version, after)
	switch {
	case errors.Is(err, store.ErrConflict):
		// A delete landed since the load: decide again on it.
		return result{requeue: true}, nil
	case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrNotFound):
	case err != nil:
		return result{}, errorf(errReasonStore, err)
	}
	w.log.Debug("finished job parked until its TTL", "job", p.key, "for", after)
	w.disown(p.key)
	return result{}, nil
}

// lateRecheck is when a job whose objects the informers did not show yet is
// looked at again if no informer event brings it back sooner.
const lateRecheck = time.Second

// finishing checks, before a job is let go (JobSave Done, or JobPurge),
// that nothing of it is left in Kubernetes that the caches do not show.
// Once a job is let go its informer events are dropped (it is not owned),
// so an object created moments ago — a cancel or deadline during dispatch,
// a failure after the TensorBoard was created in the same pass — would be left
// behind for ever. The caches are good enough for everything this worker
// did not create just now, so it reads no list (a label-selected LIST
// costs the API server work in proportion to every pod of the namespace,
// for every job that ends): the job is not let go while creates of it are
// still awaited by the caches (expectations), and a create whose
// expectation lapsed without an informer event is read back by name (a
// GET, rare) and planned on with the cache. If that plan deletes anything,
// or keeps waiting, the pass applies it and the job stays owned. What
// another worker created late (past its lease) is the orphan sweep's. done
// is true when the job can be let go, with the plan to save.
func (w *Worker) finishing(ctx context.Context, p *pass, plan job.PlanResult) (job.PlanResult, bool, result, error) {
	if w.expect.creating(p.key.UID) {
		w.log.Debug("job ended while creates are in flight; waiting for the informers", "job", p.key)
		plan.Status.CleanedUp = false
		res, err := w.holdOn(ctx, p, plan)
		return plan, false, res, err
	}
	if lapsed := w.expect.lapsedCreates(p.key.UID); len(lapsed) > 0 {
		obs, objs, found, err := w.observeLapsed(ctx, p, lapsed)
		if err != nil {
			return plan, false, result{}, errorf(errReasonKube, err)
		}
		if found {
			w.log.Info("the job ended with objects the informers never showed; deleting them before letting it go",
				"job", p.key, "pods", len(obs.Pods))
			p.objs = objs
			plan = job.Plan(w.planInput(p, obs))
		}
	}
	// Plan only ever sets CleanedUp; what is let go must say exactly
	// whether anything is left, because the orphan sweep deletes what is
	// left of a job that says nothing is.
	plan.Status.CleanedUp = len(p.objs.pods) == 0 && p.objs.tbPod == nil && p.objs.tbSvc == nil
	if plan.Forget && len(plan.Actions) == 0 {
		return plan, true, result{}, nil
	}
	res, err := w.holdOn(ctx, p, plan)
	return plan, false, res, err
}

// holdOn applies a plan without letting the job go, and looks at the job
// again after lateRecheck unless the plan asks for a pass anyway.
func (w *Worker) holdOn(ctx context.Context, p *pass, plan job.PlanResult) (result, error) {
	plan.Forget = false
	res, err := w.apply(ctx, p, plan)
	if err == nil && !res.requeue && res.after == 0 {
		res.after = lateRecheck
	}
	return res, err
}

// save writes status and events, fenced by the lease and the version read.
// ok is false when the pass must stop: res and err then say what next (a
// conflict re-reads at once; a lost lease drops the job).
func (w *Worker) save(ctx context.Context, p *pass, st job.Status, drafts []job.EventDraft, done bool, park time.Duration) (ok bool, res result, err error) {
	version, err := w.store.JobSave(ctx, store.JobSaveParams{
		WorkerID: w.cfg.ID, Tenant: p.key.Tenant, UID: p.key.UID, Version: p.wj.Version,
		Status: st, Events: eventsOf(drafts), Done: done, Park: park,
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
	w.own.SetState(p.key, st.State)
	if st.State != old {
		w.metrics.transitions.WithLabelValues(string(st.State)).Inc()
		w.log.Info("job state changed", "job", p.key, "name", p.wj.Job.Name, "from", old, "to", st.State, "reason", st.Reason)
	}
	return true, result{}, nil
}

// failTerminal fails a job that the API server refused for good (invalid,
// forbidden), with the server's reason and message, and asks for another
// pass at once to clean up what was created.
func (w *Worker) failTerminal(ctx context.Context, p *pass, st job.Status, cause error) (result, error) {
	reason, msg := kube.Reason(cause), kube.Message(cause)
	if nc, ok := errors.AsType[*nameConflictError](cause); ok {
		reason, msg = ReasonNameConflict, nc.Error()
	}
	if st.State.Final() {
		// Cleanup of a finished job refused (RBAC?): nothing to fail;
		// retry with backoff and let the error show in the logs.
		return result{}, errorf(errReasonKube, cause)
	}
	w.metrics.reconcileErrors.WithLabelValues(errReasonTerminal).Inc()
	w.log.Warn("Kubernetes refused the job's objects; failing the job", "job", p.key, "reason", reason, "message", msg)
	failed, events := job.Fail(st, reason, msg, w.cfg.Now())
	if ok, res, err := w.save(ctx, p, failed, events, false, 0); !ok {
		return res, err
	}
	return result{requeue: true}, nil
}

// noteDispatch observes the dispatch latency of a job this worker
// dispatches once a pass created all its objects without error: its first
// pass, or the retry that completed it.
func (w *Worker) noteDispatch(p *pass) {
	if !w.own.MarkDispatch(p.key, false) || p.wj.Job.Status.State.Final() {
		return
	}
	w.metrics.dispatchLatency.Observe(time.Since(p.wj.Job.CreateTime).Seconds())
}

// createsPods reports whether actions create a replica pod.
func createsPods(actions []job.Action) bool {
	return slices.ContainsFunc(actions, func(a job.Action) bool { return a.Kind == job.ActCreatePod })
}

// equalStatus reports whether a plan changed nothing worth a write.
func equalStatus(a, b job.Status) bool {
	// CancelRequested and SuspendRequested are columns, not part of what
	// the worker writes.
	a.CancelRequested, b.CancelRequested = false, false
	a.SuspendRequested, b.SuspendRequested = false, false
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
