package tenantctl

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// copySecrets keeps the copies of a tenant's Secrets in namespace ns,
// when Config.Secrets is set (the API server writes them in another
// cluster): a copy is created, or written again when the secret was put
// since or the copy was changed by hand, and a copy of a secret that no
// longer exists is deleted. Only objects labelled as copies are ever
// changed or deleted; a Secret of the same name that is not one is left
// alone (reason not_owned). Values travel only for the copies that need
// them and are never logged.
//
// The copies are read live, not from an informer: the worker may read
// Secrets only in tenant namespaces (the TenantSecretsName RoleBinding),
// so it cannot list them cluster-wide. That is one list per pass of a
// tenant, and only in a cluster that keeps copies.
func (c *Controller) copySecrets(ctx context.Context, tenantID, ns string) error {
	if c.cfg.Secrets == nil {
		return nil
	}
	api := c.client.CoreV1().Secrets(ns)
	list, err := api.List(ctx, metav1.ListOptions{LabelSelector: kube.SecretCopySelector(tenantID).String()})
	if err != nil {
		return fmt.Errorf("list the secret copies in %s: %w", ns, kube.RedactSecretError(err, nil))
	}
	held := make(map[string]*corev1.Secret, len(list.Items))
	have := make(map[string]string, len(list.Items))
	for i := range list.Items {
		s := &list.Items[i]
		held[s.Name] = s
		if v := kube.SecretCopyVersion(s); v != "" {
			have[s.Name] = v
		}
	}
	copies, err := c.cfg.Secrets.TenantSecrets(ctx, tenantID, have)
	if errors.Is(err, store.ErrNotFound) {
		// No longer ACTIVE or allowed here, as the control plane sees it
		// now: the tenant's next pass acts on that. Nothing is deleted on
		// the strength of a tenant read a moment ago.
		return nil
	}
	if err != nil {
		return withReason(reasonStore, fmt.Errorf("the secrets of tenant %s: %w", tenantID, err))
	}
	var errs []error
	keep := make(map[string]bool, len(copies))
	for _, sc := range copies {
		keep[sc.Name] = true
		if !sc.Unchanged {
			errs = append(errs, c.writeSecretCopy(ctx, tenantID, ns, sc, held[sc.Name]))
		}
	}
	for name, s := range held {
		if !keep[name] {
			errs = append(errs, c.deleteSecretCopy(ctx, tenantID, s))
		}
	}
	return errors.Join(errs...)
}

// ensureSecretReaders lets the API server read the tenant's secrets, by
// name, in the cluster where it writes them (kube.RenderSecretReaders):
// it hands them to remote agents. Where the reconciler keeps copies, or
// has no database (a remote agent), there is no such Role.
func (c *Controller) ensureSecretReaders(ctx context.Context, tenantID, ns string) error {
	var names []string
	if c.cfg.Secrets == nil && !c.cfg.Remote {
		secrets, err := c.store.SecretList(ctx, tenantID)
		if err != nil {
			return withReason(reasonStore, err)
		}
		for _, s := range secrets {
			names = append(names, s.Name)
		}
	}
	role, binding := kube.RenderSecretReaders(tenantID, ns, names, c.cfg.Options)
	if err := ensureObject(ctx, c, roles(c), role, ns, kube.SecretReadersName); err != nil {
		return err
	}
	return ensureObject(ctx, c, roleBindings(c), binding, ns, kube.SecretReadersName)
}

// writeSecretCopy creates the copy, or replaces held (from the list, so a
// concurrent change is a Conflict and retried).
func (c *Controller) writeSecretCopy(ctx context.Context, tenantID, ns string, sc tenant.SecretCopy, held *corev1.Secret) error {
	want := kube.RenderSecretCopy(tenantID, ns, sc)
	api := c.client.CoreV1().Secrets(ns)
	action := "create"
	var err error
	if held == nil {
		_, err = api.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return withReason(reasonNotOwned, fmt.Errorf("secret %s/%s %w (no label %s): not replacing it with the copy of tenant secret %s",
				ns, sc.Name, errNotOwned, kube.LabelSecretCopy, sc.Name))
		}
	} else {
		action = "update"
		upd := held.DeepCopy()
		upd.Labels = mergeLabels(upd.Labels, want.Labels)
		upd.Annotations = mergeLabels(upd.Annotations, want.Annotations)
		upd.Data, upd.StringData, upd.Type = want.Data, nil, want.Type
		_, err = api.Update(ctx, upd, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("%s the copy of secret %s/%s: %w", action, ns, sc.Name, kube.RedactSecretError(err, sc.Data))
	}
	c.wrote("Secret", action)
	c.log.Info("wrote the copy of a tenant secret", "tenant", tenantID, "namespace", ns, "secret", sc.Name,
		"version", sc.Version, "keys", len(sc.Data))
	return nil
}

// deleteSecretCopy deletes exactly the copy listed (by UID).
func (c *Controller) deleteSecretCopy(ctx context.Context, tenantID string, s *corev1.Secret) error {
	uid := s.UID
	err := c.client.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete the copy of secret %s/%s: %w", s.Namespace, s.Name, kube.RedactSecretError(err, s.Data))
	}
	c.wrote("Secret", "delete")
	c.log.Info("deleted the copy of a tenant secret that no longer exists", "tenant", tenantID, "namespace", s.Namespace, "secret", s.Name)
	return nil
}

// StoreSecrets is the SecretSource of a worker on Postgres in a cluster
// other than the API server's: the tenant's secrets from the store, their
// values read in the API server's cluster with Home's credentials.
type StoreSecrets struct {
	Store interface {
		TenantGet(ctx context.Context, id string) (tenant.Tenant, error)
		SecretList(ctx context.Context, tenantID string) ([]tenant.Secret, error)
	}
	Home kube.HomeSecrets
}

// TenantSecrets implements SecretSource. Unlike the control plane's
// answer to a remote agent, it does not check where the tenant is
// allowed: the reconciler asks only for tenants it keeps here, and this
// worker reads every tenant's rows anyway.
func (s StoreSecrets) TenantSecrets(ctx context.Context, tenantID string, have map[string]string) ([]tenant.SecretCopy, error) {
	t, err := s.Store.TenantGet(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	metas, err := s.Store.SecretList(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	return s.Home.Copies(ctx, t.Namespace, metas, have)
}
