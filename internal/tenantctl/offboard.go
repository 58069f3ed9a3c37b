package tenantctl

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// errNoChange aborts a TenantUpdate that has nothing to write.
var errNoChange = errors.New("no change")

// offboard moves an OFFBOARDING tenant one step towards DELETED:
//
//  1. cancel every active job (the job workers stop their pods) and wait
//     until none is active;
//  2. delete the namespace (only if it is the tenant's own: labelled, and
//     by UID) and wait until it is gone;
//  3. forget the secrets' metadata and mark the tenant DELETED.
//
// Each pass does what it can and asks to be called again; every step is
// safe to repeat and to run on several workers at once.
func (c *Controller) offboard(ctx context.Context, t tenant.Tenant) (result, error) {
	active, err := c.cancelJobs(ctx, t.ID)
	if err != nil {
		return result{}, err
	}
	if active > 0 {
		c.log.Debug("offboarding: waiting for jobs to stop", "tenant", t.ID, "active", active)
		return result{after: c.cfg.OffboardPoll}, nil
	}

	name := c.namespaceOf(t.ID)
	// A live read: the cache may lag, and DELETED must never be written
	// while the namespace still exists.
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return result{}, fmt.Errorf("get namespace %s: %w", name, err)
	case !owns(ns, t.ID):
		return result{}, withReason(reasonNotOwned, fmt.Errorf(
			"offboarding tenant %s: namespace %s %w; not deleting it: delete it or label it to finish offboarding",
			t.ID, name, errNotOwned))
	case ns.DeletionTimestamp == nil:
		if err := c.deleteNamespace(ctx, ns); err != nil {
			return result{}, err
		}
		c.log.Info("offboarding: deleting namespace", "tenant", t.ID, "namespace", name)
		return result{after: c.cfg.OffboardPoll}, nil
	default:
		// The namespace controller is removing its content. Its delete
		// event wakes us; the poll is the fallback.
		return result{after: c.cfg.OffboardPoll}, nil
	}

	// The Kubernetes Secrets went with the namespace; their names go too.
	secrets, err := c.store.SecretList(ctx, t.ID)
	if err != nil {
		return result{}, withReason(reasonStore, err)
	}
	for _, s := range secrets {
		if err := c.store.SecretDelete(ctx, t.ID, s.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
			return result{}, withReason(reasonStore, err)
		}
	}
	_, err = c.store.TenantUpdate(ctx, t.ID, func(cur *tenant.Tenant) error {
		if cur.State != tenant.Offboarding {
			return errNoChange // another worker finished first
		}
		cur.State = tenant.Deleted
		return nil
	})
	if errors.Is(err, errNoChange) {
		return result{}, nil
	}
	if err != nil {
		return result{}, withReason(reasonStore, err)
	}
	c.offboarding.Delete(t.ID)
	c.metrics.states.set(t.ID, tenant.Deleted)
	c.metrics.offboards.Inc()
	c.log.Info("offboarding: tenant deleted", "tenant", t.ID, "namespace", name)
	return result{}, nil
}

// cancelJobs requests cancellation of every active job of the tenant that
// is not yet stopping, and returns how many jobs are still running or
// stopping.
func (c *Controller) cancelJobs(ctx context.Context, tenantID string) (int, error) {
	keys, err := c.store.JobListActiveByTenant(ctx, tenantID)
	if err != nil {
		return 0, withReason(reasonStore, err)
	}
	active := len(keys)
	for _, k := range keys {
		w, err := c.store.JobLoad(ctx, k.Tenant, k.UID)
		if errors.Is(err, store.ErrNotFound) {
			active-- // purged since it was listed
			continue
		}
		if err != nil {
			return 0, withReason(reasonStore, err)
		}
		st := w.Job.Status
		if st.State.Final() {
			// Finished (deleted or not): its workers only ever delete now,
			// and what it keeps — pods waiting for their TTL, which may be
			// hours away — goes with the namespace.
			active--
			continue
		}
		if st.CancelRequested {
			continue // stopping; nothing more to ask
		}
		j, err := c.store.JobCancel(ctx, tenantID, w.Job.Name)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, withReason(reasonStore, err)
		}
		c.log.Info("offboarding: cancelled job", "tenant", tenantID, "job", w.Job.Name, "state", j.Status.State)
		if j.Status.State.Final() {
			active-- // a queued job that never started ends at once
		}
	}
	return active, nil
}

// removeHere removes the namespace of an ACTIVE tenant that is not
// allowed in this cluster (its clusters list leaves it out): it was never
// made here, or the cluster was taken off the list. The API refuses to take
// a cluster away while unfinished jobs of the tenant are admitted there;
// should one have been admitted in the same instant, the namespace stays
// until every such job has ended, and nothing here cancels it. The
// tenant's secrets' metadata and its state are the whole tenant's and are
// left alone; the Secret values here go with the namespace.
func (c *Controller) removeHere(ctx context.Context, t tenant.Tenant) (result, error) {
	ns, err := c.namespaces.Get(c.namespaceOf(t.ID))
	if apierrors.IsNotFound(err) {
		return result{}, nil // the usual case: nothing of it here
	}
	if err != nil {
		return result{}, err
	}
	if !owns(ns, t.ID) || ns.DeletionTimestamp != nil {
		return result{}, nil
	}
	running, err := c.unfinishedHere(ctx, t.ID)
	if err != nil {
		return result{}, err
	}
	if running > 0 {
		c.log.Warn("a tenant not allowed in this cluster still has unfinished jobs here; its namespace stays until they end",
			"tenant", t.ID, "cluster", c.cfg.Cluster, "jobs", running)
		return result{after: c.cfg.OffboardPoll}, nil
	}
	c.log.Info("removing the namespace of a tenant not allowed in this cluster", "tenant", t.ID, "cluster", c.cfg.Cluster, "namespace", ns.Name)
	return result{}, c.deleteNamespace(ctx, ns)
}

// unfinishedHere counts the tenant's jobs admitted to this cluster that
// have not finished.
func (c *Controller) unfinishedHere(ctx context.Context, tenantID string) (int, error) {
	if c.cfg.Remote {
		// A remote agent cannot list a tenant's jobs: the pods of its jobs
		// in the namespace stand for them.
		ns := c.namespaceOf(tenantID)
		pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.ManagedSelector().String(), Limit: 1})
		if err != nil {
			return 0, fmt.Errorf("list pods in %s: %w", ns, err)
		}
		return len(pods.Items), nil
	}
	keys, err := c.store.JobListActiveByTenant(ctx, tenantID)
	if err != nil {
		return 0, withReason(reasonStore, err)
	}
	n := 0
	for _, k := range keys {
		w, err := c.store.JobLoad(ctx, k.Tenant, k.UID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, withReason(reasonStore, err)
		}
		if st := w.Job.Status; !st.State.Final() && w.Admitted && st.Cluster == c.cfg.Cluster {
			n++
		}
	}
	return n, nil
}
