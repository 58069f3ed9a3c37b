//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trainyard/trainyard/integration/deploytest"
	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/kube/kubeerr"
	"github.com/trainyard/trainyard/internal/pgtest"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/tenantctl"
)

// deploy/ is accepted by the real API server as it stands: every object
// passes validation and admission in a server-side dry run, and every pod
// Trainyard's own Deployments and Job would create meets Pod Security
// "restricted", which its namespace enforces.
func TestDeployManifestsPassServerDryRun(t *testing.T) {
	c := harness.Cluster(t)
	// Namespaced objects cannot be dry-run into a namespace that does not
	// exist yet; the namespace itself is part of deploy/.
	deploytest.EnsureNamespace(t, c)

	out, err := c.Kubectl("apply", "--dry-run=server", "-k", deploytest.Dir())
	require.NoError(t, err, out)
	for _, want := range []string{
		"namespace/trainyard", "serviceaccount/trainyard-api", "serviceaccount/trainyard-worker",
		"configmap/trainyard-config", "clusterrole.rbac.authorization.k8s.io/trainyard-worker",
		"clusterrolebinding.rbac.authorization.k8s.io/trainyard-api", "service/trainyard-api",
		"deployment.apps/trainyard-api", "deployment.apps/trainyard-worker", "job.batch/trainyard-migrate",
		"deployment.apps/trainyard-webhooks", "clusterrole.rbac.authorization.k8s.io/trainyard-webhooks",
		"clusterrole.rbac.authorization.k8s.io/trainyard-api-pod-logs",
		"validatingadmissionpolicy.admissionregistration.k8s.io/trainyard-api-secrets",
		"validatingadmissionpolicy.admissionregistration.k8s.io/trainyard-tenant-pod-security",
		"networkpolicy.networking.k8s.io/trainyard-default-deny-ingress",
		"networkpolicy.networking.k8s.io/trainyard-api", "networkpolicy.networking.k8s.io/trainyard-worker-metrics",
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "ServiceMonitor", "the base must not need the Prometheus Operator's CRDs")

	// Pod Security "restricted" is checked on pods, not on their templates:
	// dry-run a pod from each template into the namespace.
	admin := c.Client()
	templates := 0
	for _, o := range deploytest.Build(t, c, "") {
		if o.GetKind() != "Deployment" && o.GetKind() != "Job" {
			continue
		}
		tmpl, found, err := unstructured.NestedMap(o.Object, "spec", "template")
		require.NoError(t, err)
		require.True(t, found)
		var pod corev1.Pod
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pod))
		pod.Name = "dry-run-" + strings.ToLower(o.GetKind()) + "-" + o.GetName()
		pod.Namespace = deploytest.Namespace
		_, err = admin.CoreV1().Pods(deploytest.Namespace).Create(context.Background(), &pod,
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err, "pod of %s %s", o.GetKind(), o.GetName())
		templates++
	}
	require.Equal(t, 4, templates, "api, worker and webhooks Deployments and the migration Job")
}

// The API server's rights in deploy/, exactly: write-only on Secrets, and
// pod logs only through the ClusterRole the worker binds in tenant
// namespaces (no ClusterRoleBinding names it). Trainyard's namespace
// admits connections to the API ports from anywhere and to the workers'
// metrics from the monitoring namespace only.
func TestDeployAPIRoleAndNetworkPolicies(t *testing.T) {
	c := harness.Cluster(t)
	objs := deploytest.Build(t, c, "")
	find := func(kind, name string) *unstructured.Unstructured {
		t.Helper()
		for _, o := range objs {
			if o.GetKind() == kind && o.GetName() == name {
				return o
			}
		}
		t.Fatalf("deploy/ has no %s %s", kind, name)
		return nil
	}
	rules := func(name string) []rbacv1.PolicyRule {
		var role rbacv1.ClusterRole
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(find("ClusterRole", name).Object, &role))
		return role.Rules
	}
	require.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "update", "delete"}},
	}, rules("trainyard-api"), "the API server must hold nothing but writes on secrets cluster-wide")
	require.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	}, rules("trainyard-api-pod-logs"))
	for _, o := range objs {
		if o.GetKind() == "ClusterRoleBinding" || o.GetKind() == "RoleBinding" {
			ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			require.NotEqual(t, "trainyard-api-pod-logs", ref, "%s %s binds the API server's log role outside tenant namespaces", o.GetKind(), o.GetName())
		}
	}

	policy := func(name string) networkingv1.NetworkPolicySpec {
		var np networkingv1.NetworkPolicy
		o := find("NetworkPolicy", name)
		require.Equal(t, deploytest.Namespace, o.GetNamespace())
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &np))
		return np.Spec
	}
	deny := policy("trainyard-default-deny-ingress")
	require.Empty(t, deny.PodSelector.MatchLabels, "every pod of the namespace")
	require.Empty(t, deny.Ingress)
	require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, deny.PolicyTypes)

	tcp := corev1.ProtocolTCP
	port := func(name string) networkingv1.NetworkPolicyPort {
		p := intstr.FromString(name)
		return networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &p}
	}
	api := policy("trainyard-api")
	require.Equal(t, map[string]string{"app.kubernetes.io/name": "trainyard", "app.kubernetes.io/component": "api"}, api.PodSelector.MatchLabels)
	require.Equal(t, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port("http"), port("grpc")}}}, api.Ingress,
		"the API ports, from anywhere")
	worker := policy("trainyard-worker-metrics")
	require.Equal(t, map[string]string{"app.kubernetes.io/name": "trainyard", "app.kubernetes.io/component": "worker"}, worker.PodSelector.MatchLabels)
	require.Equal(t, []networkingv1.NetworkPolicyIngressRule{{
		From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}},
		Ports: []networkingv1.NetworkPolicyPort{port("metrics")},
	}}, worker.Ingress, "the workers' metrics, from the monitoring namespace only")

	// The named ports are the containers' ports.
	for _, d := range []struct{ deployment, container string }{{"trainyard-api", "api"}, {"trainyard-worker", "worker"}} {
		var dep appsv1.Deployment
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(find("Deployment", d.deployment).Object, &dep))
		var names []string
		for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
			names = append(names, p.Name)
		}
		if d.container == "api" {
			require.ElementsMatch(t, []string{"http", "grpc"}, names)
		} else {
			require.ElementsMatch(t, []string{"metrics"}, names)
		}
	}
}

