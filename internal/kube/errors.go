package kube

import (
	"errors"
	"net/http"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrInvalidSpec wraps every error a Render function returns: the job (or
// tenant) cannot be turned into valid objects, so retrying cannot help.
var ErrInvalidSpec = errors.New("spec cannot be rendered")

// Reasons Reason returns beyond the API server's own metav1.StatusReason
// values ("Invalid", "Forbidden", "AlreadyExists", ...).
const (
	ReasonInvalidSpec          = "InvalidSpec"
	ReasonPodSecurity          = "PodSecurityForbidden"
	ReasonQuotaExceeded        = "QuotaExceeded"
	ReasonNamespaceTerminating = "NamespaceTerminating"
	ReasonKubernetesError      = "KubernetesError"
)

// IsTerminal reports whether err, returned by the API server for a create or
// update of a job's object, means the job can never get that object: the
// request is invalid (Invalid, BadRequest, NotAcceptable,
// UnsupportedMediaType, RequestEntityTooLarge) or refused by policy
// (Forbidden, which includes Pod Security Admission and RBAC). The job then
// fails with Reason and Message. Everything else — conflicts, timeouts,
// throttling, a missing namespace, network errors — is retried with backoff.
//
// Four kinds of Forbidden are transient and so not terminal: a ResourceQuota
// that is exceeded right now (capacity frees up when other pods end), a
// namespace that is being deleted (the worker re-creates it once it is gone,
// or the tenant is offboarding and the job is cancelled anyway), a
// ServiceAccount the admission plugin cannot find yet (the tenant reconciler
// creates it moments after the namespace), and an RBAC denial: it says what
// the worker's identity may do, not what the job asks for, so the job is
// not at fault and succeeds once the rights are there. An API server that
// has just started denies every request until its RBAC caches are filled
// (the chaos suite saw jobs fail with "cannot create resource pods" after
// restarting kube-apiserver), and a Role being rolled out is missing for
// a moment; a right that is missing for good shows as retries in
// trainyard_worker_kube_api_errors_total{reason="Forbidden"} and the log.
func IsTerminal(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrInvalidSpec) {
		return true
	}
	switch {
	case isQuotaExceeded(err), isNamespaceTerminating(err), isServiceAccountMissing(err), isRBACDenied(err):
		return false
	case apierrors.IsInvalid(err),
		apierrors.IsForbidden(err),
		apierrors.IsBadRequest(err),
		apierrors.IsNotAcceptable(err),
		apierrors.IsUnsupportedMediaType(err),
		apierrors.IsRequestEntityTooLargeError(err):
		return true
	}
	return false
}

// Reason is a short CamelCase reason for err, for a job's status and events:
// the API server's StatusReason ("Invalid", "Forbidden", ...), refined to
// PodSecurityForbidden, QuotaExceeded or NamespaceTerminating where the
// server says so, InvalidSpec for render errors and KubernetesError for
// errors that carry no status (network, context).
func Reason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrInvalidSpec):
		return ReasonInvalidSpec
	case isPodSecurity(err):
		return ReasonPodSecurity
	case isQuotaExceeded(err):
		return ReasonQuotaExceeded
	case isNamespaceTerminating(err):
		return ReasonNamespaceTerminating
	}
	if r := apierrors.ReasonForError(err); r != metav1.StatusReasonUnknown {
		return string(r)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if code := status.Status().Code; code != 0 {
			return strings.ReplaceAll(http.StatusText(int(code)), " ", "")
		}
	}
	return ReasonKubernetesError
}

// Message is the human part for err: the API server's status message (which
// names the object and what is wrong with it), or err's text otherwise. It
// never contains object contents beyond what the server chose to quote, and
// rendered objects hold no secret values, so it is safe to store and show.
func Message(err error) string {
	if err == nil {
		return ""
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

func isQuotaExceeded(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(Message(err), "exceeded quota")
}

// rbacDenied is how the RBAC authorizer words a denial: `User "..." cannot
// create resource "pods" in API group "" in the namespace "ty-a"`.
var rbacDenied = regexp.MustCompile(`cannot [a-z]+ resource "`)

func isRBACDenied(err error) bool {
	return apierrors.IsForbidden(err) && rbacDenied.MatchString(Message(err))
}

func isServiceAccountMissing(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(Message(err), "error looking up service account")
}

func isNamespaceTerminating(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

func isPodSecurity(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(Message(err), "violates PodSecurity")
}
