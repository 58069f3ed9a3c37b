//go:build integration

package tenantctl

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/tenant"
)

type access struct {
	verb, resource, subresource, ns string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	return fmt.Sprintf("%s %s in %s", a.verb, r, a.ns)
}

// allowed asks the real API server's authorizer (RBAC) whether user in
// groups may do a.
func allowed(t *testing.T, b *bundle, user string, groups []string, a access) bool {
	t.Helper()
	sar, err := b.admin.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: a.ns, Verb: a.verb, Resource: a.resource, Subresource: a.subresource,
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return sar.Status.Allowed
}

// Tenant A's pod-reader group reads pods and logs in A's namespace and
// nothing else; the job ServiceAccount reads nothing, not even in its own
// namespace. Checked by the real API server's RBAC authorizer.
func TestIsolationBySubjectAccessReview(t *testing.T) {
	b := setup(t, setupOpts{})
	a := b.createTenant(t, tenant.Tenant{ID: "alpha", PodReaderGroups: []string{"oidc:alpha-team"}})
	bt := b.createTenant(t, tenant.Tenant{ID: "beta", PodReaderGroups: []string{"oidc:beta-team"}})
	nsA, nsB := b.ns(a.ID), b.ns(bt.ID)
	for _, id := range []string{a.ID, bt.ID} {
		eventually(t, 30*time.Second, func() error {
			_, err := b.admin.RbacV1().RoleBindings(b.ns(id)).Get(context.Background(), "trainyard-pod-readers", metav1.GetOptions{})
			return err
		})
	}

	alphaUser, alphaGroups := "alice", []string{"oidc:alpha-team", "system:authenticated"}
	for _, acc := range []access{
		{"get", "pods", "", nsA}, {"list", "pods", "", nsA}, {"watch", "pods", "", nsA}, {"get", "pods", "log", nsA},
	} {
		require.True(t, allowed(t, b, alphaUser, alphaGroups, acc), "alpha's readers must be allowed to %s", acc)
	}
	for _, acc := range []access{
		// Nothing in beta's namespace.
		{"get", "pods", "", nsB}, {"list", "pods", "", nsB}, {"watch", "pods", "", nsB}, {"get", "pods", "log", nsB},
		{"get", "secrets", "", nsB}, {"list", "services", "", nsB},
		// In alpha's own namespace: read pods and logs, nothing more.
		{"get", "secrets", "", nsA}, {"list", "secrets", "", nsA}, {"get", "configmaps", "", nsA},
		{"create", "pods", "exec", nsA}, {"create", "pods", "portforward", nsA}, {"get", "pods", "attach", nsA},
		{"create", "pods", "", nsA}, {"delete", "pods", "", nsA}, {"update", "rolebindings", "", nsA},
		// Cluster-wide.
		{"list", "pods", "", ""}, {"list", "namespaces", "", ""},
	} {
		require.False(t, allowed(t, b, alphaUser, alphaGroups, acc), "alpha's readers must not be allowed to %s", acc)
	}

	// The API server's ServiceAccount reads pod logs in tenant namespaces
	// through their trainyard-api-pod-logs RoleBinding (deploy/ has the
	// ClusterRole it names), and nothing else, nowhere else.
	apiRole := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "trainyard-api-pod-logs"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}}},
	}
	if _, err := b.admin.RbacV1().ClusterRoles().Create(context.Background(), apiRole, metav1.CreateOptions{}); err != nil {
		require.True(t, apierrors.IsAlreadyExists(err), "%v", err)
	}
	apiUser := "system:serviceaccount:trainyard:trainyard-api"
	apiGroups := []string{"system:serviceaccounts", "system:serviceaccounts:trainyard", "system:authenticated"}
	for _, ns := range []string{nsA, nsB} {
		eventually(t, 30*time.Second, func() error {
			if acc := (access{"get", "pods", "log", ns}); !allowed(t, b, apiUser, apiGroups, acc) {
				return fmt.Errorf("the API server must be allowed to %s", acc)
			}
			return nil
		})
		for _, acc := range []access{{"get", "pods", "", ns}, {"list", "pods", "", ns}, {"get", "secrets", "", ns}, {"create", "pods", "exec", ns}} {
			require.False(t, allowed(t, b, apiUser, apiGroups, acc), "the API server must not be allowed to %s", acc)
		}
	}
	for _, ns := range []string{"kube-system", "default", ""} {
		require.False(t, allowed(t, b, apiUser, apiGroups, access{"get", "pods", "log", ns}), "the API server must not read logs in %q", ns)
	}

	// The job ServiceAccount, as the API server sees it when a pod presents
	// its token (if it ever had one: automount is off).
	saUser := "system:serviceaccount:" + nsA + ":trainyard-job"
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + nsA, "system:authenticated"}
	for _, ns := range []string{nsA, nsB} {
		for _, res := range []string{"pods", "secrets", "configmaps", "services", "serviceaccounts"} {
			for _, verb := range []string{"get", "list", "watch"} {
				acc := access{verb, res, "", ns}
				require.False(t, allowed(t, b, saUser, saGroups, acc), "the job ServiceAccount must not be allowed to %s", acc)
			}
		}
		require.False(t, allowed(t, b, saUser, saGroups, access{"get", "pods", "log", ns}))
		require.False(t, allowed(t, b, saUser, saGroups, access{"create", "serviceaccounts", "token", ns}))
	}
}

// Pod Security Admission of the real API server refuses a privileged pod in
// a tenant namespace (baseline enforced) and admits a plain one, which is
// warned about for what restricted would refuse.
func TestPodSecurityAdmissionRefusesPrivilegedPods(t *testing.T) {
	b := setup(t, setupOpts{})
	tn := b.createTenant(t, tenant.Tenant{ID: "gamma"})
	ns := b.ns(tn.ID)
	eventually(t, 30*time.Second, func() error {
		_, err := b.admin.CoreV1().ServiceAccounts(ns).Get(context.Background(), "trainyard-job", metav1.GetOptions{})
		return err
	})
	pod := func(name string, privileged bool) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{
				ServiceAccountName:           "trainyard-job",
				AutomountServiceAccountToken: new(false),
				Containers: []corev1.Container{{
					Name: "tensorflow", Image: "tensorflow/tensorflow:2.16.1",
					SecurityContext: &corev1.SecurityContext{Privileged: new(privileged)},
				}},
			},
		}
	}
	ctx := ctxT(t)
	_, err := b.admin.CoreV1().Pods(ns).Create(ctx, pod("privileged", true), metav1.CreateOptions{})
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
	require.Contains(t, err.Error(), `violates PodSecurity "baseline:latest"`)
	require.Contains(t, err.Error(), "privileged")

	_, err = b.admin.CoreV1().Pods(ns).Create(ctx, pod("plain", false), metav1.CreateOptions{})
	require.NoError(t, err, "a pod within baseline is admitted")
	require.NoError(t, b.admin.CoreV1().Pods(ns).Delete(ctx, "plain", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}))
}