// The monitoring overlay adds the ServiceMonitors and the dashboard to the
// base; its panels query the metrics the processes export.
func TestDeployMonitoringOverlay(t *testing.T) {
	c := harness.Cluster(t)
	base := deploytest.Build(t, c, "")
	objs := deploytest.Build(t, c, "monitoring")
	require.Len(t, objs, len(base)+3, "the base plus two ServiceMonitors and the dashboard")

	monitors := map[string]bool{}
	var dashboard string
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceMonitor":
			require.Equal(t, "monitoring.coreos.com/v1", o.GetAPIVersion())
			monitors[o.GetName()] = true
		case "ConfigMap":
			if o.GetLabels()["grafana_dashboard"] == "1" {
				data, _, _ := unstructured.NestedStringMap(o.Object, "data")
				dashboard = data["trainyard.json"]
			}
		}
	}
	require.Equal(t, map[string]bool{"trainyard-api": true, "trainyard-worker": true}, monitors)
	require.NotEmpty(t, dashboard, "the dashboard ConfigMap")

	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal([]byte(dashboard), &d))
	exprs := map[string]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs[p.Title] += tg.Expr + "\n"
		}
	}
	require.Contains(t, exprs["GPUs by tenant vs capacity"], "trainyard_scheduler_gpu_capacity")
	for title, metric := range map[string]string{
		"Jobs by phase":                          "trainyard_jobs)",
		"Queue depth":                            "trainyard_jobs_waiting_for_quota",
		"Dispatch latency":                       "trainyard_worker_dispatch_latency_seconds_bucket",
		"API requests by code":                   "grpc_server_handled_total",
		"API errors by code":                     "grpc_server_handled_total",
		"Reconcile errors":                       "trainyard_worker_reconcile_errors_total",
		"Tenant reconcile errors":                "trainyard_tenant_reconcile_errors_total",
		"Tenants by state":                       "trainyard_tenants",
		"Waiting jobs by reason":                 "trainyard_scheduler_pending_jobs",
		"Waiting GPUs by tenant":                 "trainyard_scheduler_pending_demand",
		"Admission latency":                      "trainyard_scheduler_admission_latency_seconds_bucket",
		"Scheduler: cycles and preemptions":      "trainyard_scheduler_preemptions_total",
		"GPUs by tenant vs capacity":             "trainyard_tenant_gpus_allocated",
		"GPUs allocated vs used by tenant":       "trainyard_tenant_gpus_used",
		"Usage vs quota":                         "trainyard_tenant_gpu_quota",
		"GPU-hours vs budget":                    "trainyard_tenant_gpu_hours_total",
		"Queue length by tenant":                 "trainyard_tenant_queue_length",
		"Oldest wait by tenant":                  "trainyard_tenant_oldest_wait_seconds",
		"GPU utilisation per job replica (DCGM)": "DCGM_FI_DEV_GPU_UTIL",
		"GPU memory per job replica (DCGM)":      "DCGM_FI_DEV_FB_USED",
	} {
		require.Contains(t, exprs[title], metric, "panel %q", title)
	}
}

