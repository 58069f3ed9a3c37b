package tenantctl

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// errNotOwned: a namespace of the tenant's name exists but does not carry
// Trainyard's labels for this tenant. It is never adopted, changed or
// deleted; an operator must label it or remove it.
var errNotOwned = errors.New("exists and is not managed by Trainyard for this tenant")

// reconcile brings one tenant's namespace to what its state asks for.
func (c *Controller) reconcile(ctx context.Context, id string) (result, error) {
	t, err := c.store.TenantGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		// Tenants are never removed from Postgres (DELETED is a state); a
		// tenant we do not know of has nothing of ours to act on.
		c.metrics.states.forget(id)
		c.offboarding.Delete(id)
		return result{}, nil
	}
	if err != nil {
		return result{}, withReason(reasonStore, err)
	}
	c.metrics.states.set(id, t.State)
	if want := c.namespaceOf(id); t.Namespace != "" && t.Namespace != want {
		// Only <prefix><id> is ever touched. A different name means the API
		// server and the worker disagree on --namespace-prefix.
		return result{}, withReason(reasonMisconfig, fmt.Errorf(
			"tenant %s records namespace %q but this worker's prefix %q gives %q: give the API server and the workers the same --namespace-prefix",
			id, t.Namespace, c.cfg.NamespacePrefix, want))
	}
	switch t.State {
	case tenant.Active:
		c.offboarding.Delete(id)
		if !t.AllowedIn(c.cfg.Cluster) {
			return c.removeHere(ctx, t)
		}
		return c.ensure(ctx, t)
	case tenant.Offboarding:
		if c.cfg.Remote {
			// The control plane's workers offboard; this cluster's
			// namespace goes once the tenant is DELETED.
			return result{after: c.cfg.Resync}, nil
		}
		c.offboarding.Store(id, true)
		return c.offboard(ctx, t)
	case tenant.Deleted:
		c.offboarding.Delete(id)
		return result{}, c.removeDeletedNamespace(ctx, t)
	}
	return result{}, nil
}

// ensure creates or repairs every object of an ACTIVE tenant.
func (c *Controller) ensure(ctx context.Context, t tenant.Tenant) (result, error) {
	t.Namespace = c.namespaceOf(t.ID)
	objs, err := kube.RenderTenant(t, c.cfg.Options)
	if err != nil {
		// Validation at the API refuses such quotas; a row written otherwise
		// stays broken until it is fixed, and the error says so.
		return result{}, withReason(reasonMisconfig, err)
	}
	ns, err := c.ensureNamespace(ctx, t.ID, objs.Namespace)
	if err != nil {
		return result{}, err
	}
	if ns.DeletionTimestamp != nil {
		// Deleted by hand. It cannot be filled while it terminates; its
		// delete event (or this retry) brings the tenant back here once it
		// is gone, and then it is created afresh. Secret values lived in it
		// and are lost: the tenant's admins must put them again.
		c.log.Warn("the namespace of an active tenant is being deleted; it will be re-created once it is gone (tenant secrets in it are lost and must be put again)",
			"tenant", t.ID, "namespace", ns.Name)
		c.metrics.errors.WithLabelValues(reasonTerminating).Inc()
		return result{after: c.cfg.OffboardPoll}, nil
	}
	var errs []error
	for _, step := range []func() error{
		func() error {
			return ensureObject(ctx, c, serviceAccounts(c), objs.ServiceAccount, ns.Name, c.cfg.Options.JobServiceAccount)
		},
		func() error { return ensureObject(ctx, c, roles(c), objs.Role, ns.Name, kube.PodReadersName) },
		// After the Role: a binding to a missing Role grants nothing but is
		// confusing to read.
		func() error {
			return ensureObject(ctx, c, roleBindings(c), objs.RoleBinding, ns.Name, kube.PodReadersName)
		},
		func() error {
			return ensureObject(ctx, c, resourceQuotas(c), objs.ResourceQuota, ns.Name, kube.QuotaName)
		},
		func() error {
			return ensureObject(ctx, c, limitRanges(c), objs.LimitRange, ns.Name, kube.LimitRangeName)
		},
		func() error {
			return ensureObject(ctx, c, networkPolicies(c), objs.NetworkPolicy, ns.Name, kube.NetworkPolicyName)
		},
		func() error {
			return ensureObject(ctx, c, roleBindings(c), objs.APIPodLogs, ns.Name, kube.APIPodLogsName)
		},
		func() error {
			return ensureObject(ctx, c, roleBindings(c), objs.APITensorBoard, ns.Name, kube.APITensorBoardName)
		},
		func() error {
			return ensureObject(ctx, c, services(c), objs.ReplicaService, ns.Name, job.ReplicaService)
		},
		func() error {
			return ensureObject(ctx, c, roleBindings(c), objs.TenantSecrets, ns.Name, kube.TenantSecretsName)
		},
		// After the binding: the readers' Role grants what it gives the
		// worker, and the copies are read and written with it.
		func() error { return c.ensureSecretReaders(ctx, t.ID, ns.Name) },
		func() error { return c.copySecrets(ctx, t.ID, ns.Name) },
	} {
		if err := step(); err != nil {
			errs = append(errs, err)
		}
	}
	return result{}, errors.Join(errs...)
}

