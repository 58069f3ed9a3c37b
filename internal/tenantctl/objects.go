package tenantctl

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// object is a namespaced API object of one of the kinds a tenant namespace
// holds.
type object interface {
	metav1.Object
	runtime.Object
}

// typedClient is what client-go's typed clients have in common.
type typedClient[T object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

// kind tells ensureObject how to read, compare and write one kind.
type kind[T object] struct {
	name   string
	cached func(ns, name string) (T, error) // the informer's lister
	client func(ns string) typedClient[T]
	// same reports whether have already has every field want sets.
	same func(have, want T) bool
	// apply copies want's fields into have (a copy the caller owns).
	apply func(have, want T)
	// replace reports whether have must be deleted and created again
	// because a field that differs is immutable (a RoleBinding's roleRef).
	replace func(have, want T) bool
}

// ensureObject makes the object ns/name what want says; a nil want means
// it must not exist, and Trainyard's own copy (labelled managed-by) is
// deleted. Reads come from the informer cache; a create that finds the
// object exists (made by another worker, or without our label so the
// cache never saw it) falls back to a live read and an update.
func ensureObject[T object](ctx context.Context, c *Controller, k kind[T], want T, ns, name string) error {
	api := k.client(ns)
	have, err := k.cached(ns, name)
	if isNil(want) {
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return deleteObject(ctx, c, k, api, have)
	}
	if apierrors.IsNotFound(err) {
		_, err = api.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			c.wrote(k.name, "create")
			c.log.Info("created tenant object", "kind", k.name, "namespace", ns, "name", name)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s/%s: %w", k.name, ns, name, err)
		}
		have, err = api.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("get %s %s/%s: %w", k.name, ns, name, err)
	}
	if labelsContain(have.GetLabels(), want.GetLabels()) && k.same(have, want) {
		return nil
	}
	if k.replace != nil && k.replace(have, want) {
		if err := deleteObject(ctx, c, k, api, have); err != nil {
			return err
		}
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("re-create %s %s/%s: %w", k.name, ns, name, err)
		}
		c.wrote(k.name, "create")
		c.log.Info("re-created tenant object", "kind", k.name, "namespace", ns, "name", name)
		return nil
	}
	upd := have.DeepCopyObject().(T)
	upd.SetLabels(mergeLabels(upd.GetLabels(), want.GetLabels()))
	k.apply(upd, want)
	// The resourceVersion of have makes a concurrent change a Conflict,
	// retried with the fresh object from the cache.
	if _, err := api.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update %s %s/%s: %w", k.name, ns, name, err)
	}
	c.wrote(k.name, "update")
	c.log.Info("repaired tenant object", "kind", k.name, "namespace", ns, "name", name)
	return nil
}

func deleteObject[T object](ctx context.Context, c *Controller, k kind[T], api typedClient[T], have T) error {
	uid := have.GetUID()
	err := api.Delete(ctx, have.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s %s/%s: %w", k.name, have.GetNamespace(), have.GetName(), err)
	}
	c.wrote(k.name, "delete")
	c.log.Info("deleted tenant object", "kind", k.name, "namespace", have.GetNamespace(), "name", have.GetName())
	return nil
}

// isNil reports whether a pointer held in an interface is nil.
func isNil[T any](v T) bool {
	rv := reflect.ValueOf(v)
	return !rv.IsValid() || (rv.Kind() == reflect.Pointer && rv.IsNil())
}

// Semantic equality: quantities by value, nil and empty alike (the API
// server turns some nil fields into empty ones when it defaults them).
var semantic = equality.Semantic

func serviceAccounts(c *Controller) kind[*corev1.ServiceAccount] {
	return kind[*corev1.ServiceAccount]{
		name:   "ServiceAccount",
		cached: func(ns, name string) (*corev1.ServiceAccount, error) { return c.accounts.ServiceAccounts(ns).Get(name) },
		client: func(ns string) typedClient[*corev1.ServiceAccount] { return c.client.CoreV1().ServiceAccounts(ns) },
		same: func(have, want *corev1.ServiceAccount) bool {
			return semantic.DeepEqual(have.AutomountServiceAccountToken, want.AutomountServiceAccountToken)
		},
		apply: func(have, want *corev1.ServiceAccount) {
			have.AutomountServiceAccountToken = want.AutomountServiceAccountToken
		},
	}
}