// The CloudNativePG overlay is the base plus a Cluster of three instances
// with synchronous replication, Trainyard's three workloads reading their
// database URL from the Cluster's -rw connection (its app Secret) with the
// server verified and target_session_attrs=read-write, and ingress to the
// instances from Trainyard, each other and the operator only. Its pods
// still meet Pod Security "restricted" (server dry run: the Cluster's CRD
// is not on the test cluster, so it is checked as rendered).
func TestDeployCloudNativePGOverlay(t *testing.T) {
	c := harness.Cluster(t)
	deploytest.EnsureNamespace(t, c)
	base := deploytest.Build(t, c, "")
	objs := deploytest.Build(t, c, "cloudnativepg")
	require.Len(t, objs, len(base)+3, "the base plus the Cluster and two NetworkPolicies")

	var clusters []*unstructured.Unstructured
	workloads := 0
	policies := map[string]networkingv1.NetworkPolicySpec{}
	for _, o := range objs {
		switch o.GetKind() {
		case "Cluster":
			clusters = append(clusters, o)
		case "NetworkPolicy":
			var np networkingv1.NetworkPolicy
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &np))
			policies[np.Name] = np.Spec
		case "Deployment", "Job":
			tmpl, _, err := unstructured.NestedMap(o.Object, "spec", "template")
			require.NoError(t, err)
			var pod corev1.Pod
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pod))
			env := pod.Spec.Containers[0].Env
			require.Len(t, env, 2, "%s %s", o.GetKind(), o.GetName())
			require.Equal(t, "CNPG_APP_URI", env[0].Name, "defined before DATABASE_URL, which expands it")
			require.Equal(t, &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "trainyard-db-app"}, Key: "uri"},
				env[0].ValueFrom.SecretKeyRef)
			require.Equal(t, "DATABASE_URL", env[1].Name)
			require.Equal(t, "$(CNPG_APP_URI)?sslmode=verify-full&sslrootcert=/etc/trainyard/db-ca/ca.crt&target_session_attrs=read-write", env[1].Value)
			require.Equal(t, "/etc/trainyard/db-ca", pod.Spec.Containers[0].VolumeMounts[0].MountPath)
			require.Equal(t, "trainyard-db-ca", pod.Spec.Volumes[0].Secret.SecretName)
			require.Equal(t, []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}, pod.Spec.Volumes[0].Secret.Items, "the CA's certificate, not its key")
			pod.Name = "dry-run-cnpg-" + strings.ToLower(o.GetKind()) + "-" + o.GetName()
			pod.Namespace = deploytest.Namespace
			_, err = c.Client().CoreV1().Pods(deploytest.Namespace).Create(context.Background(), &pod,
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			require.NoError(t, err, "pod of %s %s", o.GetKind(), o.GetName())
			workloads++
		}
	}
	require.Equal(t, 4, workloads, "api, worker and webhooks Deployments and the migration Job")

	require.Len(t, clusters, 1)
	cl := clusters[0]
	require.Equal(t, "postgresql.cnpg.io/v1", cl.GetAPIVersion())
	require.Equal(t, "trainyard-db", cl.GetName(), "the Secrets trainyard-db-app and trainyard-db-ca are named after it")
	require.Equal(t, deploytest.Namespace, cl.GetNamespace())
	// Numbers decode as float64.
	instances, _, _ := unstructured.NestedFieldNoCopy(cl.Object, "spec", "instances")
	require.EqualValues(t, 3, instances)
	sync, _, _ := unstructured.NestedMap(cl.Object, "spec", "postgresql", "synchronous")
	require.Equal(t, map[string]any{"method": "any", "number": float64(1), "dataDurability": "required"}, sync)

	trainyard := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "trainyard"}}}
	instancesPeer := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"cnpg.io/cluster": "trainyard-db"}}}
	db := policies["trainyard-db"]
	require.Equal(t, map[string]string{"cnpg.io/cluster": "trainyard-db"}, db.PodSelector.MatchLabels)
	require.Len(t, db.Ingress, 1)
	require.ElementsMatch(t, []networkingv1.NetworkPolicyPeer{trainyard, instancesPeer}, db.Ingress[0].From)
	require.Equal(t, intstr.FromInt32(5432), *db.Ingress[0].Ports[0].Port)
	op := policies["trainyard-db-operator"]
	require.Len(t, op.Ingress, 1)
	require.Equal(t, map[string]string{"kubernetes.io/metadata.name": "cnpg-system"}, op.Ingress[0].From[0].NamespaceSelector.MatchLabels)
}