// ensureNamespace creates the tenant's namespace or restores its labels.
// It returns the namespace as it now is.
func (c *Controller) ensureNamespace(ctx context.Context, id string, want *corev1.Namespace) (*corev1.Namespace, error) {
	api := c.client.CoreV1().Namespaces()
	have, err := c.namespaces.Get(want.Name)
	if apierrors.IsNotFound(err) {
		created, cerr := api.Create(ctx, want, metav1.CreateOptions{})
		if cerr == nil {
			c.wrote("Namespace", "create")
			c.log.Info("created tenant namespace", "tenant", id, "namespace", want.Name)
			return created, nil
		}
		if !apierrors.IsAlreadyExists(cerr) {
			return nil, fmt.Errorf("create namespace %s: %w", want.Name, cerr)
		}
		// Not in the cache: another worker just created it, or it exists
		// without our managed-by label (then owns() refuses it below).
		have, err = api.Get(ctx, want.Name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("get namespace %s: %w", want.Name, err)
	}
	if !owns(have, id) {
		return nil, withReason(reasonNotOwned, fmt.Errorf("namespace %s %w (labels %s=%s and %s=%s are missing): not touching it",
			have.Name, errNotOwned, kube.LabelManagedBy, kube.ManagedByValue, kube.LabelTenant, id))
	}
	if have.DeletionTimestamp != nil || labelsContain(have.Labels, want.Labels) {
		return have, nil
	}
	upd := have.DeepCopy()
	upd.Labels = mergeLabels(upd.Labels, want.Labels)
	updated, err := api.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update labels of namespace %s: %w", want.Name, err)
	}
	c.wrote("Namespace", "update")
	c.log.Info("repaired tenant namespace labels", "tenant", id, "namespace", want.Name)
	return updated, nil
}

// owns reports whether a namespace is this tenant's: labelled managed by
// Trainyard and with the tenant's id.
func owns(ns *corev1.Namespace, tenantID string) bool {
	return ns.Labels[kube.LabelManagedBy] == kube.ManagedByValue && ns.Labels[kube.LabelTenant] == tenantID
}

// removeDeletedNamespace deletes the namespace of a DELETED tenant if it
// exists again: a worker that read the tenant as ACTIVE just before it was
// offboarded may have re-created it after another worker saw it gone.
func (c *Controller) removeDeletedNamespace(ctx context.Context, t tenant.Tenant) error {
	ns, err := c.namespaces.Get(c.namespaceOf(t.ID))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !owns(ns, t.ID) || ns.DeletionTimestamp != nil {
		return nil
	}
	c.log.Info("deleting the namespace of a deleted tenant", "tenant", t.ID, "namespace", ns.Name)
	return c.deleteNamespace(ctx, ns)
}

// deleteNamespace deletes exactly the namespace object given: the UID
// precondition makes the API server refuse if the name now belongs to
// another namespace.
func (c *Controller) deleteNamespace(ctx context.Context, ns *corev1.Namespace) error {
	uid := ns.UID
	err := c.client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w", ns.Name, err)
	}
	c.wrote("Namespace", "delete")
	return nil
}

func (c *Controller) wrote(kind, action string) {
	c.metrics.writes.WithLabelValues(kind, action).Inc()
}

// labelsContain reports whether have holds every key of want with its value.
func labelsContain(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// mergeLabels returns have with want's keys set; labels others added stay.
func mergeLabels(have, want map[string]string) map[string]string {
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}

func metaOf(obj any) (metav1.Object, error) { return meta.Accessor(obj) }
