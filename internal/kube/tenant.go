package kube

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/tenant"
)

// Names of the objects in a tenant namespace.
const (
	DefaultNamespacePrefix   = "ty-"
	DefaultJobServiceAccount = "trainyard-job"
	PodReadersName           = "trainyard-pod-readers"
	QuotaName                = "trainyard-quota"
	LimitRangeName           = "trainyard-defaults"
	NetworkPolicyName        = "trainyard-same-namespace"
)

// Pod Security Admission namespace labels.
const (
	LabelPSAEnforce        = "pod-security.kubernetes.io/enforce"
	LabelPSAEnforceVersion = "pod-security.kubernetes.io/enforce-version"
	LabelPSAWarn           = "pod-security.kubernetes.io/warn"
	LabelPSAWarnVersion    = "pod-security.kubernetes.io/warn-version"
	LabelPSAAudit          = "pod-security.kubernetes.io/audit"
	LabelPSAAuditVersion   = "pod-security.kubernetes.io/audit-version"
)

// ResourceGPU is the extended resource GPUs are requested as.
const ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

// TenantOptions shape the objects in every tenant namespace. The zero value
// is usable: WithDefaults fills every empty field.
type TenantOptions struct {
	// NamespacePrefix is put before the tenant id when the tenant record
	// names no namespace. Defaults to "ty-".
	NamespacePrefix string
	// PSAEnforce is the Pod Security level enforced. Defaults to "baseline".
	PSAEnforce string
	// PSAWarn is the level warned about. Defaults to "restricted".
	PSAWarn string
	// PSAAudit is the level audited. Defaults to PSAWarn.
	PSAAudit string
	// JobServiceAccount is the ServiceAccount job pods run as. Defaults to
	// "trainyard-job".
	JobServiceAccount string
	// DefaultRequests are the LimitRange's default container requests.
	// Defaults (when nil) to cpu 100m, memory 256Mi; an empty list sets none.
	DefaultRequests corev1.ResourceList
	// DefaultLimits are the LimitRange's default container limits.
	// Defaults to none. The quota constrains requests only, so limits are
	// not needed for pods to be admitted; a default memory limit would
	// OOM-kill the jobs of users who named no memory (whoever names memory
	// gets it as a limit, see RenderPod), and a default CPU limit would
	// throttle training and make invalid every pod requesting more CPU.
	DefaultLimits corev1.ResourceList
}

// WithDefaults returns o with every empty field set to its default.
func (o TenantOptions) WithDefaults() TenantOptions {
	if o.NamespacePrefix == "" {
		o.NamespacePrefix = DefaultNamespacePrefix
	}
	if o.PSAEnforce == "" {
		o.PSAEnforce = "baseline"
	}
	if o.PSAWarn == "" {
		o.PSAWarn = "restricted"
	}
	if o.PSAAudit == "" {
		o.PSAAudit = o.PSAWarn
	}
	if o.JobServiceAccount == "" {
		o.JobServiceAccount = DefaultJobServiceAccount
	}
	if o.DefaultRequests == nil {
		o.DefaultRequests = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("256Mi"),
		}
	}
	return o
}

// NamespaceName is the namespace of tenant tenantID.
func NamespaceName(prefix, tenantID string) string { return prefix + tenantID }

// TenantObjects are the objects the worker keeps ensured in a tenant
// namespace. Nil fields are objects the tenant must not have: the worker
// deletes them if they exist (a tenant whose quota or reader groups were
// removed).
type TenantObjects struct {
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	// Role and RoleBinding are nil when the tenant has no pod reader groups.
	Role        *rbacv1.Role
	RoleBinding *rbacv1.RoleBinding
	// ResourceQuota is nil when the tenant's quota limits nothing.
	ResourceQuota *corev1.ResourceQuota
	LimitRange    *corev1.LimitRange
	NetworkPolicy *networkingv1.NetworkPolicy
}