// The worker's ClusterRole in deploy/ is enough for the tenant reconciler:
// run it with a token of the deploy/ worker ServiceAccount and let it
// create a tenant's namespace and objects (the pod-reader Role and its
// RoleBinding included, which RBAC only allows to an identity holding
// those rights), repair them and offboard the tenant. The same identity
// holds every right the job worker uses, and nothing of the kind it must
// not have.
func TestDeployWorkerRoleRunsTheTenantReconciler(t *testing.T) {
	c := harness.Cluster(t)
	kubeconfig := deploytest.WorkerKubeconfig(t, c)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	worker, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Not an admin: no secrets, no RBAC outside what it creates.
	_, err = worker.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing secrets must be forbidden, got %v", err)

	dbURL := pgtest.NewDatabase(t)
	require.NoError(t, store.Migrate(ctx, dbURL, "up"))
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	defer st.Close()
	prefix := "tyrbac" + fmt.Sprint(time.Now().UnixNano()%100000) + "-"
	t.Cleanup(func() { deleteNamespacesWithPrefix(t, c.Client(), prefix) })

	listener, err := store.NewListener(dbURL, store.ListenerConfig{})
	require.NoError(t, err)
	ctl, err := tenantctl.New(tenantctl.Config{
		Store: st, Client: worker, Listener: listener, NamespacePrefix: prefix,
		OffboardPoll: 500 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(testLog{t}, nil)),
	})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- listener.Run(runCtx) }()
	go func() { done <- ctl.Run(runCtx) }()
	defer func() { stop(); require.NoError(t, <-done); require.NoError(t, <-done) }()

	tn, err := st.TenantCreate(ctx, tenant.Tenant{ID: "rbac", Namespace: prefix + "rbac",
		Quota: tenant.Quota{GPU: 2, CPU: "8", Memory: "32Gi", Pods: 10}, PodReaderGroups: []string{"oidc:rbac-readers"}})
	require.NoError(t, err)
	ns := prefix + tn.ID
	admin := c.Client()
	waitFor(t, 60*time.Second, func() error {
		if _, err := admin.RbacV1().RoleBindings(ns).Get(ctx, "trainyard-pod-readers", metav1.GetOptions{}); err != nil {
			return err
		}
		if _, err := admin.CoreV1().ResourceQuotas(ns).Get(ctx, "trainyard-quota", metav1.GetOptions{}); err != nil {
			return err
		}
		if _, err := admin.CoreV1().LimitRanges(ns).Get(ctx, "trainyard-defaults", metav1.GetOptions{}); err != nil {
			return err
		}
		if _, err := admin.CoreV1().ServiceAccounts(ns).Get(ctx, "trainyard-job", metav1.GetOptions{}); err != nil {
			return err
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Get(ctx, "trainyard-api-pod-logs", metav1.GetOptions{}); err != nil {
			return err
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Get(ctx, "trainyard-api-tensorboard", metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := admin.NetworkingV1().NetworkPolicies(ns).Get(ctx, "trainyard-same-namespace", metav1.GetOptions{})
		return err
	})
	// The worker bound the API server to pod logs in the tenant namespace
	// (without "bind": it holds pods/log itself); the API server reads
	// logs there and nowhere else.
	apiUser := authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:trainyard:trainyard-api",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:trainyard", "system:authenticated"},
	}
	require.True(t, allowedFor(t, admin, apiUser, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods", Subresource: "log"}))
	for _, other := range []string{"kube-system", deploytest.Namespace, ""} {
		require.False(t, allowedFor(t, admin, apiUser, authorizationv1.ResourceAttributes{Namespace: other, Verb: "get", Resource: "pods", Subresource: "log"}),
			"the API server must not read pod logs in %q", other)
	}
	// The TensorBoard proxy: the API server port-forwards to pods in tenant
	// namespaces only, and does nothing else with them; the worker, which
	// wrote that binding, cannot port-forward anywhere ("bind" on the one
	// ClusterRole is all it holds for it).
	portForward := authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "portforward"}
	require.True(t, allowedFor(t, admin, apiUser, portForward))
	for _, other := range []string{"kube-system", deploytest.Namespace, ""} {
		pf := portForward
		pf.Namespace = other
		require.False(t, allowedFor(t, admin, apiUser, pf), "the API server must not port-forward in %q", other)
	}
	for _, verb := range []string{"get", "list"} {
		require.False(t, allowedFor(t, admin, apiUser, authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "pods"}), "API server %s pods", verb)
	}
	require.False(t, allowedFor(t, admin, apiUser, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"}))

	// Tenant Secrets: the worker reads and writes them in the tenant
	// namespace, through the binding it made there (it keeps copies in
	// other clusters); the API server gets exactly the tenant's secrets,
	// by name, once one is put (to hand them to remote agents), and no
	// other Secret: not a webhook's signing secret beside them.
	workerUser := authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + deploytest.Namespace + ":" + deploytest.WorkerAccount,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + deploytest.Namespace, "system:authenticated"},
	}
	waitFor(t, 30*time.Second, func() error {
		if !allowedFor(t, admin, workerUser, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "secrets"}) {
			return fmt.Errorf("the worker cannot list secrets in %s yet", ns)
		}
		return nil
	})
	for _, verb := range []string{"get", "create", "update", "delete"} {
		require.True(t, allowedFor(t, admin, workerUser, authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "secrets"}), "worker %s secrets", verb)
	}
	_, err = st.SecretPut(ctx, tenant.Secret{Tenant: tn.ID, Name: "wandb", Keys: []string{"api-key"}})
	require.NoError(t, err)
	getSecret := func(name string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: name}
	}
	waitFor(t, 30*time.Second, func() error {
		if !allowedFor(t, admin, apiUser, getSecret("wandb")) {
			return fmt.Errorf("the API server cannot read the tenant's secret in %s yet", ns)
		}
		return nil
	})
	for _, a := range []authorizationv1.ResourceAttributes{
		getSecret("trainyard-webhook-w1"), getSecret(""), {Namespace: ns, Verb: "list", Resource: "secrets"},
		{Namespace: ns, Verb: "watch", Resource: "secrets"}, {Namespace: "kube-system", Verb: "get", Resource: "secrets", Name: "wandb"},
	} {
		require.False(t, allowedFor(t, admin, apiUser, a), "the API server must not %s secret %q in %q", a.Verb, a.Name, a.Namespace)
	}
	require.NoError(t, st.SecretDelete(ctx, tn.ID, "wandb"))
	waitFor(t, 30*time.Second, func() error {
		if allowedFor(t, admin, apiUser, getSecret("wandb")) {
			return fmt.Errorf("the API server still reads a deleted secret in %s", ns)
		}
		return nil
	})

	// The worker deletes only what a tenant can stop having (its quota, its
	// pod readers); the ServiceAccount, LimitRange and NetworkPolicy every
	// tenant has are never deleted, so the role does not allow it.
	for _, r := range []authorizationv1.ResourceAttributes{
		{Resource: "resourcequotas"}, {Group: "rbac.authorization.k8s.io", Resource: "roles"}, {Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
	} {
		r.Namespace, r.Verb = ns, "delete"
		require.True(t, allowedFor(t, admin, workerUser, r), "the worker must be able to delete %s", r.Resource)
	}
	for _, r := range []authorizationv1.ResourceAttributes{
		{Resource: "serviceaccounts"}, {Resource: "limitranges"}, {Group: "networking.k8s.io", Resource: "networkpolicies"},
	} {
		r.Namespace, r.Verb = ns, "delete"
		require.False(t, allowedFor(t, admin, workerUser, r), "the worker must not delete %s", r.Resource)
	}
	require.False(t, allowedFor(t, admin, workerUser, portForward), "the worker must not port-forward")
	bind := authorizationv1.ResourceAttributes{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}
	for role, want := range map[string]bool{"trainyard-api-tensorboard": true, "trainyard-tenant-secrets": true, "trainyard-api-pod-logs": false, "cluster-admin": false, "admin": false} {
		b := bind
		b.Name = role
		require.Equal(t, want, allowedFor(t, admin, workerUser, b), "worker bind %s", role)
	}

	// Repairs (update, delete + create) under the same identity.
	require.NoError(t, admin.NetworkingV1().NetworkPolicies(ns).Delete(ctx, "trainyard-same-namespace", metav1.DeleteOptions{}))
	n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	n.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
	_, err = admin.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	// A Role widened to secrets is put back by an identity that holds no
	// right on secrets: RBAC checks the rules being written, not the old ones.
	role, err := admin.RbacV1().Roles(ns).Get(ctx, "trainyard-pod-readers", metav1.GetOptions{})
	require.NoError(t, err)
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
	_, err = admin.RbacV1().Roles(ns).Update(ctx, role, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitFor(t, 30*time.Second, func() error {
		if _, err := admin.NetworkingV1().NetworkPolicies(ns).Get(ctx, "trainyard-same-namespace", metav1.GetOptions{}); err != nil {
			return err
		}
		n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l := n.Labels["pod-security.kubernetes.io/enforce"]; l != "baseline" {
			return fmt.Errorf("enforce label %q", l)
		}
		role, err := admin.RbacV1().Roles(ns).Get(ctx, "trainyard-pod-readers", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(role.Rules) != 2 {
			return fmt.Errorf("pod-reader role rules %v", role.Rules)
		}
		return nil
	})

	// Everything the job worker calls, asked of the API server as the
	// worker itself (SelfSubjectAccessReview).
	for _, a := range []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "create", Resource: "pods"}, {Namespace: ns, Verb: "delete", Resource: "pods"},
		{Verb: "list", Resource: "pods"}, {Verb: "watch", Resource: "pods"},
		{Namespace: ns, Verb: "get", Resource: "pods", Subresource: "log"},
		{Namespace: ns, Verb: "create", Resource: "services"}, {Namespace: ns, Verb: "delete", Resource: "services"},
		{Namespace: ns, Verb: "get", Resource: "services"}, {Namespace: ns, Verb: "get", Resource: "pods"},
		{Namespace: ns, Verb: "list", Resource: "pods"}, {Namespace: ns, Verb: "list", Resource: "services"},
		{Verb: "list", Resource: "services"}, {Verb: "watch", Resource: "services"},
		{Namespace: ns, Verb: "create", Resource: "endpointslices", Group: "discovery.k8s.io"},
		{Namespace: ns, Verb: "update", Resource: "endpointslices", Group: "discovery.k8s.io"},
		{Namespace: ns, Verb: "delete", Resource: "endpointslices", Group: "discovery.k8s.io"},
		{Verb: "list", Resource: "endpointslices", Group: "discovery.k8s.io"}, {Verb: "watch", Resource: "endpointslices", Group: "discovery.k8s.io"},
		// The scheduler's view of the cluster.
		{Verb: "list", Resource: "nodes"}, {Verb: "watch", Resource: "nodes"},
	} {
		require.True(t, selfAllowed(t, worker, a), "the worker must be allowed to %s %s/%s in %q", a.Verb, a.Resource, a.Subresource, a.Namespace)
	}
	for _, a := range []authorizationv1.ResourceAttributes{
		{Namespace: "kube-system", Verb: "get", Resource: "secrets"}, {Namespace: deploytest.Namespace, Verb: "get", Resource: "secrets"},
		{Verb: "list", Resource: "secrets"}, {Namespace: "kube-system", Verb: "create", Resource: "secrets"},
		{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"},
		{Namespace: ns, Verb: "bind", Resource: "clusterroles", Group: "rbac.authorization.k8s.io"},
		{Namespace: ns, Verb: "escalate", Resource: "roles", Group: "rbac.authorization.k8s.io"},
		{Verb: "create", Resource: "clusterrolebindings", Group: "rbac.authorization.k8s.io"},
		{Namespace: ns, Verb: "patch", Resource: "pods"},
		// Endpoints of the old API are not written, nor Services updated
		// (the Service of replicas is deleted and created again).
		{Namespace: ns, Verb: "create", Resource: "endpoints"},
		{Namespace: ns, Verb: "update", Resource: "services"},
		{Verb: "create", Resource: "events"}, {Namespace: ns, Verb: "create", Resource: "leases", Group: "coordination.k8s.io"},
		// The scheduler reads nodes; it never writes them (nor binds pods).
		{Verb: "get", Resource: "nodes"}, {Verb: "update", Resource: "nodes"}, {Verb: "patch", Resource: "nodes"},
		{Verb: "update", Resource: "nodes", Subresource: "status"}, {Namespace: ns, Verb: "create", Resource: "pods", Subresource: "binding"},
	} {
		require.False(t, selfAllowed(t, worker, a), "the worker must not be allowed to %s %s/%s in %q", a.Verb, a.Resource, a.Subresource, a.Namespace)
	}

	// deploy/'s admission policies confine what RBAC grants cluster-wide:
	// no write outside tenant namespaces, no namespace that is not a
	// tenant's adopted or deleted.
	requireConfined(t, admin, worker, prefix, ns)

	// Offboarding deletes the namespace under the same identity.
	_, err = st.TenantUpdate(ctx, tn.ID, func(t *tenant.Tenant) error { t.State = tenant.Offboarding; return nil })
	require.NoError(t, err)
	waitFor(t, 2*time.Minute, func() error {
		got, err := st.TenantGet(ctx, tn.ID)
		if err != nil {
			return err
		}
		if got.State != tenant.Deleted {
			return fmt.Errorf("tenant is %s", got.State)
		}
		return nil
	})
	_, err = admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "namespace must be gone, got %v", err)
}

