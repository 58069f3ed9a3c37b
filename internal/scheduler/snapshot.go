package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// shape is what the scheduler keeps of a job's spec while the job lives:
// its pod groups (placement included), deadline and grace period. Specs
// never change, so a job's spec is read once.
type shape struct {
	groups      []admission.Group
	maxRunTime  time.Duration
	gracePeriod time.Duration
	// nonPreemptible, gpuType: spec.preemptible false, spec.gpuType.
	nonPreemptible bool
	gpuType        string
	// deps are spec.dependsOn (uids resolved at submission); cancelOnDep
	// is onDependencyFailure CANCEL.
	deps        []job.Dependency
	cancelOnDep bool
	// clusterSelector, clusters: where the job may run (spec.clusterSelector,
	// spec.clusters).
	clusterSelector map[string]string
	clusters        []string
}

func shapeOf(spec job.Spec) (shape, error) {
	s := shape{gracePeriod: spec.GracePeriod(), nonPreemptible: spec.NonPreemptible(),
		deps: spec.DependsOn, cancelOnDep: spec.Failure() == job.DependencyCancel,
		clusterSelector: spec.ClusterSelector, clusters: spec.Clusters}
	if d := spec.RunPolicy.ActiveDeadlineSeconds; d != nil {
		s.maxRunTime = time.Duration(*d) * time.Second
	}
	for _, r := range spec.Replicas {
		req, err := r.Resources.PodRequests()
		if err != nil {
			return shape{}, fmt.Errorf("%s resources: %w", r.Type, err)
		}
		s.groups = append(s.groups, admission.NewGroup(string(r.Type), max(r.Count, 1), req, admission.Placement(kube.ReplicaPlacement(r))))
		// A job asks for a GPU model by the node selector of its GPU
		// replicas (the label GPU Feature Discovery sets).
		if m := r.NodeSelector[kube.LabelGPUProduct]; m != "" && req[job.GPU] > 0 {
			s.gpuType = m
		}
	}
	if spec.TensorBoard != nil {
		req, err := job.TensorBoardResources.PodRequests()
		if err != nil {
			return shape{}, err
		}
		s.groups = append(s.groups, admission.NewGroup(kube.ComponentTensorBoard, 1, req, admission.Placement{}))
	}
	return s, nil
}

// view is one cycle's inputs beside the Snapshot: what the commit compares
// against.
type view struct {
	snap admission.Snapshot
	jobs map[admission.Key]store.SchedJob
	// tenants are the active tenants' ids.
	tenants []string
	// sharing are the active tenants' sharing settings.
	sharing map[string]tenant.Sharing
}

// snapshot reads Postgres and the informers into one Snapshot.
func (s *Scheduler) snapshot(ctx context.Context, now time.Time) (view, error) {
	v := view{jobs: map[admission.Key]store.SchedJob{}, sharing: map[string]tenant.Sharing{}}
	v.snap.Now = now
	v.snap.Config = admission.Config{StarvationAge: s.cfg.StarvationAge, BorrowAging: s.cfg.BorrowAging}

	read, err := s.store.SchedulerRead(ctx, s.specsAfter)
	if err != nil {
		return view{}, err
	}
	runTimes, err := s.runTimes(ctx, now)
	if err != nil {
		return view{}, err
	}
	for _, t := range read.Tenants {
		quota, err := t.Quota.Limits()
		if err != nil {
			s.log.Warn("a tenant's quota does not parse; it is scheduled without a quota", "tenant", t.ID, "error", err)
		}
		v.snap.Tenants = append(v.snap.Tenants, admission.Tenant{ID: t.ID, Quota: quota, Scheduling: t.Scheduling, RunTime: runTimes[t.ID].Median,
			Clusters: t.Clusters})
		v.tenants = append(v.tenants, t.ID)
		v.sharing[t.ID] = t.Sharing
	}

	for _, c := range read.Cohorts {
		nominal, err := c.Nominal.Limits()
		if err != nil {
			s.log.Warn("a cohort's pool does not parse; it is left out", "cohort", c.Name, "error", err)
			continue
		}
		v.snap.Cohorts = append(v.snap.Cohorts, admission.Cohort{Name: c.Name, Nominal: nominal, GPUTypes: c.GPUTypes})
	}

	rows := read.Jobs
	if err := s.loadShapes(ctx, rows); err != nil {
		return view{}, err
	}
	names := map[store.JobKey]string{}
	for _, r := range rows {
		names[r.Key] = r.Name
	}
	for _, r := range rows {
		sh, ok := s.shapes[r.Key]
		if !ok {
			continue // its spec could not be read: logged by loadShapes
		}
		k := admission.Key(r.Key)
		j := admission.Job{
			Key: k, Name: r.Name, Priority: r.Priority, Seq: r.Seq, QueuedAt: r.QueuedAt,
			MaxRunTime: sh.maxRunTime, GracePeriod: sh.gracePeriod, Admitted: r.Admitted,
			NonPreemptible: sh.nonPreemptible, GPUType: sh.gpuType,
			ClusterSelector: sh.clusterSelector, Clusters: sh.clusters,
			NotBefore: r.NotBefore, StartTime: r.StartTime,
		}
		j.Groups = append([]admission.Group(nil), sh.groups...)
		// The preemptor may be of another tenant (reclaim, fair share).
		byTenant := cmp.Or(r.PreemptorTenant, r.Key.Tenant)
		if r.PreemptedBy != "" {
			by := store.JobKey{Tenant: byTenant, UID: r.PreemptedBy}
			j.PreemptedBy, j.PreemptedByName = admission.Key(by), names[by]
		}
		if r.Admitted {
			j.GPUType = cmp.Or(sh.gpuType, r.GPUType)
			j.Cluster = r.Cluster
			if r.PreemptFor != "" {
				j.PreemptingFor = admission.Key{Tenant: byTenant, UID: r.PreemptFor}
			}
			// A job of another cluster: none of its pods are seen here,
			// it is counted from its demand (see others).
			if r.Cluster == s.cfg.Cluster {
				var placed map[string]int32
				j.OnNodes, placed = s.usage.job(r.Key.UID)
				for i := range j.Groups {
					j.Groups[i].Placed = min(placed[j.Groups[i].Name], j.Groups[i].Count)
				}
			}
		}
		if !r.Admitted && len(sh.deps) > 0 && !r.AdmittedBefore {
			j.CancelOnDependencyFailure = sh.cancelOnDep
			for _, d := range sh.deps {
				j.Dependencies = append(j.Dependencies, admission.Dependency{
					Key: admission.Key{Tenant: r.Key.Tenant, UID: d.UID}, Name: d.Job, Condition: d.Cond(),
				})
			}
		}
		v.snap.Jobs = append(v.snap.Jobs, j)
		v.jobs[k] = r
	}
	if err := s.observeDependencies(ctx, v.snap.Jobs); err != nil {
		return view{}, err
	}
	v.snap.Nodes = s.nodes()
	clusters, others, err := s.others(ctx, now)
	if err != nil {
		return view{}, fmt.Errorf("clusters: %w", err)
	}
	v.snap.Clusters = clusters
	v.snap.Nodes = append(v.snap.Nodes, others...)
	if err := s.ledgerUpdate(ctx, v.sharing, now); err != nil {
		return view{}, fmt.Errorf("usage ledger: %w", err)
	}
	for i := range v.snap.Tenants {
		t := &v.snap.Tenants[i]
		var errs []error
		t.Sharing, errs = sharingOf(v.sharing[t.ID], s.ledger.tenants[t.ID], now)
		for _, err := range errs {
			s.log.Warn("a tenant's sharing limit does not parse; it is left out", "tenant", t.ID, "error", err)
		}
	}
	return v, nil
}

