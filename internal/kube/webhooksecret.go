package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SecretReader reads one value of a Secret: the webhook deliverer's
// signing secrets, which the API server wrote (APIClient.PutSecret) and
// cannot read back. The error never carries the value.
type SecretReader struct {
	Client kubernetes.Interface
}

// SecretValue returns the value of key in the Secret namespace/name.
func (r SecretReader) SecretValue(ctx context.Context, namespace, name, key string) ([]byte, error) {
	s, err := r.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("the Secret %s/%s does not exist", namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the Secret %s/%s: %w", namespace, name, redactSecretError(err, nil))
	}
	v, ok := s.Data[key]
	if !ok {
		return nil, fmt.Errorf("the Secret %s/%s has no key %q", namespace, name, key)
	}
	return v, nil
}
