package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

func labelsSet(m map[string]string) labels.Set { return labels.Set(m) }

func TestSelectors(t *testing.T) {
	require.Equal(t, "app.kubernetes.io/managed-by=trainyard", ManagedSelector().String())
	require.Equal(t, "app.kubernetes.io/managed-by=trainyard,trainyard.dev/job-uid=u1", JobSelector("u1").String())
	require.False(t, JobSelector("u1").Matches(labels.Set{LabelManagedBy: ManagedByValue, LabelJobUID: "u2"}))
}

// JobSelector selects every object of the job with this uid (replica pods,
// its EndpointSlice, the TensorBoard pod and Service).
func JobSelector(uid string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue, LabelJobUID: uid})
}
