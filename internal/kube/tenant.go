package kube

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Names of the objects in a tenant namespace.
const (
	DefaultJobServiceAccount = "trainyard-job"
	PodReadersName           = "trainyard-pod-readers"
	QuotaName                = "trainyard-quota"
	LimitRangeName           = "trainyard-defaults"
	NetworkPolicyName        = "trainyard-same-namespace"
	// APIPodLogsName names the RoleBinding in every tenant namespace that
	// lets the API server read pod logs there, and the ClusterRole of
	// deploy/ it refers to (get on pods/log, bound nowhere else).
	APIPodLogsName = "trainyard-api-pod-logs"
	// APITensorBoardName names the RoleBinding in every tenant namespace
	// that lets the API server port-forward to pods there (its TensorBoard
	// proxy), and the ClusterRole of deploy/ it refers to (create on
	// pods/portforward, bound nowhere else).
	APITensorBoardName = "trainyard-api-tensorboard"
	// DefaultAPIServiceAccount is the API server's ServiceAccount in
	// deploy/, as namespace:name.
	DefaultAPIServiceAccount = "trainyard:trainyard-api"
)

// DefaultEgressDenyCIDRs are the addresses tenant pods may not reach when
// TenantOptions.EgressDenyCIDRs is nil: the cloud instance metadata
// endpoint (IPv4 on every major cloud, and AWS's IPv6 one), which hands
// out the node's cloud credentials.
var DefaultEgressDenyCIDRs = []string{"169.254.169.254/32", "fd00:ec2::254/128"}

// Cluster DNS as tenant pods reach it: pods labelled k8s-app=kube-dns in
// kube-system (CoreDNS and kube-dns both carry it), on port 53.
const (
	DNSNamespace = "kube-system"
	DNSPodLabel  = "k8s-app"
	DNSPodValue  = "kube-dns"
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
var ResourceGPU = corev1.ResourceName(job.GPU.Name())

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
	// Defaults (when nil) to job.DefaultCPURequest and
	// job.DefaultMemoryRequest, which job.Spec.Demand counts for replicas
	// that name none; an empty list sets none.
	DefaultRequests corev1.ResourceList
	// DefaultLimits are the LimitRange's default container limits.
	// Defaults to none. The quota constrains requests only, so limits are
	// not needed for pods to be admitted; a default memory limit would
	// OOM-kill the jobs of users who named no memory (whoever names memory
	// gets it as a limit, see RenderPod), and a default CPU limit would
	// throttle training and make invalid every pod requesting more CPU.
	DefaultLimits corev1.ResourceList
	// EgressDenyCIDRs are the address ranges (IPv4 or IPv6 CIDRs) tenant
	// pods may not open connections to, as exceptions from the "anywhere"
	// egress rule of the NetworkPolicy. Defaults (when nil) to
	// DefaultEgressDenyCIDRs, the cloud metadata endpoint; an empty list
	// denies nothing. Add the cluster's pod, Service and node ranges to
	// keep jobs off in-cluster services — but not a range an object store
	// or registry the jobs need lives in. Pods of the same namespace and
	// cluster DNS stay reachable whatever is listed.
	EgressDenyCIDRs []string
	// APIServiceAccount is the API server's ServiceAccount, as
	// namespace:name; a RoleBinding in every tenant namespace lets it read
	// pod logs there (the ClusterRole APIPodLogsName). Defaults to
	// DefaultAPIServiceAccount.
	APIServiceAccount string
	// WorkerServiceAccount is the worker's ServiceAccount, as
	// namespace:name; the TenantSecretsName RoleBinding lets it read and
	// write Secrets in every tenant namespace. Defaults to
	// DefaultWorkerServiceAccount.
	WorkerServiceAccount string
}

// WithDefaults returns o with every empty field set to its default.
func (o TenantOptions) WithDefaults() TenantOptions {
	if o.NamespacePrefix == "" {
		o.NamespacePrefix = tenant.DefaultNamespacePrefix
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
			corev1.ResourceCPU:    resource.MustParse(job.DefaultCPURequest),
			corev1.ResourceMemory: resource.MustParse(job.DefaultMemoryRequest),
		}
	}
	if o.EgressDenyCIDRs == nil {
		o.EgressDenyCIDRs = slices.Clone(DefaultEgressDenyCIDRs)
	}
	if o.APIServiceAccount == "" {
		o.APIServiceAccount = DefaultAPIServiceAccount
	}
	if o.WorkerServiceAccount == "" {
		o.WorkerServiceAccount = DefaultWorkerServiceAccount
	}
	return o
}

