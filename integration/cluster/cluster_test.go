//go:build integration

package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trainyard/trainyard/integration/cluster"
)

func TestDefaultNodes(t *testing.T) {
	ctx := context.Background()
	for _, want := range cluster.DefaultNodes() {
		n, err := tc.Client().CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
		require.NoError(t, err)
		for k, v := range want.Labels {
			require.Equal(t, v, n.Labels[k], "%s label %s", n.Name, k)
		}
		require.Equal(t, "fake", n.Annotations[cluster.KwokNodeAnnotation])
		for res, q := range want.Capacity {
			got := n.Status.Allocatable[res]
			require.Zero(t, q.Cmp(got), "%s allocatable %s: %s", n.Name, res, got.String())
		}
		require.ElementsMatch(t, want.Taints, n.Spec.Taints, n.Name)
		// kwok renews each node's Lease, which the node lifecycle controller reads.
		_, err = tc.Client().CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
		require.NoError(t, err, "lease of %s", n.Name)
	}
	out, err := tc.Kubectl("get", "nodes", "--no-headers")
	require.NoError(t, err)
	require.Equal(t, len(cluster.DefaultNodes()), strings.Count(out, " Ready "), out)
}

func TestGPUPodLandsOnGPUNode(t *testing.T) {
	ns := newNamespace(t)
	pods := watchPods(t, ns)
	gpu := func(p *corev1.Pod) {
		one := resource.MustParse("1")
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{cluster.GPUResource: one}
		p.Spec.Containers[0].Resources.Requests[cluster.GPUResource] = one
	}
	for i := range 3 {
		createPod(t, ns, replicaPod(fmt.Sprintf("gpu-%d", i), gpu, annotate(cluster.AnnotationRunForever, "true")))
	}
	for i := range 3 {
		p := pods.await(t, fmt.Sprintf("gpu-%d", i), "scheduled", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
		require.True(t, strings.HasPrefix(p.Spec.NodeName, "kwok-gpu-"), "gpu pod on %s", p.Spec.NodeName)
	}
}

func TestSpotTaint(t *testing.T) {
	ns := newNamespace(t)
	pods := watchPods(t, ns)
	tolerate := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: cluster.SpotLabel, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	onSpot := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{cluster.SpotLabel: "true"} }
	const plain, spot = 16, 4
	for i := range plain {
		createPod(t, ns, replicaPod(fmt.Sprintf("plain-%d", i)))
	}
	for i := range spot {
		createPod(t, ns, replicaPod(fmt.Sprintf("spot-%d", i), tolerate, onSpot))
	}
	scheduled := func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }
	for i := range plain {
		p := pods.await(t, fmt.Sprintf("plain-%d", i), "scheduled", scheduled)
		require.False(t, strings.HasPrefix(p.Spec.NodeName, "kwok-spot-"), "%s without toleration on %s", p.Name, p.Spec.NodeName)
	}
	for i := range spot {
		p := pods.await(t, fmt.Sprintf("spot-%d", i), "scheduled", scheduled)
		require.True(t, strings.HasPrefix(p.Spec.NodeName, "kwok-spot-"), "%s on %s", p.Name, p.Spec.NodeName)
	}
}

// The real API server enforces RBAC: a ServiceAccount without a binding is
// refused, and the same account is allowed once a RoleBinding grants it.
func TestRBACServiceAccount(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	_, err := tc.Client().CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	path, err := tc.ServiceAccountKubeconfig(ctx, ns, "worker")
	require.NoError(t, err)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	sa, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	_, err = sa.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
	require.Contains(t, err.Error(), "system:serviceaccount:"+ns+":worker")

	_, err = tc.Client().RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = tc.Client().RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-reads-pods"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "worker", Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := sa.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil
	}, waitTimeout, 100*time.Millisecond)
	// Still nothing beyond the grant.
	_, err = sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
}

