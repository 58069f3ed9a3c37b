package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

func visionTenant() tenant.Tenant {
	return tenant.Tenant{
		ID:              "vision",
		Quota:           tenant.Quota{GPU: 8, CPU: "64", Memory: "256Gi", Pods: 100},
		PodReaderGroups: []string{"oidc:vision-readers", "oidc:ml-platform", "oidc:vision-readers"},
	}
}

var tenantLabels = map[string]string{"app.kubernetes.io/managed-by": "trainyard", "trainyard.dev/tenant": "vision"}

func TestRenderTenant(t *testing.T) {
	objs, err := RenderTenant(visionTenant(), TenantOptions{})
	require.NoError(t, err)

	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "ty-vision", Labels: tenantLabels}
	}
	want := TenantObjects{
		Namespace: &corev1.Namespace{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: "ty-vision", Labels: map[string]string{
				"app.kubernetes.io/managed-by":               "trainyard",
				"trainyard.dev/tenant":                       "vision",
				"pod-security.kubernetes.io/enforce":         "baseline",
				"pod-security.kubernetes.io/enforce-version": "latest",
				"pod-security.kubernetes.io/warn":            "restricted",
				"pod-security.kubernetes.io/warn-version":    "latest",
				"pod-security.kubernetes.io/audit":           "restricted",
				"pod-security.kubernetes.io/audit-version":   "latest",
			}},
		},
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta:                   meta("trainyard-job"),
			AutomountServiceAccountToken: new(false),
		},
		Role: &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: meta("trainyard-pod-readers"),
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
			},
		},
		RoleBinding: &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: meta("trainyard-pod-readers"),
			Subjects: []rbacv1.Subject{
				{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "oidc:ml-platform"},
				{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "oidc:vision-readers"},
			},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "trainyard-pod-readers"},
		},
		ResourceQuota: &corev1.ResourceQuota{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
			ObjectMeta: meta("trainyard-quota"),
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				"requests.nvidia.com/gpu": q("8"),
				"requests.cpu":            q("64"),
				"requests.memory":         q("256Gi"),
				"pods":                    q("100"),
			}},
		},
		LimitRange: &corev1.LimitRange{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
			ObjectMeta: meta("trainyard-defaults"),
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type:           corev1.LimitTypeContainer,
				DefaultRequest: corev1.ResourceList{"cpu": q("100m"), "memory": q("256Mi")},
			}}},
		},
		NetworkPolicy: &networkingv1.NetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
			ObjectMeta: meta("trainyard-same-namespace"),
			Spec:       wantNetworkPolicySpec([]string{"169.254.169.254/32"}, []string{"fd00:ec2::254/128"}),
		},
		APIPodLogs: &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: meta("trainyard-api-pod-logs"),
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "trainyard-api", Namespace: "trainyard"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "trainyard-api-pod-logs"},
		},
		APITensorBoard: &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: meta("trainyard-api-tensorboard"),
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "trainyard-api", Namespace: "trainyard"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "trainyard-api-tensorboard"},
		},
		ReplicaService: &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: meta("replicas"),
			Spec:       corev1.ServiceSpec{ClusterIP: "None", PublishNotReadyAddresses: true},
		},
		TenantSecrets: &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: meta("trainyard-tenant-secrets"),
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "trainyard-worker", Namespace: "trainyard"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "trainyard-tenant-secrets"},
		},
	}
	if diff := cmp.Diff(want, objs); diff != "" {
		t.Errorf("RenderTenant mismatch (-want +got):\n%s", diff)
	}
	for _, m := range []*metav1.ObjectMeta{
		&objs.Namespace.ObjectMeta, &objs.ServiceAccount.ObjectMeta, &objs.Role.ObjectMeta, &objs.RoleBinding.ObjectMeta,
		&objs.ResourceQuota.ObjectMeta, &objs.LimitRange.ObjectMeta, &objs.NetworkPolicy.ObjectMeta, &objs.APIPodLogs.ObjectMeta,
		&objs.APITensorBoard.ObjectMeta, &objs.ReplicaService.ObjectMeta, &objs.TenantSecrets.ObjectMeta,
	} {
		requireValidNames(t, m)
	}

	other, err := RenderTenant(visionTenant(), TenantOptions{WorkerServiceAccount: "ops:agent"})
	require.NoError(t, err)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "agent", Namespace: "ops"}}, other.TenantSecrets.Subjects)
	_, err = RenderTenant(visionTenant(), TenantOptions{WorkerServiceAccount: "no-colon"})
	require.ErrorContains(t, err, "worker service account")
}

