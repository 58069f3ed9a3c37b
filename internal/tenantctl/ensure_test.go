//go:build integration

package tenantctl

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/tenant"
)

func visionTenant() tenant.Tenant {
	return tenant.Tenant{
		ID:              "vision",
		Quota:           tenant.Quota{GPU: 4, CPU: "16", Memory: "64Gi", Pods: 20},
		PodReaderGroups: []string{"oidc:vision-readers", "oidc:ml-platform"},
	}
}

// checkTenantObjects returns nil when namespace ns holds exactly what the
// tenant must have, field by field.
func checkTenantObjects(c kubernetes.Interface, ns, id string, readers []string, hard corev1.ResourceList) error {
	ctx := context.Background()
	mine := map[string]string{"app.kubernetes.io/managed-by": "trainyard", "trainyard.dev/tenant": id}
	hasLabels := func(what string, have map[string]string, want map[string]string) error {
		if !labelsContain(have, want) {
			return fmt.Errorf("%s labels %v lack %v", what, have, want)
		}
		return nil
	}

	n, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := hasLabels("namespace", n.Labels, map[string]string{
		"app.kubernetes.io/managed-by":               "trainyard",
		"trainyard.dev/tenant":                       id,
		"pod-security.kubernetes.io/enforce":         "baseline",
		"pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/warn":            "restricted",
		"pod-security.kubernetes.io/warn-version":    "latest",
		"pod-security.kubernetes.io/audit":           "restricted",
		"pod-security.kubernetes.io/audit-version":   "latest",
	}); err != nil {
		return err
	}

	sa, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "trainyard-job", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := hasLabels("serviceaccount", sa.Labels, mine); err != nil {
		return err
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		return fmt.Errorf("serviceaccount automountServiceAccountToken = %v, want false", sa.AutomountServiceAccountToken)
	}

	role, roleErr := c.RbacV1().Roles(ns).Get(ctx, "trainyard-pod-readers", metav1.GetOptions{})
	rb, rbErr := c.RbacV1().RoleBindings(ns).Get(ctx, "trainyard-pod-readers", metav1.GetOptions{})
	if len(readers) == 0 {
		if !apierrors.IsNotFound(roleErr) || !apierrors.IsNotFound(rbErr) {
			return fmt.Errorf("pod-reader Role/RoleBinding must not exist without reader groups (errors %v, %v)", roleErr, rbErr)
		}
	} else {
		if roleErr != nil || rbErr != nil {
			return fmt.Errorf("pod-reader Role/RoleBinding: %v, %v", roleErr, rbErr)
		}
		wantRules := []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		}
		if d := cmp.Diff(wantRules, role.Rules); d != "" {
			return fmt.Errorf("role rules (-want +got):\n%s", d)
		}
		var subjects []rbacv1.Subject
		for _, g := range readers {
			subjects = append(subjects, rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: g})
		}
		if d := cmp.Diff(subjects, rb.Subjects); d != "" {
			return fmt.Errorf("rolebinding subjects (-want +got):\n%s", d)
		}
		if want := (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "trainyard-pod-readers"}); rb.RoleRef != want {
			return fmt.Errorf("rolebinding roleRef %+v, want %+v", rb.RoleRef, want)
		}
		if err := hasLabels("role", role.Labels, mine); err != nil {
			return err
		}
		if err := hasLabels("rolebinding", rb.Labels, mine); err != nil {
			return err
		}
	}

	rq, err := c.CoreV1().ResourceQuotas(ns).Get(ctx, "trainyard-quota", metav1.GetOptions{})
	if len(hard) == 0 {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("resourcequota must not exist without a quota (err %v)", err)
		}
	} else {
		if err != nil {
			return err
		}
		if !equality.Semantic.DeepEqual(rq.Spec, corev1.ResourceQuotaSpec{Hard: hard}) {
			return fmt.Errorf("resourcequota spec %v, want hard %v", rq.Spec, hard)
		}
		if err := hasLabels("resourcequota", rq.Labels, mine); err != nil {
			return err
		}
	}

	lr, err := c.CoreV1().LimitRanges(ns).Get(ctx, "trainyard-defaults", metav1.GetOptions{})
	if err != nil {
		return err
	}
	wantLimits := []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi"),
	}}}
	if !equality.Semantic.DeepEqual(lr.Spec.Limits, wantLimits) {
		return fmt.Errorf("limitrange %v, want %v", lr.Spec.Limits, wantLimits)
	}

	np, err := c.NetworkingV1().NetworkPolicies(ns).Get(ctx, "trainyard-same-namespace", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if d := cmp.Diff(wantNetworkPolicy([]string{"169.254.169.254/32"}, []string{"fd00:ec2::254/128"}), np.Spec); d != "" {
		return fmt.Errorf("networkpolicy spec (-want +got):\n%s", d)
	}
	if err := hasLabels("networkpolicy", np.Labels, mine); err != nil {
		return err
	}

	// The API server reads pod logs here, and only in tenant namespaces.
	logs, err := c.RbacV1().RoleBindings(ns).Get(ctx, "trainyard-api-pod-logs", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if want := (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "trainyard-api-pod-logs"}); logs.RoleRef != want {
		return fmt.Errorf("api pod-logs roleRef %+v, want %+v", logs.RoleRef, want)
	}
	if d := cmp.Diff([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "trainyard-api", Namespace: "trainyard"}}, logs.Subjects); d != "" {
		return fmt.Errorf("api pod-logs subjects (-want +got):\n%s", d)
	}
	if err := hasLabels("api pod-logs rolebinding", logs.Labels, mine); err != nil {
		return err
	}

	// Every replica pod's DNS name is under this Service.
	svc, err := c.CoreV1().Services(ns).Get(ctx, job.ReplicaService, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || len(svc.Spec.Selector) > 0 || len(svc.Spec.Ports) > 0 {
		return fmt.Errorf("service of replicas %+v, want headless, publishing not-ready addresses, no selector, no ports", svc.Spec)
	}
	return hasLabels("service of replicas", svc.Labels, mine)
}