// Validate reports the options the API server would refuse in the objects
// rendered from them: Pod Security levels, egress CIDRs, the API server's
// ServiceAccount. It checks o as given; call it on o.WithDefaults() to
// check what RenderTenant uses.
func (o TenantOptions) Validate() error {
	var errs []error
	for _, level := range []string{o.PSAEnforce, o.PSAWarn, o.PSAAudit} {
		switch level {
		case "", "privileged", "baseline", "restricted":
		default:
			errs = append(errs, fmt.Errorf("pod security level %q: want privileged, baseline or restricted", level))
		}
	}
	for _, c := range o.EgressDenyCIDRs {
		if _, err := parseDenyCIDR(c); err != nil {
			errs = append(errs, err)
		}
	}
	for who, account := range map[string]string{"API server": o.APIServiceAccount, "worker": o.WorkerServiceAccount} {
		if account == "" {
			continue
		}
		if _, _, err := parseServiceAccount(account); err != nil {
			errs = append(errs, fmt.Errorf("%s %w", who, err))
		}
	}
	return errors.Join(errs...)
}

// parseDenyCIDR parses one of EgressDenyCIDRs and masks it (10.1.2.3/8 is
// 10.0.0.0/8). A prefix of length 0 is refused: the API server accepts
// only exceptions strictly inside the rule's 0.0.0.0/0 or ::/0.
func parseDenyCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("egress deny CIDR %q: %v", s, err)
	}
	if p.Bits() == 0 {
		return netip.Prefix{}, fmt.Errorf("egress deny CIDR %q: a /0 would deny the whole address family; name narrower ranges", s)
	}
	return p.Masked(), nil
}

// parseServiceAccount splits namespace:name.
func parseServiceAccount(s string) (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(s, ":")
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", "", fmt.Errorf("service account %q: want namespace:name", s)
	}
	return namespace, name, nil
}

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
	// APIPodLogs lets the API server's ServiceAccount read pod logs in the
	// namespace, and nowhere else: it holds no cluster-wide log right.
	APIPodLogs *rbacv1.RoleBinding
	// APITensorBoard lets the API server's ServiceAccount port-forward to
	// pods in the namespace, for its TensorBoard proxy, and nowhere else.
	APITensorBoard *rbacv1.RoleBinding
	// ReplicaService is the headless Service the replicas of every job in
	// the namespace are named under (RenderReplicaService).
	ReplicaService *corev1.Service
	// TenantSecrets lets the worker read and write Secrets in the
	// namespace, and nowhere else (TenantSecretsName).
	TenantSecrets *rbacv1.RoleBinding
}

