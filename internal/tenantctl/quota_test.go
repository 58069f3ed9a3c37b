package tenantctl

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestQuotaUsageOnly(t *testing.T) {
	base := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "trainyard-quota", Namespace: "ty-a", ResourceVersion: "7",
			Labels: map[string]string{"trainyard.dev/tenant": "a"}},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("20")}},
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		edit func(*corev1.ResourceQuota)
		want bool
	}{
		{"usage and resource version", func(q *corev1.ResourceQuota) {
			q.ResourceVersion = "8"
			q.Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}
		}, true},
		{"spec", func(q *corev1.ResourceQuota) { q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("30") }, false},
		{"label", func(q *corev1.ResourceQuota) { q.Labels["trainyard.dev/tenant"] = "b" }, false},
		{"deletion", func(q *corev1.ResourceQuota) { q.DeletionTimestamp = &now }, false},
		{"owner", func(q *corev1.ResourceQuota) {
			q.OwnerReferences = []metav1.OwnerReference{{Kind: "Namespace", Name: "ty-a", UID: "u"}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := base.DeepCopy()
			tc.edit(n)
			if got := quotaUsageOnly(base, n); got != tc.want {
				t.Errorf("quotaUsageOnly = %v, want %v", got, tc.want)
			}
		})
	}
	if quotaUsageOnly(&corev1.Namespace{}, &corev1.Namespace{}) {
		t.Error("an update of another kind must be handled")
	}
}