// wantNetworkPolicy is the tenant NetworkPolicy as the API server returns
// it: ingress from the namespace only; egress to the namespace, cluster
// DNS, and anywhere but the exceptions.
func wantNetworkPolicy(exceptV4, exceptV6 []string) networkingv1.NetworkPolicySpec {
	udp, tcp, dns := corev1.ProtocolUDP, corev1.ProtocolTCP, intstr.FromInt32(53)
	return networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}},
		Egress: []networkingv1.NetworkPolicyEgressRule{
			{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}},
			{
				To: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
					PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
				}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
			},
			{To: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: exceptV4}},
				{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: exceptV6}},
			}},
		},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
	}
}

var visionHard = corev1.ResourceList{
	"requests.nvidia.com/gpu": resource.MustParse("4"),
	"requests.cpu":            resource.MustParse("16"),
	"requests.memory":         resource.MustParse("64Gi"),
	"pods":                    resource.MustParse("20"),
}

// startVision stores visionTenant and waits until its namespace is in
// shape; inShape checks that again.
func (b *bundle) startVision(t *testing.T) (tn tenant.Tenant, ns string, inShape func() error) {
	t.Helper()
	tn = b.createTenant(t, visionTenant())
	ns = b.ns(tn.ID)
	inShape = func() error {
		return checkTenantObjects(b.admin, ns, tn.ID, []string{"oidc:ml-platform", "oidc:vision-readers"}, visionHard)
	}
	eventually(t, 30*time.Second, inShape)
	return tn, ns, inShape
}

// Two controllers run, as two worker replicas would: they must agree, and
// once the namespace is in shape neither writes anything.
func TestCreateTenantYieldsEveryObject(t *testing.T) {
	b := setup(t, setupOpts{controllers: 2})
	began := time.Now()
	tn, _, _ := b.startVision(t)
	// The resync is an hour away: LISTEN/NOTIFY brought the tenant in.
	t.Logf("tenant namespace complete %s after the tenant was created", time.Since(began).Round(time.Millisecond))

	// Steady state: a pass over a namespace in shape writes nothing.
	b.reconcileNow(t, tn.ID)
	w := b.writes(t)
	b.reconcileNow(t, tn.ID)
	b.reconcileNow(t, tn.ID)
	require.Equal(t, w, b.writes(t), "reconciling an unchanged tenant must not write")
}

