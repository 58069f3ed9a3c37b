// Package kubeerr names what the cluster can answer the API server, in
// words both sides share: package kube classifies the API server's errors
// into these at the one boundary between them, and the API handlers act on
// them without importing kube, client-go or apimachinery. Each wraps the
// cluster's own error, whose text (it can name the server's identity, its
// RBAC rules and the cluster's addresses) is for logs only.
package kubeerr

import (
	"errors"
	"fmt"
)

var (
	// ErrPodGone: the pod does not exist (pod logs, port forwards).
	ErrPodGone = errors.New("pod not found")
	// ErrNamespaceNotReady: the tenant's namespace does not exist yet (a
	// worker creates it moments after the tenant) or is being deleted (a
	// worker re-creates it). Retry shortly.
	ErrNamespaceNotReady = errors.New("the tenant's namespace is not ready")
	// ErrSecretNotOurs: the cluster refused to write or delete the Secret:
	// one of that name exists that Trainyard does not manage for this
	// tenant (deploy/'s admission policy), or the server lacks the right.
	ErrSecretNotOurs = errors.New("the cluster refused the write: the Secret exists and is not managed by Trainyard for this tenant, or the server may not write it")
	// ErrConcurrentChange: the object was changed concurrently. Retry.
	ErrConcurrentChange = errors.New("the object was changed concurrently")
)

// InvalidError is the cluster refusing an object as invalid. Causes are its
// field messages; for a Secret they name keys, never values. Err is the
// cluster's error, for logs.
type InvalidError struct {
	Causes []string
	Err    error
}

func (e *InvalidError) Error() string {
	if e.Err == nil {
		return "invalid"
	}
	return "invalid: " + e.Err.Error()
}

func (e *InvalidError) Unwrap() error { return e.Err }

// NoClusterError: the API server holds no credentials for the cluster a
// job runs in, so it can read nothing there (logs, TensorBoard). The
// operator gives it some with `trainyard serve --cluster-kubeconfig
// NAME=PATH`; the caller can do nothing about it (FAILED_PRECONDITION).
type NoClusterError struct{ Cluster string }

func (e *NoClusterError) Error() string {
	return fmt.Sprintf("the job runs in cluster %q, which this API server has no credentials for: the operator starts it with --cluster-kubeconfig %s=KUBECONFIG", e.Cluster, e.Cluster)
}
