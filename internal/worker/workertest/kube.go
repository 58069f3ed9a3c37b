package workertest

import (
	"strconv"
	"sync/atomic"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Kube returns client-go's fake clientset holding objects, made to give
// every created object a UID, as the API server does, and every write of
// an EndpointSlice a new resourceVersion (the worker tells its own writes
// from the cache's by it).
func Kube(objects ...runtime.Object) *fake.Clientset {
	return WithUIDs(fake.NewClientset(objects...))
}

// WithUIDs makes c give UIDs and EndpointSlice resource versions as Kube's
// does, and returns it.
func WithUIDs(c *fake.Clientset) *fake.Clientset {
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if m, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && m.GetUID() == "" {
			m.SetUID(types.UID(uuid.NewString()))
		}
		return false, nil, nil
	})
	var version atomic.Int64
	for _, verb := range []string{"create", "update"} {
		c.PrependReactor(verb, "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if m, ok := a.(interface{ GetObject() runtime.Object }).GetObject().(metav1.Object); ok {
				m.SetResourceVersion(strconv.FormatInt(version.Add(1), 10))
			}
			return false, nil, nil
		})
	}
	return c
}
