//go:build integration

package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trainyard/trainyard/integration/deploytest"
	"github.com/trainyard/trainyard/integration/harness"
)

// deploy/agent (issue 45) is a remote cluster's agent: the worker in
// remote mode with the same least-privilege ClusterRole and admission
// policies as the control plane's workers (deploy/cluster, object for
// object), no DATABASE_URL anywhere, and its control-plane token from a
// projected ServiceAccount token with audience "trainyard", mounted where
// TRAINYARD_AGENT_TOKEN_FILE says. Its pod passes a server dry run in the
// "restricted" namespace.
func TestDeployAgentComponent(t *testing.T) {
	c := harness.Cluster(t)
	deploytest.EnsureNamespace(t, c)
	base := deploytest.Build(t, c, "")
	objs := deploytest.Build(t, c, "agent")
	byKey := func(list []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
		m := map[string]*unstructured.Unstructured{}
		for _, o := range list {
			m[o.GetKind()+"/"+o.GetName()] = o
		}
		return m
	}
	inBase, inAgent := byKey(base), byKey(objs)
	shared := 0
	for k, o := range inAgent {
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			require.Contains(t, inBase, k)
			require.Equal(t, inBase[k].Object, o.Object, "%s is the control plane's", k)
			shared++
		}
	}
	require.Equal(t, 11, shared, "the worker's ClusterRoles (its own and trainyard-tenant-secrets) and binding, and the four admission policies with their bindings")

	var cm corev1.ConfigMap
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(inAgent["ConfigMap/trainyard-config"].Object, &cm))
	require.NotEmpty(t, cm.Data["TRAINYARD_CONTROL_PLANE"])
	require.NotEmpty(t, cm.Data["TRAINYARD_CLUSTER"])
	for k := range cm.Data {
		require.NotContains(t, k, "DATABASE")
	}
	tmpl, _, err := unstructured.NestedMap(inAgent["Deployment/trainyard-agent"].Object, "spec", "template")
	require.NoError(t, err)
	var pod corev1.Pod
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pod))
	require.Equal(t, deploytest.WorkerAccount, pod.Spec.ServiceAccountName)
	ctr := pod.Spec.Containers[0]
	require.Equal(t, []string{"worker"}, ctr.Args)
	require.Empty(t, ctr.Env, "no DATABASE_URL")
	require.Len(t, pod.Spec.Volumes, 1)
	src := pod.Spec.Volumes[0].Projected.Sources[0].ServiceAccountToken
	require.Equal(t, "trainyard", src.Audience)
	require.Equal(t, cm.Data["TRAINYARD_AGENT_TOKEN_FILE"], ctr.VolumeMounts[0].MountPath+"/"+src.Path)

	pod.Name, pod.Namespace = "dry-run-agent", deploytest.Namespace
	_, err = c.Client().CoreV1().Pods(deploytest.Namespace).Create(context.Background(), &pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
}