func roles(c *Controller) kind[*rbacv1.Role] {
	return kind[*rbacv1.Role]{
		name:   "Role",
		cached: func(ns, name string) (*rbacv1.Role, error) { return c.roles.Roles(ns).Get(name) },
		client: func(ns string) typedClient[*rbacv1.Role] { return c.client.RbacV1().Roles(ns) },
		same:   func(have, want *rbacv1.Role) bool { return semantic.DeepEqual(have.Rules, want.Rules) },
		apply:  func(have, want *rbacv1.Role) { have.Rules = want.Rules },
	}
}

func roleBindings(c *Controller) kind[*rbacv1.RoleBinding] {
	return kind[*rbacv1.RoleBinding]{
		name:   "RoleBinding",
		cached: func(ns, name string) (*rbacv1.RoleBinding, error) { return c.bindings.RoleBindings(ns).Get(name) },
		client: func(ns string) typedClient[*rbacv1.RoleBinding] { return c.client.RbacV1().RoleBindings(ns) },
		same: func(have, want *rbacv1.RoleBinding) bool {
			return have.RoleRef == want.RoleRef && semantic.DeepEqual(have.Subjects, want.Subjects)
		},
		apply:   func(have, want *rbacv1.RoleBinding) { have.Subjects = want.Subjects },
		replace: func(have, want *rbacv1.RoleBinding) bool { return have.RoleRef != want.RoleRef },
	}
}

func resourceQuotas(c *Controller) kind[*corev1.ResourceQuota] {
	return kind[*corev1.ResourceQuota]{
		name:   "ResourceQuota",
		cached: func(ns, name string) (*corev1.ResourceQuota, error) { return c.quotas.ResourceQuotas(ns).Get(name) },
		client: func(ns string) typedClient[*corev1.ResourceQuota] { return c.client.CoreV1().ResourceQuotas(ns) },
		same:   func(have, want *corev1.ResourceQuota) bool { return semantic.DeepEqual(have.Spec, want.Spec) },
		apply:  func(have, want *corev1.ResourceQuota) { have.Spec = want.Spec },
	}
}

func limitRanges(c *Controller) kind[*corev1.LimitRange] {
	return kind[*corev1.LimitRange]{
		name:   "LimitRange",
		cached: func(ns, name string) (*corev1.LimitRange, error) { return c.limits.LimitRanges(ns).Get(name) },
		client: func(ns string) typedClient[*corev1.LimitRange] { return c.client.CoreV1().LimitRanges(ns) },
		same:   func(have, want *corev1.LimitRange) bool { return semantic.DeepEqual(have.Spec, want.Spec) },
		apply:  func(have, want *corev1.LimitRange) { have.Spec = want.Spec },
	}
}

func networkPolicies(c *Controller) kind[*networkingv1.NetworkPolicy] {
	return kind[*networkingv1.NetworkPolicy]{
		name: "NetworkPolicy",
		cached: func(ns, name string) (*networkingv1.NetworkPolicy, error) {
			return c.policies.NetworkPolicies(ns).Get(name)
		},
		client: func(ns string) typedClient[*networkingv1.NetworkPolicy] {
			return c.client.NetworkingV1().NetworkPolicies(ns)
		},
		same:  func(have, want *networkingv1.NetworkPolicy) bool { return semantic.DeepEqual(have.Spec, want.Spec) },
		apply: func(have, want *networkingv1.NetworkPolicy) { have.Spec = want.Spec },
	}
}

// services keeps the namespace's Service of replicas. A Service that
// differs is deleted and created again rather than updated: the fields
// that matter (clusterIP None, no selector) are partly immutable, it is
// read by DNS only, and the worker then needs no update right on Services.
// A Service of that name that is not Trainyard's (made by hand in a tenant
// namespace, which is Trainyard's) is replaced the same way.
func services(c *Controller) kind[*corev1.Service] {
	return kind[*corev1.Service]{
		name:   "Service",
		cached: func(ns, name string) (*corev1.Service, error) { return c.services.Services(ns).Get(name) },
		client: func(ns string) typedClient[*corev1.Service] { return c.client.CoreV1().Services(ns) },
		// want sets no selector, ports or type: have must not either (the
		// API server defaults the type to ClusterIP).
		same: func(have, want *corev1.Service) bool {
			return have.Spec.ClusterIP == want.Spec.ClusterIP && have.Spec.PublishNotReadyAddresses == want.Spec.PublishNotReadyAddresses &&
				len(have.Spec.Selector) == 0 && len(have.Spec.Ports) == 0 && have.Spec.Type == corev1.ServiceTypeClusterIP
		},
		apply:   func(have, want *corev1.Service) {}, // never called: replace
		replace: func(have, want *corev1.Service) bool { return true },
	}
}