// What "resolvable by name" means without DNS: the headless Service selects
// the pod and the EndpointSlice the controller manager writes lists it with
// its hostname, its IP and the port.
func TestHeadlessServiceEndpointSlice(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	pods := watchPods(t, ns)
	_, err := tc.Client().CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "mnist"},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 map[string]string{"trainyard.dev/job": "mnist"},
			Ports:                    []corev1.ServicePort{{Name: "tf", Port: 2222}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	createPod(t, ns, replicaPod("mnist-worker-0",
		label("trainyard.dev/job", "mnist"),
		annotate(cluster.AnnotationRunForever, "true"),
		func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "mnist-worker-0", "mnist" }))
	pod := pods.await(t, "mnist-worker-0", "Running with an IP", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""
	})

	var found *discoveryv1.Endpoint
	var port int32
	require.Eventually(t, func() bool {
		slices, err := tc.Client().DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=mnist"})
		if err != nil {
			return false
		}
		for _, s := range slices.Items {
			for i, e := range s.Endpoints {
				if e.Hostname != nil && *e.Hostname == "mnist-worker-0" && len(s.Ports) == 1 && s.Ports[0].Port != nil {
					found, port = &s.Endpoints[i], *s.Ports[0].Port
					return true
				}
			}
		}
		return false
	}, waitTimeout, 100*time.Millisecond, "no EndpointSlice lists mnist-worker-0")
	require.Equal(t, []string{pod.Status.PodIP}, found.Addresses)
	require.Equal(t, int32(2222), port)
	require.NotNil(t, found.TargetRef)
	require.Equal(t, "mnist-worker-0", found.TargetRef.Name)
	require.Equal(t, pod.Spec.NodeName, *found.NodeName)
	require.True(t, *found.Conditions.Ready)
}

// Admission is the real API server's: Pod Security and ResourceQuota.
func TestAdmission(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)

	nsObj, err := tc.Client().CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	_, err = tc.Client().CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{})
	require.NoError(t, err)
	privileged := true
	_, err = tc.Client().CoreV1().Pods(ns).Create(ctx, replicaPod("privileged", func(p *corev1.Pod) {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
	}), metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
	require.Contains(t, err.Error(), "PodSecurity")

	_, err = tc.Client().CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// Admission refuses every pod until the quota controller has computed usage.
	require.Eventually(t, func() bool {
		q, err := tc.Client().CoreV1().ResourceQuotas(ns).Get(ctx, "tenant", metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil
	}, waitTimeout, 100*time.Millisecond)
	createPod(t, ns, replicaPod("first", annotate(cluster.AnnotationRunForever, "true")))
	// Admission charges the quota as it admits, but the quota controller's
	// recount (from its informer, which may not show the first pod yet)
	// can write the usage back to 0 meanwhile: a CI run admitted the
	// second pod so. Once the recount sees the first pod, the second is
	// refused; one admitted before that is deleted and tried again.
	tries := 0
	require.Eventually(t, func() bool {
		tries++
		name := fmt.Sprintf("second-%d", tries)
		_, err = tc.Client().CoreV1().Pods(ns).Create(ctx, replicaPod(name), metav1.CreateOptions{})
		if err == nil {
			zero := int64(0)
			require.NoError(t, tc.Client().CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
			return false
		}
		return true
	}, waitTimeout, 500*time.Millisecond)
	require.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
	require.Contains(t, err.Error(), "exceeded quota")
}

// Stop leaves no process and no listening port behind, and removes the state.
func TestStopLeavesNothing(t *testing.T) {
	ctx := context.Background()
	c, err := cluster.StartLocal(ctx, cluster.Options{Nodes: []cluster.Node{cluster.CPUNode("solo")}})
	require.NoError(t, err)
	s := c.State()
	require.Len(t, s.Processes, 5)
	require.Contains(t, s.Ports, "kwok", "kwok's kubelet server listens too")
	require.Len(t, s.Ports, 6)
	for _, p := range s.Processes {
		require.True(t, p.Alive(), p.Name)
	}
	for name, port := range s.Ports {
		require.True(t, portOpen(port), "%s port %d not listening while up", name, port)
	}

	require.NoError(t, c.Stop())
	for _, p := range s.Processes {
		require.False(t, p.Alive(), "%s (pid %d) still running", p.Name, p.PID)
		require.False(t, processExists(p.PID, p.StartTicks), "%s (pid %d) still in /proc", p.Name, p.PID)
	}
	for name, port := range s.Ports {
		require.False(t, portOpen(port), "%s port %d still accepts connections", name, port)
	}
	require.NoDirExists(t, c.StateDir)
	require.NoError(t, c.Stop(), "a second Stop is harmless")
}