// RenderTenant renders the namespace of t and what lives in it (except
// Secrets: see RenderSecret). The namespace is t.Namespace, or
// tenant.NamespaceName(opts.NamespacePrefix, t.ID) when that is empty. The error
// (wrapping ErrInvalidSpec) is a quota quantity that does not parse, or
// options that TenantOptions.Validate refuses.
func RenderTenant(t tenant.Tenant, opts TenantOptions) (TenantObjects, error) {
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return TenantObjects{}, fmt.Errorf("%w: tenant options: %v", ErrInvalidSpec, err)
	}
	ns := t.Namespace
	if ns == "" {
		ns = tenant.NamespaceName(opts.NamespacePrefix, t.ID)
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
		NetworkPolicy: renderNetworkPolicy(t.ID, ns, opts.EgressDenyCIDRs),
		APIPodLogs:    renderBinding(t.ID, ns, opts.APIServiceAccount, APIPodLogsName),
		// The worker may write this one although it holds no
		// port-forward right: deploy/ gives it "bind" on exactly this
		// ClusterRole (rbac-worker.yaml).
		APITensorBoard: renderBinding(t.ID, ns, opts.APIServiceAccount, APITensorBoardName),
		ReplicaService: RenderReplicaService(t.ID, ns),
		TenantSecrets:  renderBinding(t.ID, ns, opts.WorkerServiceAccount, TenantSecretsName),
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
//
// A tenant in a cohort may use more than its quota (its nominal share):
// the ResourceQuota is the most it may ever use, nominal plus its
// borrowing limit, so that Kubernetes stays a hard backstop; a resource
// it may borrow without a limit (the cohort's whole unused pool) is left
// out, as the pool is not the tenant's to know.
func renderQuota(t tenant.Tenant, ns string) (*corev1.ResourceQuota, error) {
	limits, err := t.Quota.Limits()
	if err != nil {
		return nil, fmt.Errorf("%w: tenant %s %v", ErrInvalidSpec, t.ID, err)
	}
	if t.Sharing.Cohort != "" {
		var borrow job.Vector // zero: no borrowing limit
		if b := t.Sharing.BorrowingLimit; b != nil {
			if borrow, err = b.Limits(); err != nil {
				return nil, fmt.Errorf("%w: tenant %s sharing.borrowingLimit: %v", ErrInvalidSpec, t.ID, err)
			}
		}
		for _, r := range job.AllResources {
			if borrow[r] == 0 {
				limits[r] = 0
			} else if limits[r] > 0 {
				limits[r] += borrow[r]
			}
		}
	}
	hard := corev1.ResourceList{}
	for _, r := range job.AllResources {
		if limits[r] == 0 {
			continue
		}
		name := corev1.ResourceName(r.Name())
		if r != job.Pods {
			name = corev1.DefaultResourceRequestsPrefix + name
		}
		hard[name] = r.Quantity(limits[r])
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

// renderNetworkPolicy confines every pod of the namespace both ways.
//
// Ingress only from pods of the same namespace: since every tenant
// namespace has one, no tenant reaches another's pods.
//
// Egress to pods of the same namespace (replicas talk to each other), to
// cluster DNS (pods labelled k8s-app=kube-dns in kube-system, UDP and TCP
// 53), and to any address except denyCIDRs (by default the cloud metadata
// endpoint, which hands out the node's credentials). Training reads data
// and writes models to object stores and registries outside the cluster,
// often at private addresses, so "anywhere" stays the rule and the
// exceptions are the platform's to list (TenantOptions.EgressDenyCIDRs).
// Whether an ipBlock also matches pod IPs is up to the network plugin;
// Trainyard's own namespace and other tenants are closed by their ingress
// policies whatever the plugin does here.
func renderNetworkPolicy(tenantID, ns string, denyCIDRs []string) *networkingv1.NetworkPolicy {
	var v4, v6 []string
	for _, c := range denyCIDRs {
		p, err := parseDenyCIDR(c)
		if err != nil {
			continue // Validate refused it before
		}
		if p.Addr().Is4() {
			v4 = append(v4, p.String())
		} else {
			v6 = append(v6, p.String())
		}
	}
	slices.Sort(v4)
	slices.Sort(v6)
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	dns := intstr.FromInt32(53)
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: tenantMeta(tenantID, ns, NetworkPolicyName),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}},
			}},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}},
				{
					To: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: DNSNamespace}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{DNSPodLabel: DNSPodValue}},
					}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
				},
				{To: []networkingv1.NetworkPolicyPeer{
					{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: v4}},
					{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: v6}},
				}},
			},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// renderBinding binds a ServiceAccount (namespace:name) to the ClusterRole
// of deploy/ named name in this namespace only, by a RoleBinding of the
// same name: the API server's to APIPodLogsName (get pods/log) and
// APITensorBoardName (create pods/portforward), the worker's to
// TenantSecretsName (get, list, create, update, delete secrets). The
// worker can write the first without "bind" as it holds get on pods/log
// itself; for the others deploy/ grants it "bind" on exactly those
// ClusterRoles.
func renderBinding(tenantID, ns, account, name string) *rbacv1.RoleBinding {
	saNamespace, saName, err := parseServiceAccount(account)
	if err != nil {
		return nil // Validate refused it before
	}
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: tenantMeta(tenantID, ns, name),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: saNamespace}},
	}
}

// RenderSecretReaders is the Role and RoleBinding SecretReadersName that
// let the API server's ServiceAccount get exactly the tenant's secrets,
// by name (the values it was handed by PutSecret), in namespace ns, to
// give copies to remote clusters' agents: not the webhook signing secrets
// or anything else there. Both are nil when there are no secrets (a Role
// without names would grant every Secret). Only the API server's own
// cluster has them. The worker may write the Role because it holds get on
// Secrets there itself (TenantSecretsName).
func RenderSecretReaders(tenantID, ns string, secrets []string, opts TenantOptions) (*rbacv1.Role, *rbacv1.RoleBinding) {
	names := slices.Clone(secrets)
	slices.Sort(names)
	names = slices.Compact(names)
	names = slices.DeleteFunc(names, func(n string) bool { return n == "" })
	opts = opts.WithDefaults()
	saNamespace, saName, err := parseServiceAccount(opts.APIServiceAccount)
	if len(names) == 0 || err != nil {
		return nil, nil
	}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: tenantMeta(tenantID, ns, SecretReadersName),
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: names}},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: tenantMeta(tenantID, ns, SecretReadersName),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: SecretReadersName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: saNamespace}},
	}
	return role, binding
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