func TestDriftIsRepaired(t *testing.T) {
	b := setup(t, setupOpts{})
	tn, ns, inShape := b.startVision(t)
	ctx := ctxT(t)
	core, rbac := b.admin.CoreV1(), b.admin.RbacV1()

	for _, tc := range []struct {
		name  string
		drift func() error
	}{
		{"quota edited", func() error {
			rq, err := core.ResourceQuotas(ns).Get(ctx, "trainyard-quota", metav1.GetOptions{})
			if err != nil {
				return err
			}
			rq.Spec.Hard["requests.nvidia.com/gpu"] = resource.MustParse("1000")
			rq.Spec.Hard["secrets"] = resource.MustParse("5") // a key Trainyard does not set goes too
			_, err = core.ResourceQuotas(ns).Update(ctx, rq, metav1.UpdateOptions{})
			return err
		}},
		{"quota deleted", func() error {
			return core.ResourceQuotas(ns).Delete(ctx, "trainyard-quota", metav1.DeleteOptions{})
		}},
		{"network policy deleted", func() error {
			return b.admin.NetworkingV1().NetworkPolicies(ns).Delete(ctx, "trainyard-same-namespace", metav1.DeleteOptions{})
		}},
		{"network policy opened to every namespace", func() error {
			np, err := b.admin.NetworkingV1().NetworkPolicies(ns).Get(ctx, "trainyard-same-namespace", metav1.GetOptions{})
			if err != nil {
				return err
			}
			np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}} // from anywhere
			_, err = b.admin.NetworkingV1().NetworkPolicies(ns).Update(ctx, np, metav1.UpdateOptions{})
			return err
		}},
		{"network policy unlabelled and emptied", func() error {
			// Without the managed-by label it drops out of the informer: the
			// create that follows finds it and takes it back.
			np, err := b.admin.NetworkingV1().NetworkPolicies(ns).Get(ctx, "trainyard-same-namespace", metav1.GetOptions{})
			if err != nil {
				return err
			}
			delete(np.Labels, "app.kubernetes.io/managed-by")
			np.Spec.Ingress = nil
			np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
			_, err = b.admin.NetworkingV1().NetworkPolicies(ns).Update(ctx, np, metav1.UpdateOptions{})
			return err
		}},
		{"network policy egress opened", func() error {
			np, err := b.admin.NetworkingV1().NetworkPolicies(ns).Get(ctx, "trainyard-same-namespace", metav1.GetOptions{})
			if err != nil {
				return err
			}
			np.Spec.Egress = nil
			np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
			_, err = b.admin.NetworkingV1().NetworkPolicies(ns).Update(ctx, np, metav1.UpdateOptions{})
			return err
		}},
		{"network policy lets pods reach the metadata endpoint", func() error {
			np, err := b.admin.NetworkingV1().NetworkPolicies(ns).Get(ctx, "trainyard-same-namespace", metav1.GetOptions{})
			if err != nil {
				return err
			}
			np.Spec.Egress[2].To[0].IPBlock.Except = nil
			_, err = b.admin.NetworkingV1().NetworkPolicies(ns).Update(ctx, np, metav1.UpdateOptions{})
			return err
		}},
		{"api pod-logs binding given to everyone", func() error {
			rb, err := rbac.RoleBindings(ns).Get(ctx, "trainyard-api-pod-logs", metav1.GetOptions{})
			if err != nil {
				return err
			}
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:authenticated"})
			_, err = rbac.RoleBindings(ns).Update(ctx, rb, metav1.UpdateOptions{})
			return err
		}},
		{"service of replicas deleted", func() error {
			return core.Services(ns).Delete(ctx, job.ReplicaService, metav1.DeleteOptions{})
		}},
		{"service of replicas made to hide starting replicas", func() error {
			svc, err := core.Services(ns).Get(ctx, job.ReplicaService, metav1.GetOptions{})
			if err != nil {
				return err
			}
			svc.Spec.PublishNotReadyAddresses = false
			_, err = core.Services(ns).Update(ctx, svc, metav1.UpdateOptions{})
			return err
		}},
		{"api pod-logs binding deleted", func() error {
			return rbac.RoleBindings(ns).Delete(ctx, "trainyard-api-pod-logs", metav1.DeleteOptions{})
		}},
		{"PSA enforce label removed", func() error {
			n, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return err
			}
			delete(n.Labels, "pod-security.kubernetes.io/enforce")
			_, err = core.Namespaces().Update(ctx, n, metav1.UpdateOptions{})
			return err
		}},
		{"PSA enforce lowered to privileged", func() error {
			n, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
			_, err = core.Namespaces().Update(ctx, n, metav1.UpdateOptions{})
			return err
		}},
		{"rolebinding subjects changed", func() error {
			rb, err := rbac.RoleBindings(ns).Get(ctx, "trainyard-pod-readers", metav1.GetOptions{})
			if err != nil {
				return err
			}
			rb.Subjects = []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:authenticated"}}
			_, err = rbac.RoleBindings(ns).Update(ctx, rb, metav1.UpdateOptions{})
			return err
		}},
		{"rolebinding re-pointed at another role", func() error {
			// roleRef is immutable: the binding must be deleted and created.
			// The controller re-creates it as soon as it is deleted, so
			// delete and create until the impostor gets in.
			impostor := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "trainyard-pod-readers", Labels: map[string]string{
					"app.kubernetes.io/managed-by": "trainyard", "trainyard.dev/tenant": tn.ID}},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "oidc:vision-readers"}},
			}
			for range 50 {
				err := rbac.RoleBindings(ns).Delete(ctx, impostor.Name, metav1.DeleteOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					return err
				}
				_, err = rbac.RoleBindings(ns).Create(ctx, impostor, metav1.CreateOptions{})
				if err == nil {
					return nil
				}
				if !apierrors.IsAlreadyExists(err) {
					return err
				}
			}
			return errors.New("the controller always re-created the binding first")
		}},
		{"role widened to secrets", func() error {
			r, err := rbac.Roles(ns).Get(ctx, "trainyard-pod-readers", metav1.GetOptions{})
			if err != nil {
				return err
			}
			r.Rules = append(r.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
			_, err = rbac.Roles(ns).Update(ctx, r, metav1.UpdateOptions{})
			return err
		}},
		{"service account token automount turned on", func() error {
			sa, err := core.ServiceAccounts(ns).Get(ctx, "trainyard-job", metav1.GetOptions{})
			if err != nil {
				return err
			}
			sa.AutomountServiceAccountToken = new(true)
			_, err = core.ServiceAccounts(ns).Update(ctx, sa, metav1.UpdateOptions{})
			return err
		}},
		{"service account deleted", func() error {
			return core.ServiceAccounts(ns).Delete(ctx, "trainyard-job", metav1.DeleteOptions{})
		}},
		{"limit range deleted", func() error {
			return core.LimitRanges(ns).Delete(ctx, "trainyard-defaults", metav1.DeleteOptions{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.drift())
			began := time.Now()
			eventually(t, 30*time.Second, inShape)
			t.Logf("repaired in %s", time.Since(began).Round(time.Millisecond))
		})
	}
}