// observeDependencies reads what the pending jobs' dependencies are now,
// in one query for all of them.
func (s *Scheduler) observeDependencies(ctx context.Context, jobs []admission.Job) error {
	var keys []store.JobKey
	for _, j := range jobs {
		for _, d := range j.Dependencies {
			keys = append(keys, store.JobKey(d.Key))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	seen, err := s.store.DependencyObserve(ctx, keys)
	if err != nil {
		return fmt.Errorf("dependencies: %w", err)
	}
	for i := range jobs {
		for k := range jobs[i].Dependencies {
			d := &jobs[i].Dependencies[k]
			d.Observed = seen[store.JobKey(d.Key)]
		}
	}
	return nil
}

// loadShapes keeps the shapes of jobs not seen before — from the specs the
// read brought (the jobs submitted since the last read), else read now —
// and forgets the jobs that are gone.
func (s *Scheduler) loadShapes(ctx context.Context, rows []store.SchedJob) error {
	live := make(map[store.JobKey]bool, len(rows))
	var missing []store.JobKey
	for _, r := range rows {
		live[r.Key] = true
		s.specsAfter = max(s.specsAfter, r.Seq)
		if _, ok := s.shapes[r.Key]; ok {
			continue
		}
		if r.Spec != nil {
			s.addShape(r.Key, *r.Spec)
			continue
		}
		missing = append(missing, r.Key)
	}
	for k := range s.shapes {
		if !live[k] {
			delete(s.shapes, k)
		}
	}
	for len(missing) > 0 {
		batch := missing[:min(len(missing), 1000)]
		missing = missing[len(batch):]
		specs, err := s.store.JobSpecs(ctx, batch)
		if err != nil {
			return err
		}
		for k, spec := range specs {
			s.addShape(k, spec)
		}
	}
	return nil
}

// addShape keeps the shape of a job's spec.
func (s *Scheduler) addShape(k store.JobKey, spec job.Spec) {
	sh, err := shapeOf(spec)
	if err != nil {
		s.log.Error("a job's spec does not give a shape; it is not scheduled", "job", k, "error", err)
		return
	}
	s.shapes[k] = sh
}

// runTimes returns the tenants' typical run times, read at most every
// RunTimeRefresh.
func (s *Scheduler) runTimes(ctx context.Context, now time.Time) (map[string]store.RunTime, error) {
	if s.runTimesAt.IsZero() || now.Sub(s.runTimesAt) >= s.cfg.RunTimeRefresh {
		rt, err := s.store.TenantRunTimes(ctx)
		if err != nil {
			return nil, err
		}
		s.runTimesByTenant, s.runTimesAt = rt, now
	}
	return s.runTimesByTenant, nil
}

// nodes are the cluster's nodes with what the pods bound to them take,
// all of Config.Cluster: other clusters' nodes come from their agents.
func (s *Scheduler) nodes() []admission.Node {
	list, _ := s.nodeLister.List(labels.Everything())
	out := make([]admission.Node, 0, len(list))
	for _, n := range list {
		out = append(out, admission.Node{
			Name: n.Name, Cluster: s.cfg.Cluster, Labels: n.Labels, Taints: n.Spec.Taints, Unschedulable: !ready(n),
			Allocatable: vectorOf(n.Status.Allocatable), Used: s.usage.nodeUsed(n.Name),
		})
	}
	return out
}