// deployPolicies are deploy/'s ValidatingAdmissionPolicies.
var deployPolicies = []string{
	"trainyard-writes-in-tenant-namespaces", "trainyard-tenant-namespaces-only",
	"trainyard-tenant-pod-security", "trainyard-api-secrets",
}

// requirePoliciesChecked waits until the API server has type-checked
// deploy/'s admission policies, and fails on any warning (a misspelt field
// makes an expression fail at admission time, which Fail turns into a
// denial of everything it matches).
func requirePoliciesChecked(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	for _, name := range deployPolicies {
		waitFor(t, 30*time.Second, func() error {
			p, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.TypeChecking == nil {
				return fmt.Errorf("policy %s not type-checked yet", name)
			}
			if w := p.Status.TypeChecking.ExpressionWarnings; len(w) > 0 {
				t.Fatalf("policy %s: type-checking warnings %v", name, w)
			}
			return nil
		})
	}
}

// requireDenied calls call until deploy/'s admission policies refuse it
// (they take effect once the API server has loaded them), and fails if
// they never do.
func requireDenied(t *testing.T, what string, call func() error) {
	t.Helper()
	waitFor(t, 30*time.Second, func() error {
		err := call()
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return nil
		}
		return fmt.Errorf("%s: want a ValidatingAdmissionPolicy denial, got %v", what, err)
	})
}