// The API server reads the tenant's secrets by name and nothing else in
// the namespace; with no secrets there is no Role (one without names
// would grant every Secret).
func TestRenderSecretReaders(t *testing.T) {
	role, binding := RenderSecretReaders("vision", "ty-vision", []string{"s3", "db", "s3", ""}, TenantOptions{})
	require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"db", "s3"}}}, role.Rules)
	require.Equal(t, "trainyard-secret-readers", role.Name)
	require.Equal(t, tenantLabels, role.Labels)
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "trainyard-secret-readers"}, binding.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "trainyard-api", Namespace: "trainyard"}}, binding.Subjects)
	requireValidNames(t, &role.ObjectMeta)

	for _, none := range [][]string{nil, {""}} {
		role, binding = RenderSecretReaders("vision", "ty-vision", none, TenantOptions{})
		require.Nil(t, role)
		require.Nil(t, binding)
	}
}

// wantNetworkPolicySpec is the tenant NetworkPolicy with these egress
// exceptions: ingress from the namespace; egress to the namespace, to
// cluster DNS and to anywhere but the exceptions.
func wantNetworkPolicySpec(exceptV4, exceptV6 []string) networkingv1.NetworkPolicySpec {
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

// Egress exceptions are configurable, split by address family, masked and
// sorted; an empty list denies nothing.
func TestRenderTenantEgress(t *testing.T) {
	objs, err := RenderTenant(visionTenant(), TenantOptions{
		EgressDenyCIDRs: []string{"169.254.169.254/32", "10.96.0.0/12", " 10.244.1.7/16", "fd00:ec2::254/128", "100.100.100.200/32"},
	})
	require.NoError(t, err)
	if diff := cmp.Diff(wantNetworkPolicySpec(
		[]string{"10.244.0.0/16", "10.96.0.0/12", "100.100.100.200/32", "169.254.169.254/32"},
		[]string{"fd00:ec2::254/128"}), objs.NetworkPolicy.Spec); diff != "" {
		t.Errorf("network policy (-want +got):\n%s", diff)
	}

	objs, err = RenderTenant(visionTenant(), TenantOptions{EgressDenyCIDRs: []string{}})
	require.NoError(t, err)
	if diff := cmp.Diff(wantNetworkPolicySpec(nil, nil), objs.NetworkPolicy.Spec); diff != "" {
		t.Errorf("network policy without exceptions (-want +got):\n%s", diff)
	}

	for _, bad := range []string{"10.0.0.0", "0.0.0.0/0", "::/0", "10.0.0.0/33", "metadata"} {
		_, err := RenderTenant(visionTenant(), TenantOptions{EgressDenyCIDRs: []string{bad}})
		require.ErrorIs(t, err, ErrInvalidSpec, bad)
		require.ErrorContains(t, err, bad)
	}
}

// The API server reads pod logs through a RoleBinding in each tenant
// namespace; whose ServiceAccount it names is configurable.
func TestRenderTenantAPIPodLogs(t *testing.T) {
	objs, err := RenderTenant(visionTenant(), TenantOptions{APIServiceAccount: "platform:trainyard-server"})
	require.NoError(t, err)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "trainyard-server", Namespace: "platform"}}, objs.APIPodLogs.Subjects)
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "trainyard-api-pod-logs"}, objs.APIPodLogs.RoleRef)
	require.Equal(t, "ty-vision", objs.APIPodLogs.Namespace)
	require.Equal(t, objs.APIPodLogs.Subjects, objs.APITensorBoard.Subjects, "the same account proxies TensorBoard")

	for _, bad := range []string{"trainyard-api", "trainyard/trainyard-api", ":x", "Trainyard:api"} {
		_, err := RenderTenant(visionTenant(), TenantOptions{APIServiceAccount: bad})
		require.ErrorIs(t, err, ErrInvalidSpec, bad)
	}
	require.Error(t, TenantOptions{PSAEnforce: "lax"}.Validate())
	require.NoError(t, TenantOptions{}.WithDefaults().Validate())
}

func TestRenderTenantOptions(t *testing.T) {
	tn := visionTenant()
	tn.Namespace = "team-vision"
	objs, err := RenderTenant(tn, TenantOptions{
		NamespacePrefix: "ignored-", PSAEnforce: "restricted", PSAWarn: "restricted", PSAAudit: "baseline",
		JobServiceAccount: "jobs",
		DefaultRequests:   corev1.ResourceList{"cpu": q("1")},
		DefaultLimits:     corev1.ResourceList{"memory": q("8Gi")},
	})
	require.NoError(t, err)
	require.Equal(t, "team-vision", objs.Namespace.Name)
	require.Equal(t, "team-vision", objs.NetworkPolicy.Namespace)
	require.Equal(t, "restricted", objs.Namespace.Labels[LabelPSAEnforce])
	require.Equal(t, "baseline", objs.Namespace.Labels[LabelPSAAudit])
	require.Equal(t, "jobs", objs.ServiceAccount.Name)
	require.Equal(t, corev1.ResourceList{"cpu": q("1")}, objs.LimitRange.Spec.Limits[0].DefaultRequest)
	require.Equal(t, corev1.ResourceList{"memory": q("8Gi")}, objs.LimitRange.Spec.Limits[0].Default)

	tn.Namespace = ""
	objs, err = RenderTenant(tn, TenantOptions{NamespacePrefix: "trainyard-"})
	require.NoError(t, err)
	require.Equal(t, "trainyard-vision", objs.Namespace.Name, "tenant.NamespaceName")
}

