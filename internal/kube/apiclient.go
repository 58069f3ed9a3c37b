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
//
// It never reads a Secret: the API server's identity holds create, update
// and delete on secrets but not get (deploy/base/rbac-api.yaml), so that
// whoever takes over the API server cannot read the cluster's Secrets. An
// existing Secret is replaced by an unconditional update (no
// resourceVersion; Secrets allow it). That it is Trainyard's — labelled
// app.kubernetes.io/managed-by=trainyard for this tenant, in a tenant
// namespace — is checked by the cluster, by the ValidatingAdmissionPolicy
// trainyard-api-secrets (deploy/base/admission-policy.yaml), which the
// code cannot get around; its refusal is ErrSecretNotOurs.
func (c APIClient) PutSecret(ctx context.Context, tenantID, namespace, secretID string, data map[string]string) error {
	want := RenderSecret(tenantID, namespace, secretID, data)
	secrets := c.Client.CoreV1().Secrets(namespace)
	_, err := secrets.Create(ctx, want, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err = secrets.Update(ctx, want, metav1.UpdateOptions{})
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w: secret %s/%s: %w", ErrSecretNotOurs, namespace, secretID, err)
	}
	return err
}

// ErrSecretNotOurs is returned by PutSecret and DeleteSecret when the
// cluster refuses to let the API server replace or delete a Secret,
// typically one of that name that Trainyard did not make.
var ErrSecretNotOurs = errors.New("the cluster refused the write: the Secret exists and is not managed by Trainyard for this tenant")

// DeleteSecret deletes the tenant secret's Kubernetes Secret; a missing one is fine.
func (c APIClient) DeleteSecret(ctx context.Context, namespace, secretID string) error {
	err := c.Client.CoreV1().Secrets(namespace).Delete(ctx, secretID, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w: secret %s/%s: %w", ErrSecretNotOurs, namespace, secretID, err)
	}
	return err
}

// PodLogs streams the replica container's log. The API server may read
// logs only in tenant namespaces: the worker binds it there
// (RenderTenant's APIPodLogs).
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
