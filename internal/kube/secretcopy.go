package kube

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/trainyard/trainyard/internal/tenant"
)

// Tenant Secrets in more than one cluster (issue 45). The API server
// writes a tenant secret's values in its own cluster (the home cluster,
// APIClient.PutSecret). A job placed in another cluster mounts them from
// a copy there, which that cluster's tenant reconciler keeps: it asks for
// the tenant's secrets (a remote agent through AgentService, a worker on
// Postgres from HomeSecrets), sends the version of each copy it holds,
// and receives values only for those that changed.
const (
	// TenantSecretsName names the RoleBinding in every tenant namespace,
	// and the ClusterRole of deploy/ it refers to, that let the worker read
	// and write Secrets in that namespace and nowhere else: it keeps the
	// copies, and on Postgres reads the home cluster's values.
	TenantSecretsName = "trainyard-tenant-secrets"
	// SecretReadersName names the Role and RoleBinding in the home
	// cluster's tenant namespaces that let the API server read the
	// tenant's secrets by name (RenderSecretReaders), to hand them to
	// remote agents.
	SecretReadersName = "trainyard-secret-readers"
	// LabelSecretCopy marks a copy: only copies are ever deleted by the
	// reconciler that keeps them.
	LabelSecretCopy = "trainyard.dev/secret-copy"
	// AnnotationSecretVersion is the version of the values a copy holds
	// (tenant.Secret.CopyVersion); AnnotationSecretDigest is the digest of
	// those values as written, so a copy changed by hand is written again.
	AnnotationSecretVersion = "trainyard.dev/secret-version"
	AnnotationSecretDigest  = "trainyard.dev/secret-digest"
	// DefaultWorkerServiceAccount is the worker's ServiceAccount in
	// deploy/, as namespace:name.
	DefaultWorkerServiceAccount = "trainyard:trainyard-worker"
)

// HomeSecrets reads tenant Secrets in the home cluster. Its identity needs
// get on them: the worker's holds it through TenantSecretsName, the API
// server's through SecretReadersName.
type HomeSecrets struct {
	Client kubernetes.Interface
}

// Copies returns one tenant's secrets (their metadata, from Postgres) as
// the Kubernetes Secrets in namespace hold them. A secret whose version is
// have[name] comes back Unchanged, without values and without a read. A
// secret that has no Kubernetes Secret, or one that is not Trainyard's for
// the tenant, is left out. Errors never carry values.
func (h HomeSecrets) Copies(ctx context.Context, namespace string, secrets []tenant.Secret, have map[string]string) ([]tenant.SecretCopy, error) {
	if namespace == "" {
		return nil, errors.New("reading tenant secrets: the tenant records no namespace")
	}
	out := make([]tenant.SecretCopy, 0, len(secrets))
	for _, s := range secrets {
		c := tenant.SecretCopy{Name: s.Name, Version: s.CopyVersion()}
		if have[s.Name] == c.Version {
			c.Unchanged = true
			out = append(out, c)
			continue
		}
		ks, err := h.Client.CoreV1().Secrets(namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading secret %s/%s: %w", namespace, s.Name, redactSecretError(err, nil))
		}
		if ks.Labels[LabelManagedBy] != ManagedByValue || ks.Labels[LabelTenant] != s.Tenant {
			continue
		}
		c.Data = ks.Data
		if c.Data == nil {
			c.Data = map[string][]byte{}
		}
		out = append(out, c)
	}
	return out, nil
}

// SecretCopies reads the home cluster's tenant Secrets (HomeSecrets.Copies).
func (c *Clusters) SecretCopies(ctx context.Context, namespace string, secrets []tenant.Secret, have map[string]string) ([]tenant.SecretCopy, error) {
	return HomeSecrets{Client: c.byName[c.home].api.Client}.Copies(ctx, namespace, secrets, have)
}

// RenderSecretCopy is the copy of a tenant secret in namespace ns of
// another cluster: the Secret RenderSecret gives, marked as a copy, with
// the version and digest of its values.
func RenderSecretCopy(tenantID, ns string, c tenant.SecretCopy) *corev1.Secret {
	s := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: tenantMeta(tenantID, ns, c.Name),
		Type:       corev1.SecretTypeOpaque,
		Data:       make(map[string][]byte, len(c.Data)),
	}
	for k, v := range c.Data {
		s.Data[k] = slices.Clone(v)
	}
	s.Labels[LabelSecretCopy] = "true"
	s.Annotations = map[string]string{AnnotationSecretVersion: c.Version, AnnotationSecretDigest: SecretDigest(s.Data)}
	return s
}

// SecretCopySelector selects the copies of a tenant's secrets.
func SecretCopySelector(tenantID string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue, LabelTenant: tenantID, LabelSecretCopy: "true"})
}

// SecretCopyVersion is the version a copy holds, or "" when its values
// are not those its reconciler wrote (changed by hand): then it is
// written again.
func SecretCopyVersion(s *corev1.Secret) string {
	if s.Annotations[AnnotationSecretDigest] != SecretDigest(s.Data) {
		return ""
	}
	return s.Annotations[AnnotationSecretVersion]
}

// SecretDigest is a SHA-256 over a Secret's keys and values, in key order,
// each length-prefixed.
func SecretDigest(data map[string][]byte) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	var n [8]byte
	for _, k := range keys {
		for _, b := range [][]byte{[]byte(k), data[k]} {
			binary.BigEndian.PutUint64(n[:], uint64(len(b)))
			h.Write(n[:])
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// RedactSecretError withholds what the cluster said about a write of the
// Secret holding data (redactSecretError): callers log these errors.
func RedactSecretError(err error, data map[string][]byte) error {
	values := make(map[string]string, len(data))
	for k, v := range data {
		values[k] = string(v)
	}
	return redactSecretError(err, values)
}
