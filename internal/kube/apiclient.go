package kube

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrPodGone is returned by APIClient.PodLogs when the pod does not exist.
var ErrPodGone = errors.New("pod not found")

// APIClient is what the API server itself does in Kubernetes: write and
// delete tenant Secrets (their values never pass through Postgres) and read
// pod logs. Everything else is the worker's.
type APIClient struct {
	Client kubernetes.Interface
}

// PutSecret creates or replaces the tenant secret's Kubernetes Secret.
func (c APIClient) PutSecret(ctx context.Context, tenantID, namespace, secretID string, data map[string]string) error {
	want := RenderSecret(tenantID, namespace, secretID, data)
	secrets := c.Client.CoreV1().Secrets(namespace)
	_, err := secrets.Create(ctx, want, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	have, err := secrets.Get(ctx, secretID, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if have.Labels[LabelManagedBy] != ManagedByValue {
		return fmt.Errorf("secret %s/%s exists and is not managed by Trainyard", namespace, secretID)
	}
	want.ResourceVersion = have.ResourceVersion
	_, err = secrets.Update(ctx, want, metav1.UpdateOptions{})
	return err
}

// DeleteSecret deletes the tenant secret's Kubernetes Secret; a missing one is fine.
func (c APIClient) DeleteSecret(ctx context.Context, namespace, secretID string) error {
	err := c.Client.CoreV1().Secrets(namespace).Delete(ctx, secretID, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// PodLogs streams the replica container's log.
func (c APIClient) PodLogs(ctx context.Context, namespace, pod string, follow bool, tailLines int64) (io.ReadCloser, error) {
	opts := &corev1.PodLogOptions{Container: ContainerName, Follow: follow}
	if tailLines > 0 {
		opts.TailLines = &tailLines
	}
	rc, err := c.Client.CoreV1().Pods(namespace).GetLogs(pod, opts).Stream(ctx)
	if apierrors.IsNotFound(err) {
		return nil, ErrPodGone
	}
	return rc, err
}