// requireConfined checks that deploy/'s ValidatingAdmissionPolicies refuse
// the worker what RBAC alone would let it do. tenantNS is a tenant
// namespace the worker manages.
func requireConfined(t *testing.T, admin, worker kubernetes.Interface, prefix, tenantNS string) {
	t.Helper()
	ctx := context.Background()
	requirePoliciesChecked(t, admin)
	foreign := prefix + "foreign"
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: foreign}}, metav1.CreateOptions{})
	require.NoError(t, err)

	denied := func(what string, call func() error) {
		t.Helper()
		requireDenied(t, what, call)
	}
	// Pod Security is pinned: the worker can set a tenant namespace's
	// enforce level only to the configured one (baseline, from
	// trainyard-config), and only at the latest version.
	relabel := func(key, value string) func() error {
		return func() error {
			n, err := admin.CoreV1().Namespaces().Get(ctx, tenantNS, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Labels[key] = value
			_, err = worker.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{})
			return err
		}
	}
	denied("lower a tenant namespace to privileged", relabel("pod-security.kubernetes.io/enforce", "privileged"))
	denied("pin a tenant namespace to an old Pod Security version", relabel("pod-security.kubernetes.io/enforce-version", "v1.24"))
	denied("create a tenant namespace enforcing privileged", func() error {
		_, err := worker.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "priv", Labels: map[string]string{
			"app.kubernetes.io/managed-by": "trainyard", "trainyard.dev/tenant": "priv",
			"pod-security.kubernetes.io/enforce": "privileged",
		}}}, metav1.CreateOptions{})
		return err
	})
	n, err := admin.CoreV1().Namespaces().Get(ctx, tenantNS, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "baseline", n.Labels["pod-security.kubernetes.io/enforce"])
	require.Equal(t, "latest", n.Labels["pod-security.kubernetes.io/enforce-version"])
	require.NoError(t, relabel("pod-security.kubernetes.io/enforce", "baseline")(), "setting the configured level is allowed")

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "escape"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	denied("create a pod in default", func() error {
		_, err := worker.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	denied("create a pod in an unlabelled namespace", func() error {
		_, err := worker.CoreV1().Pods(foreign).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	// An EndpointSlice elsewhere could point another namespace's Service
	// (in kube-system, say) at any address.
	denied("create an EndpointSlice in default", func() error {
		_, err := worker.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "hijack", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}},
		}, metav1.CreateOptions{})
		return err
	})
	denied("create a namespace that is not a tenant's", func() error {
		_, err := worker.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "plain"}}, metav1.CreateOptions{})
		return err
	})
	denied("adopt a namespace by labelling it", func() error {
		n, err := admin.CoreV1().Namespaces().Get(ctx, foreign, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Labels = map[string]string{"app.kubernetes.io/managed-by": "trainyard", "trainyard.dev/tenant": "foreign"}
		_, err = worker.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	denied("delete a namespace that is not a tenant's", func() error {
		return worker.CoreV1().Namespaces().Delete(ctx, foreign, metav1.DeleteOptions{})
	})
}

// The API server as deploy/ runs it: it puts, replaces and deletes a
// tenant's Secrets, cannot read any Secret, and cannot replace, delete or
// create a Secret that is not Trainyard's for the namespace's tenant —
// in kube-system, in a namespace that is not a tenant's, or without
// Trainyard's labels inside a tenant namespace.
func TestDeployAPIRoleWritesOnlyTrainyardSecrets(t *testing.T) {
	c := harness.Cluster(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", deploytest.APIKubeconfig(t, c))
	require.NoError(t, err)
	apiClient, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	api := kube.APIClient{Client: apiClient}
	admin := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	requirePoliciesChecked(t, admin)

	prefix := "tysec" + fmt.Sprint(time.Now().UnixNano()%100000) + "-"
	t.Cleanup(func() { deleteNamespacesWithPrefix(t, admin, prefix) })
	mkns := func(name string, labels map[string]string) string {
		t.Helper()
		_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + name, Labels: labels}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return prefix + name
	}
	const tenantID = "sec"
	ours := map[string]string{"app.kubernetes.io/managed-by": "trainyard", "trainyard.dev/tenant": tenantID}
	ns := mkns(tenantID, ours)
	half := mkns("half", map[string]string{"app.kubernetes.io/managed-by": "trainyard"})
	mksecret := func(ns, name string, labels map[string]string) {
		t.Helper()
		_, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			StringData: map[string]string{"k": "theirs"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	requireUntouched := func(ns, name string) {
		t.Helper()
		s, err := admin.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "%s/%s must still exist", ns, name)
		require.Equal(t, "theirs", string(s.Data["k"]), "%s/%s was overwritten", ns, name)
	}

	create := func(ns string, sec *corev1.Secret) func() error {
		return func() error {
			_, err := apiClient.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{})
			return err
		}
	}
	// First, once the policies are in force (a refused create changes
	// nothing, so it can be retried until they are): no Secret without
	// Trainyard's labels.
	requireDenied(t, "create an unlabelled Secret", create(ns, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}))

	// Put, replace, delete a tenant secret.
	require.NoError(t, api.PutSecret(ctx, tenantID, ns, "wandb", map[string]string{"api-key": "one", "user": "u"}))
	require.NoError(t, api.PutSecret(ctx, tenantID, ns, "wandb", map[string]string{"api-key": "two"}))
	s, err := admin.CoreV1().Secrets(ns).Get(ctx, "wandb", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{"api-key": []byte("two")}, s.Data)
	require.Equal(t, ours, s.Labels)

	// No Secret can be read, anywhere.
	forbidden := func(what string, err error) {
		t.Helper()
		require.True(t, apierrors.IsForbidden(err), "%s: want Forbidden, got %v", what, err)
	}
	_, err = apiClient.CoreV1().Secrets(ns).Get(ctx, "wandb", metav1.GetOptions{})
	forbidden("get its own tenant secret", err)
	_, err = apiClient.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	forbidden("list kube-system secrets", err)
	_, err = apiClient.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	forbidden("list every secret", err)
	_, err = apiClient.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{})
	forbidden("watch secrets", err)
	for _, a := range []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "get", Resource: "secrets"}, {Namespace: "kube-system", Verb: "get", Resource: "secrets"},
		{Verb: "list", Resource: "secrets"}, {Verb: "watch", Resource: "secrets"}, {Namespace: ns, Verb: "patch", Resource: "secrets"},
		{Namespace: ns, Verb: "get", Resource: "pods"}, {Verb: "list", Resource: "pods"},
		{Namespace: "kube-system", Verb: "get", Resource: "pods", Subresource: "log"}, {Verb: "get", Resource: "pods", Subresource: "log"},
		{Namespace: ns, Verb: "create", Resource: "pods"}, {Verb: "list", Resource: "namespaces"},
		{Namespace: ns, Verb: "create", Resource: "serviceaccounts", Subresource: "token"},
	} {
		require.False(t, selfAllowed(t, apiClient, a), "the API server must not be allowed to %s %s/%s in %q", a.Verb, a.Resource, a.Subresource, a.Namespace)
	}

	// Secrets that are not Trainyard's for this tenant are neither replaced
	// nor deleted: one without labels in the tenant namespace, one
	// labelled for another tenant, one in kube-system even with our labels.
	mksecret(ns, "unlabelled", nil)
	mksecret(ns, "other-tenant", map[string]string{"app.kubernetes.io/managed-by": "trainyard", "trainyard.dev/tenant": "other"})
	system := prefix + "in-kube-system"
	mksecret("kube-system", system, ours)
	t.Cleanup(func() {
		_ = admin.CoreV1().Secrets("kube-system").Delete(context.Background(), system, metav1.DeleteOptions{})
	})
	for _, target := range [][2]string{{ns, "unlabelled"}, {ns, "other-tenant"}, {"kube-system", system}} {
		requireDenied(t, "replace "+target[0]+"/"+target[1], func() error {
			err := api.PutSecret(ctx, tenantID, target[0], target[1], map[string]string{"k": "mine"})
			if err != nil && target[0] == ns {
				// In the tenant namespace the create passes and finds the
				// Secret; the update is what is refused. Elsewhere the
				// create already is.
				require.ErrorIs(t, err, kubeerr.ErrSecretNotOurs)
			}
			return err
		})
		requireDenied(t, "delete "+target[0]+"/"+target[1], func() error {
			_, err := api.DeleteSecret(ctx, target[0], target[1])
			return err
		})
		requireUntouched(target[0], target[1])
	}

	// Nor created for another tenant, of another type, or outside a
	// tenant namespace.
	requireDenied(t, "create a Secret for another tenant", create(ns, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "theirs",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "trainyard", "trainyard.dev/tenant": "other"}}}))
	requireDenied(t, "create a service-account token Secret", create(ns, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "token", Labels: ours, Annotations: map[string]string{"kubernetes.io/service-account.name": "default"}},
		Type:       corev1.SecretTypeServiceAccountToken}))
	requireDenied(t, "create a Secret in a namespace that is not a tenant's", create(half, kube.RenderSecret(tenantID, half, "s", map[string]string{"k": "v"})))
	requireDenied(t, "create a Secret in kube-system", create("kube-system", kube.RenderSecret(tenantID, "kube-system", prefix+"new", map[string]string{"k": "v"})))

	// Its own Secret it deletes; a second delete finds nothing, which is fine.
	found, err := api.DeleteSecret(ctx, ns, "wandb")
	require.NoError(t, err)
	require.True(t, found)
	_, err = admin.CoreV1().Secrets(ns).Get(ctx, "wandb", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "deleted, got %v", err)
	found, err = api.DeleteSecret(ctx, ns, "wandb")
	require.NoError(t, err)
	require.False(t, found)
}

