package kube

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestIsTerminalAndReason(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	psa := apierrors.NewForbidden(pods, "mnist-chief-0",
		errors.New(`violates PodSecurity "baseline:latest": privileged (container "tensorflow" must not set securityContext.privileged=true)`))
	quota := apierrors.NewForbidden(pods, "mnist-worker-0",
		errors.New("exceeded quota: trainyard-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8"))
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `pods "mnist-chief-0" is forbidden: unable to create new content in namespace ty-vision because it is being terminated`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace ty-vision is being terminated"}}},
	}}

	for name, tc := range map[string]struct {
		err      error
		terminal bool
		reason   string
	}{
		"invalid": {
			err: apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "mnist-chief-0",
				field.ErrorList{field.Invalid(field.NewPath("spec", "hostname"), "x_y", "a lowercase RFC 1123 label")}),
			terminal: true, reason: "Invalid",
		},
		"pod security":          {err: psa, terminal: true, reason: "PodSecurityForbidden"},
		"pod security, wrapped": {err: fmt.Errorf("create pod: %w", psa), terminal: true, reason: "PodSecurityForbidden"},
		"bad request":           {err: apierrors.NewBadRequest("bad"), terminal: true, reason: "BadRequest"},
		"not acceptable":        {err: apierrors.NewGenericServerResponse(406, "create", pods, "x", "", 0, false), terminal: true, reason: "NotAcceptable"},
		"unsupported media":     {err: apierrors.NewGenericServerResponse(415, "create", pods, "x", "", 0, false), terminal: true, reason: "UnsupportedMediaType"},
		"too large":             {err: apierrors.NewRequestEntityTooLargeError("limit is 3145728"), terminal: true, reason: "RequestEntityTooLarge"},
		"render error":          {err: fmt.Errorf("%w: no replica", ErrInvalidSpec), terminal: true, reason: "InvalidSpec"},

		"quota exceeded": {err: quota, reason: "QuotaExceeded"},
		"service account not created yet": {
			err:    apierrors.NewForbidden(pods, "mnist-chief-0", errors.New(`error looking up service account ty-vision/trainyard-job: serviceaccount "trainyard-job" not found`)),
			reason: "Forbidden",
		},
		"forbidden by RBAC (a cold API server, a Role not rolled out yet)": {
			err:    apierrors.NewForbidden(pods, "", errors.New(`User "system:serviceaccount:trainyard:worker" cannot create resource "pods" in API group "" in the namespace "ty-vision"`)),
			reason: "Forbidden",
		},
		"namespace terminating": {err: terminating, reason: "NamespaceTerminating"},
		"already exists":        {err: apierrors.NewAlreadyExists(pods, "mnist-chief-0"), reason: "AlreadyExists"},
		"conflict":              {err: apierrors.NewConflict(pods, "mnist-chief-0", errors.New("modified")), reason: "Conflict"},
		"not found":             {err: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ty-vision"), reason: "NotFound"},
		"throttled":             {err: apierrors.NewTooManyRequests("slow down", 1), reason: "TooManyRequests"},
		"timeout":               {err: apierrors.NewTimeoutError("timeout", 1), reason: "Timeout"},
		"server timeout":        {err: apierrors.NewServerTimeout(pods, "create", 1), reason: "ServerTimeout"},
		"internal":              {err: apierrors.NewInternalError(errors.New("etcd")), reason: "InternalError"},
		"unavailable":           {err: apierrors.NewServiceUnavailable("down"), reason: "ServiceUnavailable"},
		"unauthorized":          {err: apierrors.NewUnauthorized("token expired"), reason: "Unauthorized"},
		"status without reason": {err: &apierrors.StatusError{ErrStatus: metav1.Status{Code: 502, Message: "bad gateway"}}, reason: "BadGateway"},
		"network":               {err: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), reason: "KubernetesError"},
		"context":               {err: context.DeadlineExceeded, reason: "KubernetesError"},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.terminal, IsTerminal(tc.err))
			require.Equal(t, tc.reason, Reason(tc.err))
			require.NotEmpty(t, Message(tc.err))
		})
	}

	require.False(t, IsTerminal(nil))
	require.Empty(t, Reason(nil))
	require.Empty(t, Message(nil))
	require.Contains(t, Message(psa), `pods "mnist-chief-0" is forbidden: violates PodSecurity`)
	require.Equal(t, "dial tcp: refused", Message(errors.New("dial tcp: refused")))
}