func TestRenderTenantQuota(t *testing.T) {
	for name, tc := range map[string]struct {
		quota   tenant.Quota
		sharing tenant.Sharing
		hard    corev1.ResourceList // nil: no ResourceQuota
	}{
		"cohort, nominal plus borrowing limit": {quota: tenant.Quota{GPU: 8, Pods: 10}, sharing: tenant.Sharing{Cohort: "c", BorrowingLimit: &tenant.Quota{GPU: 8}},
			hard: corev1.ResourceList{"requests.nvidia.com/gpu": q("16")}},
		"cohort without borrowing limit": {quota: tenant.Quota{GPU: 8}, sharing: tenant.Sharing{Cohort: "c"}},
		"unlimited":                      {},
		"zero strings":                   {quota: tenant.Quota{CPU: "0", Memory: "0Gi"}},
		"gpus only":                      {quota: tenant.Quota{GPU: 2}, hard: corev1.ResourceList{"requests.nvidia.com/gpu": q("2")}},
		"cpu and memory":                 {quota: tenant.Quota{CPU: "500m", Memory: "1Gi"}, hard: corev1.ResourceList{"requests.cpu": q("500m"), "requests.memory": q("1Gi")}},
		"pods only":                      {quota: tenant.Quota{Pods: 10}, hard: corev1.ResourceList{"pods": q("10")}},
	} {
		t.Run(name, func(t *testing.T) {
			tn := visionTenant()
			tn.Quota, tn.Sharing = tc.quota, tc.sharing
			objs, err := RenderTenant(tn, TenantOptions{})
			require.NoError(t, err)
			if tc.hard == nil {
				require.Nil(t, objs.ResourceQuota)
				return
			}
			require.NotNil(t, objs.ResourceQuota)
			if diff := cmp.Diff(tc.hard, objs.ResourceQuota.Spec.Hard); diff != "" {
				t.Errorf("hard (-want +got):\n%s", diff)
			}
		})
	}

	tn := visionTenant()
	tn.Quota.Memory = "lots"
	_, err := RenderTenant(tn, TenantOptions{})
	require.ErrorIs(t, err, ErrInvalidSpec)
	require.ErrorContains(t, err, "quota.memory")
}

func TestRenderTenantWithoutReaders(t *testing.T) {
	for _, groups := range [][]string{nil, {}, {""}} {
		tn := visionTenant()
		tn.PodReaderGroups = groups
		objs, err := RenderTenant(tn, TenantOptions{})
		require.NoError(t, err)
		require.Nil(t, objs.Role)
		require.Nil(t, objs.RoleBinding)
		require.NotNil(t, objs.NetworkPolicy)
	}
}

func TestRenderSecret(t *testing.T) {
	s := RenderSecret("vision", "ty-vision", "wandb", map[string]string{"api-key": "s3cr3t"})
	want := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "wandb", Namespace: "ty-vision", Labels: tenantLabels},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"api-key": []byte("s3cr3t")},
	}
	require.Equal(t, want, s)
}

// Every resource dimension a tenant's quota limits becomes a hard limit of
// its ResourceQuota, so that what the scheduler admits and what the API
// server enforces agree dimension for dimension (job.AllResources is the
// one list of dimensions).
func TestRenderTenantQuotaCoversEveryDimension(t *testing.T) {
	tn := visionTenant()
	tn.Quota = tenant.Quota{GPU: 8, CPU: "64", Memory: "256Gi", Pods: 100}
	limits, err := tn.Quota.Limits()
	require.NoError(t, err)
	objs, err := RenderTenant(tn, TenantOptions{})
	require.NoError(t, err)
	hard := objs.ResourceQuota.Spec.Hard
	require.Len(t, hard, len(job.AllResources))
	for _, r := range job.AllResources {
		require.NotZero(t, limits[r], "the test quota limits %s", r.Name())
		name := corev1.ResourceName("requests." + r.Name())
		if r == job.Pods {
			name = corev1.ResourcePods
		}
		got, ok := hard[name]
		require.True(t, ok, "no hard limit for %s (%s)", r.Name(), name)
		amount, err := r.Amount(got)
		require.NoError(t, err)
		require.Equal(t, limits[r], amount, "%s", name)
	}
}
