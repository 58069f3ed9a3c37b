package kube

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trainyard/trainyard/internal/kube/kubeerr"
)

// APIClient's errors are classified into package kubeerr's, at the one
// boundary between the API server and Kubernetes (classify).

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
// trainyard-api-secrets (deploy/cluster/admission-policy.yaml), which the
// code cannot get around; its refusal is kubeerr.ErrSecretNotOurs.
func (c APIClient) PutSecret(ctx context.Context, tenantID, namespace, secretID string, data map[string]string) error {
	want := RenderSecret(tenantID, namespace, secretID, data)
	secrets := c.Client.CoreV1().Secrets(namespace)
	_, err := secrets.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = secrets.Update(ctx, want, metav1.UpdateOptions{})
	}
	return classifySecretError(namespace, secretID, redactSecretError(err, data))
}

// DeleteSecret deletes the tenant secret's Kubernetes Secret; found is
// false when there was none. Delete, not get then delete: the API server
// may not read Secrets.
func (c APIClient) DeleteSecret(ctx context.Context, namespace, secretID string) (found bool, err error) {
	err = c.Client.CoreV1().Secrets(namespace).Delete(ctx, secretID, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) && !isNamespaceMissing(err) {
		return false, nil
	}
	return err == nil, classifySecretError(namespace, secretID, redactSecretError(err, nil))
}

// redactSecretError withholds what the cluster said about a Secret call:
// an admission webhook may deny with a message that echoes the object, its
// values included, and callers log these errors (issue 41, finding 10).
// The result is still the cluster's status (apierrors' checks see its
// code, reason and details), with a message of ours, and the details'
// causes kept with every value (plain, JSON-escaped or base64) cut out of
// them (Kubernetes' own name keys, never values). Errors that are not the cluster's answer
// (network, context) carry nothing of the object and pass unchanged.
func redactSecretError(err error, values map[string]string) error {
	var se apierrors.APIStatus
	if err == nil || !errors.As(err, &se) {
		return err
	}
	st := se.Status()
	st.Message = fmt.Sprintf("Kubernetes answered %d %s%s (its message is withheld: it may echo the secret's values)", st.Code, st.Reason, deniedBy(st.Message))
	if st.Details != nil {
		d := *st.Details
		d.Causes = nil
		for _, c := range st.Details.Causes {
			c.Message, c.Field = scrub(c.Message, values), scrub(c.Field, values)
			d.Causes = append(d.Causes, c)
		}
		st.Details = &d
	}
	return &redactedStatus{st: st}
}

var (
	webhookName = regexp.MustCompile(`admission webhook "([^"]{1,253})"`)
	policyName  = regexp.MustCompile(`ValidatingAdmissionPolicy '([^']{1,253})'`)
	rbacDenial  = regexp.MustCompile(`^User "([^"]{1,253})" cannot `)
)

// deniedBy names who refused, from a refusal's message, so that an
// operator can tell an admission check from missing RBAC without the
// message itself.
func deniedBy(msg string) string {
	if m := webhookName.FindStringSubmatch(msg); m != nil {
		return ", denied by admission webhook " + strconv.Quote(m[1])
	}
	if m := policyName.FindStringSubmatch(msg); m != nil {
		return ", denied by ValidatingAdmissionPolicy " + strconv.Quote(m[1])
	}
	if m := rbacDenial.FindStringSubmatch(msg); m != nil {
		return ", denied by RBAC to " + strconv.Quote(m[1])
	}
	return ""
}

// scrub cuts every value out of text, as written, JSON-escaped and in
// base64 (a Secret's data as the API carries it).
func scrub(text string, values map[string]string) string {
	for _, v := range values {
		if v == "" {
			continue
		}
		escaped, _ := json.Marshal(v)
		for _, form := range []string{base64.StdEncoding.EncodeToString([]byte(v)), string(escaped[1 : len(escaped)-1]), v} {
			text = strings.ReplaceAll(text, form, "[withheld]")
		}
	}
	return text
}

// redactedStatus is a cluster's answer with its message withheld.
type redactedStatus struct{ st metav1.Status }

func (e *redactedStatus) Error() string         { return e.st.Message }
func (e *redactedStatus) Status() metav1.Status { return e.st }

// classifySecretError turns the API server's answer to a Secret write into
// APIClient's errors; unclassified ones are returned wrapped as they are.
func classifySecretError(namespace, secretID string, err error) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("secret %s/%s", namespace, secretID)
	switch {
	case isNamespaceMissing(err) || isNamespaceTerminating(err):
		return fmt.Errorf("%w: %s: %w", kubeerr.ErrNamespaceNotReady, what, err)
	case apierrors.IsInvalid(err):
		return &kubeerr.InvalidError{Causes: statusCauses(err), Err: fmt.Errorf("%s: %w", what, err)}
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%w: %s: %w", kubeerr.ErrConcurrentChange, what, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w: %s: %w", kubeerr.ErrSecretNotOurs, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// isNamespaceMissing reports whether a write into a namespace failed
// because the namespace does not exist. A create into a missing namespace
// is a NotFound about namespaces; a delete of a missing Secret is a
// NotFound about secrets, which is not this.
func isNamespaceMissing(err error) bool {
	var st apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// statusCauses are the field messages of a Kubernetes Invalid error.
func statusCauses(err error) []string {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || se.Status().Details == nil {
		return nil
	}
	var out []string
	for _, c := range se.Status().Details.Causes {
		msg := c.Message
		if c.Field != "" {
			msg = c.Field + ": " + msg
		}
		out = append(out, msg)
	}
	return out
}

// PodLogs streams the replica container's log; kubeerr.ErrPodGone when the pod
// does not exist. The API server may read logs only in tenant namespaces:
// the worker binds it there (RenderTenant's APIPodLogs).
func (c APIClient) PodLogs(ctx context.Context, namespace, pod string, follow bool, tailLines int64) (io.ReadCloser, error) {
	opts := &corev1.PodLogOptions{Container: ContainerName, Follow: follow}
	if tailLines > 0 {
		opts.TailLines = &tailLines
	}
	rc, err := c.Client.CoreV1().Pods(namespace).GetLogs(pod, opts).Stream(ctx)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %s/%s", kubeerr.ErrPodGone, namespace, pod)
	}
	return rc, err
}