func selfAllowed(t *testing.T, c kubernetes.Interface, a authorizationv1.ResourceAttributes) bool {
	t.Helper()
	r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	return r.Status.Allowed
}

// waitFor polls check until it returns nil; it fails with the last error.
func waitFor(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func deleteNamespacesWithPrefix(t *testing.T, c kubernetes.Interface, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	for _, n := range list.Items {
		if strings.HasPrefix(n.Name, prefix) {
			_ = c.CoreV1().Namespaces().Delete(ctx, n.Name, metav1.DeleteOptions{})
		}
	}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// allowedFor asks the API server (as admin) whether the subject of spec may
// do a (SubjectAccessReview).
func allowedFor(t *testing.T, admin kubernetes.Interface, spec authorizationv1.SubjectAccessReviewSpec, a authorizationv1.ResourceAttributes) bool {
	t.Helper()
	spec.ResourceAttributes = &a
	r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
		&authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)
	return r.Status.Allowed
}

// The TLS overlay adds cert-manager's Certificate and serves TLS from the
// API server with the Secret's files; the base says plaintext explicitly.
func TestDeployTLSOverlay(t *testing.T) {
	c := harness.Cluster(t)
	base := deploytest.Build(t, c, "")
	objs := deploytest.Build(t, c, "tls")
	require.Len(t, objs, len(base)+1, "the base plus the Certificate")
	plaintext := func(objs []*unstructured.Unstructured) string {
		for _, o := range objs {
			if o.GetKind() == "ConfigMap" && o.GetName() == "trainyard-config" {
				data, _, _ := unstructured.NestedStringMap(o.Object, "data")
				return data["TRAINYARD_PLAINTEXT"]
			}
		}
		return ""
	}
	require.Equal(t, "true", plaintext(base))
	require.Equal(t, "false", plaintext(objs))
	var secretName string
	env := map[string]string{}
	for _, o := range objs {
		switch {
		case o.GetKind() == "Certificate":
			require.Equal(t, "cert-manager.io/v1", o.GetAPIVersion())
			secretName, _, _ = unstructured.NestedString(o.Object, "spec", "secretName")
		case o.GetKind() == "Deployment" && o.GetName() == "trainyard-api":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			api := containers[0].(map[string]any)
			for _, e := range api["env"].([]any) {
				m := e.(map[string]any)
				if v, ok := m["value"].(string); ok {
					env[m["name"].(string)] = v
				}
			}
			probe, _, _ := unstructured.NestedString(api, "readinessProbe", "httpGet", "scheme")
			require.Equal(t, "HTTPS", probe)
			path, _, _ := unstructured.NestedString(api, "readinessProbe", "httpGet", "path")
			require.Equal(t, "/readyz", path, "the patch keeps the probe's path")
			volumes, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			require.Contains(t, volumes, map[string]any{"name": "tls", "secret": map[string]any{"secretName": "trainyard-api-tls"}})
		}
	}
	require.Equal(t, "trainyard-api-tls", secretName)
	require.Equal(t, "/etc/trainyard/tls/tls.crt", env["TRAINYARD_TLS_CERT_FILE"])
	require.Equal(t, "/etc/trainyard/tls/tls.key", env["TRAINYARD_TLS_KEY_FILE"])
}