// A quota that no longer limits anything and reader groups that were
// removed take their objects with them; a later quota brings it back.
func TestTenantUpdateAddsAndRemovesObjects(t *testing.T) {
	b := setup(t, setupOpts{})
	tn, ns, _ := b.startVision(t)

	_, err := b.st.TenantUpdate(ctxT(t), tn.ID, func(t *tenant.Tenant) error {
		t.Quota = tenant.Quota{}
		t.PodReaderGroups = nil
		return nil
	})
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() error { return checkTenantObjects(b.admin, ns, tn.ID, nil, nil) })

	_, err = b.st.TenantUpdate(ctxT(t), tn.ID, func(t *tenant.Tenant) error {
		t.Quota = tenant.Quota{GPU: 2}
		t.PodReaderGroups = []string{"oidc:vision-readers"}
		return nil
	})
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() error {
		return checkTenantObjects(b.admin, ns, tn.ID, []string{"oidc:vision-readers"},
			corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("2")})
	})
}

// PSA levels are configurable: a platform that enforces restricted gets it.
func TestPodSecurityLevelsAreConfigurable(t *testing.T) {
	b := setup(t, setupOpts{options: kube.TenantOptions{PSAEnforce: "restricted", PSAWarn: "restricted"}})
	tn := b.createTenant(t, tenant.Tenant{ID: "strict"})
	eventually(t, 30*time.Second, func() error {
		n, err := getNS(t, b.admin, b.ns(tn.ID))
		if err != nil {
			return err
		}
		if got := n.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
			return fmt.Errorf("enforce label %q, want restricted", got)
		}
		return nil
	})
}