// RenderTenant renders the namespace of t and what lives in it (except
// Secrets: see RenderSecret). The namespace is t.Namespace, or
// NamespaceName(opts.NamespacePrefix, t.ID) when that is empty. The error
// (wrapping ErrInvalidSpec) is a quota quantity that does not parse.
func RenderTenant(t tenant.Tenant, opts TenantOptions) (TenantObjects, error) {
	opts = opts.WithDefaults()
	ns := t.Namespace
	if ns == "" {
		ns = NamespaceName(opts.NamespacePrefix, t.ID)
	}
	quota, err := renderQuota(t, ns)
	if err != nil {
		return TenantObjects{}, err
	}
	objs := TenantObjects{
		Namespace: &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: namespaceLabels(t.ID, opts)},
		},
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: tenantMeta(t.ID, ns, opts.JobServiceAccount),
			// Job pods never talk to the API server; the account exists so
			// they do not run as "default", which others may bind rights to.
			AutomountServiceAccountToken: new(false),
		},
		ResourceQuota: quota,
		LimitRange: &corev1.LimitRange{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
			ObjectMeta: tenantMeta(t.ID, ns, LimitRangeName),
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type:           corev1.LimitTypeContainer,
				Default:        nonEmpty(opts.DefaultLimits),
				DefaultRequest: nonEmpty(opts.DefaultRequests),
			}}},
		},
		NetworkPolicy: renderNetworkPolicy(t.ID, ns),
	}
	objs.Role, objs.RoleBinding = renderPodReaders(t, ns)
	return objs, nil
}

func nonEmpty(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return nil
	}
	return l.DeepCopy()
}

func namespaceLabels(tenantID string, opts TenantOptions) map[string]string {
	return map[string]string{
		LabelManagedBy:         ManagedByValue,
		LabelTenant:            tenantID,
		LabelPSAEnforce:        opts.PSAEnforce,
		LabelPSAEnforceVersion: "latest",
		LabelPSAWarn:           opts.PSAWarn,
		LabelPSAWarnVersion:    "latest",
		LabelPSAAudit:          opts.PSAAudit,
		LabelPSAAuditVersion:   "latest",
	}
}

func tenantMeta(tenantID, ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: ns,
		Labels:    map[string]string{LabelManagedBy: ManagedByValue, LabelTenant: tenantID},
	}
}

// renderPodReaders lets the tenant's groups read pods and their logs in the
// namespace, and nothing else: no exec, no port-forward, no secrets.
func renderPodReaders(t tenant.Tenant, ns string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	groups := slices.Clone(t.PodReaderGroups)
	slices.Sort(groups)
	groups = slices.Compact(groups)
	groups = slices.DeleteFunc(groups, func(g string) bool { return g == "" })
	if len(groups) == 0 {
		return nil, nil
	}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: tenantMeta(t.ID, ns, PodReadersName),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: tenantMeta(t.ID, ns, PodReadersName),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: PodReadersName},
	}
	for _, g := range groups {
		// The name is the group exactly as the API server's authenticator
		// presents it (including any --oidc-groups-prefix): a platform
		// admin configures PodReaderGroups in that form.
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
	}
	return role, binding
}

// renderQuota turns the tenant quota into a ResourceQuota on requests and
// pod count. Limits are not constrained: Trainyard admits jobs by requests
// and sets no CPU limit unless asked, so a limits.* quota would refuse pods.
func renderQuota(t tenant.Tenant, ns string) (*corev1.ResourceQuota, error) {
	hard := corev1.ResourceList{}
	if t.Quota.GPU > 0 {
		hard[corev1.DefaultResourceRequestsPrefix+ResourceGPU] = *resource.NewQuantity(int64(t.Quota.GPU), resource.DecimalSI)
	}
	for name, s := range map[corev1.ResourceName]string{corev1.ResourceRequestsCPU: t.Quota.CPU, corev1.ResourceRequestsMemory: t.Quota.Memory} {
		if s == "" {
			continue
		}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return nil, fmt.Errorf("%w: tenant %s quota %s %q: %v", ErrInvalidSpec, t.ID, name, s, err)
		}
		if !q.IsZero() {
			hard[name] = q
		}
	}
	if t.Quota.Pods > 0 {
		hard[corev1.ResourcePods] = *resource.NewQuantity(int64(t.Quota.Pods), resource.DecimalSI)
	}
	if len(hard) == 0 {
		return nil, nil
	}
	return &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: tenantMeta(t.ID, ns, QuotaName),
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}, nil
}

// renderNetworkPolicy admits ingress to every pod of the namespace only from
// pods of the same namespace. Since every tenant namespace has one, no
// tenant can reach another's pods. Egress stays open: training reads data
// and writes models to object stores and registries outside the cluster,
// resolves names through cluster DNS, and a deny-by-default egress list
// would be different for every tenant; what isolation needs is that nothing
// reaches in.
func renderNetworkPolicy(tenantID, ns string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: tenantMeta(tenantID, ns, NetworkPolicyName),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}},
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
}

// RenderSecret is tenant secret secretID as a Kubernetes Secret named
// secretID in namespace ns. It is the only place secret values are put into
// an object; nothing else in Trainyard holds them.
func RenderSecret(tenantID, ns, secretID string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: tenantMeta(tenantID, ns, secretID),
		Type:       corev1.SecretTypeOpaque,
		Data:       make(map[string][]byte, len(data)),
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}
