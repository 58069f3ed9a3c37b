package kube

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/trainyard/trainyard/internal/kube/kubeerr"
)

// A pod's log is read in the cluster named; "" is the home cluster; a
// cluster without credentials is a NoClusterError naming it. Secrets are
// written at home only.
func TestClustersReadInTheJobsCluster(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "j-worker-0", Namespace: "ty-a"}}
	home, b := fake.NewClientset(), fake.NewClientset(pod)
	c := NewClustersFor("default", map[string]kubernetes.Interface{"default": home, "b": b})

	rc, err := c.PodLogs(ctx, "b", "ty-a", "j-worker-0", false, 0)
	require.NoError(t, err)
	body, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NotEmpty(t, body)
	require.True(t, readsLogs(b), "b was asked")
	require.False(t, readsLogs(home), "home was not")

	_, err = c.PodLogs(ctx, "mars", "ty-a", "j-worker-0", false, 0)
	var noCluster *kubeerr.NoClusterError
	require.True(t, errors.As(err, &noCluster), "%v", err)
	require.Equal(t, "mars", noCluster.Cluster)
	require.Contains(t, err.Error(), "--cluster-kubeconfig mars=")
	require.Error(t, c.Reaches("mars"))

	require.NoError(t, c.PutSecret(ctx, "a", "ty-a", "s", map[string]string{"k": "v"}))
	_, err = home.CoreV1().Secrets("ty-a").Get(ctx, "s", metav1.GetOptions{})
	require.NoError(t, err, "written at home")
	_, err = b.CoreV1().Secrets("ty-a").Get(ctx, "s", metav1.GetOptions{})
	require.Error(t, err, "and not in b")
}

func readsLogs(c *fake.Clientset) bool {
	for _, a := range c.Actions() {
		if a.GetSubresource() == "log" {
			return true
		}
	}
	return false
}