// The egress exceptions and the API server's ServiceAccount are options:
// the NetworkPolicy and the pod-logs binding follow them.
func TestEgressAndAPIAccountAreConfigurable(t *testing.T) {
	b := setup(t, setupOpts{options: kube.TenantOptions{
		EgressDenyCIDRs:   []string{"169.254.169.254/32", "10.96.0.0/12", "10.244.0.0/16"},
		APIServiceAccount: "platform:trainyard-server",
	}})
	tn := b.createTenant(t, tenant.Tenant{ID: "egress"})
	ns := b.ns(tn.ID)
	eventually(t, 30*time.Second, func() error {
		np, err := b.admin.NetworkingV1().NetworkPolicies(ns).Get(context.Background(), "trainyard-same-namespace", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d := cmp.Diff(wantNetworkPolicy([]string{"10.244.0.0/16", "10.96.0.0/12", "169.254.169.254/32"}, nil), np.Spec); d != "" {
			return fmt.Errorf("networkpolicy spec (-want +got):\n%s", d)
		}
		rb, err := b.admin.RbacV1().RoleBindings(ns).Get(context.Background(), "trainyard-api-pod-logs", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d := cmp.Diff([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "trainyard-server", Namespace: "platform"}}, rb.Subjects); d != "" {
			return fmt.Errorf("api pod-logs subjects (-want +got):\n%s", d)
		}
		return nil
	})
	// In shape: nothing more is written (the API server's defaulting does
	// not make the rendered policy look different).
	b.reconcileNow(t, tn.ID)
	w := b.writes(t)
	b.reconcileNow(t, tn.ID)
	require.Equal(t, w, b.writes(t))

	_, err := New(Config{Store: b.st, Client: b.admin, Options: kube.TenantOptions{EgressDenyCIDRs: []string{"0.0.0.0/0"}}})
	require.ErrorContains(t, err, "0.0.0.0/0")
	_, err = New(Config{Store: b.st, Client: b.admin, Options: kube.TenantOptions{APIServiceAccount: "trainyard-api"}})
	require.ErrorContains(t, err, "namespace:name")
}

// A ResourceQuota's usage changes with every pod created or ended in the
// namespace (the API server's quota admission writes it at each create).
// None of those updates is a reason for a pass: at a job's five pods they
// were five passes a job, each reading the tenant from Postgres.
func TestQuotaUsageNeedsNoPass(t *testing.T) {
	b := setup(t, setupOpts{})
	tn, ns, inShape := b.startVision(t)
	b.reconcileNow(t, tn.ID)
	ctx := ctxT(t)
	core := b.admin.CoreV1()
	before := b.passCount(tn.ID)

	const pods = 8
	for i := range pods {
		_, err := core.Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("train-worker-%d", i),
				Annotations: map[string]string{"sim.trainyard.dev/run-forever": "true"}},
			Spec: corev1.PodSpec{ServiceAccountName: "trainyard-job", AutomountServiceAccountToken: new(false),
				Containers: []corev1.Container{{Name: "tensorflow", Image: "tensorflow/tensorflow:2.16.1"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	eventually(t, 30*time.Second, func() error {
		rq, err := core.ResourceQuotas(ns).Get(ctx, "trainyard-quota", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if used := rq.Status.Used[corev1.ResourcePods]; used.Value() != pods {
			return fmt.Errorf("quota counts %s pods, want %d", used.String(), pods)
		}
		return nil
	})
	// A barrier: the informer delivers the quota's updates in order, so a
	// spec edit after the usage's reaches the controller after them. Its
	// pass repairs it, and the repair's own update may bring one more.
	rq, err := core.ResourceQuotas(ns).Get(ctx, "trainyard-quota", metav1.GetOptions{})
	require.NoError(t, err)
	rq.Spec.Hard[corev1.ResourcePods] = resource.MustParse("1000")
	_, err = core.ResourceQuotas(ns).Update(ctx, rq, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, 30*time.Second, inShape)
	b.reconcileNow(t, tn.ID)
	passes := b.passCount(tn.ID) - before
	t.Logf("%d passes over %d pod creates, a quota edit and its repair", passes, pods)
	// The edit's pass, the repair's echo, reconcileNow's and a spare (3-4
	// seen); a pass per usage update made it 11-13.
	require.LessOrEqual(t, passes, 5, "the quota's usage updates must not cost a pass each")
}
