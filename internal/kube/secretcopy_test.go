package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/trainyard/trainyard/internal/tenant"
)

// HomeSecrets reads only the secrets whose version the caller does not
// hold, skips a Secret that is missing or not Trainyard's for the tenant,
// and never puts a value into an error.
func TestHomeSecretsCopies(t *testing.T) {
	ctx := context.Background()
	put := time.Date(2026, 12, 7, 10, 0, 0, 123, time.UTC)
	ours := RenderSecret("acme", "ty-acme", "db", map[string]string{"password": "hunter2"})
	same := RenderSecret("acme", "ty-acme", "same", map[string]string{"k": "v"})
	foreign := RenderSecret("other", "ty-acme", "foreign", map[string]string{"k": "v"})
	client := fake.NewClientset(ours, same, foreign)
	metas := []tenant.Secret{
		{Tenant: "acme", Name: "db", UpdateTime: put},
		{Tenant: "acme", Name: "same", UpdateTime: put},
		{Tenant: "acme", Name: "foreign", UpdateTime: put},
		{Tenant: "acme", Name: "gone", UpdateTime: put},
	}
	have := map[string]string{"same": put.Format(time.RFC3339Nano), "db": "an older version"}
	got, err := HomeSecrets{Client: client}.Copies(ctx, "ty-acme", metas, have)
	require.NoError(t, err)
	require.Equal(t, []tenant.SecretCopy{
		{Name: "db", Version: "2026-12-07T10:00:00.000000123Z", Data: map[string][]byte{"password": []byte("hunter2")}},
		{Name: "same", Version: "2026-12-07T10:00:00.000000123Z", Unchanged: true},
	}, got)
	for _, a := range client.Actions() {
		require.NotEqual(t, "same", a.(k8stesting.GetAction).GetName(), "an unchanged secret is not read")
	}

	client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "db", errors.New(`denied: value "hunter2"`))
	})
	_, err = HomeSecrets{Client: client}.Copies(ctx, "ty-acme", metas[:1], nil)
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	require.NotContains(t, err.Error(), "hunter2")

	_, err = HomeSecrets{Client: client}.Copies(ctx, "", metas, nil)
	require.ErrorContains(t, err, "no namespace")
}

// A copy carries the version and digest of its values; changed by hand, it
// holds no version and is written again.
func TestSecretCopyVersion(t *testing.T) {
	c := RenderSecretCopy("acme", "ty-acme", tenant.SecretCopy{Name: "db", Version: "v1", Data: map[string][]byte{"password": []byte("hunter2")}})
	require.Equal(t, corev1.SecretTypeOpaque, c.Type)
	require.Equal(t, map[string]string{LabelManagedBy: ManagedByValue, LabelTenant: "acme", LabelSecretCopy: "true"}, c.Labels)
	require.True(t, SecretCopySelector("acme").Matches(labels.Set(c.Labels)))
	require.False(t, SecretCopySelector("other").Matches(labels.Set(c.Labels)))
	require.Equal(t, "v1", SecretCopyVersion(c))
	require.NotContains(t, c.Annotations[AnnotationSecretDigest], "hunter2")

	edited := c.DeepCopy()
	edited.Data["password"] = []byte("changed")
	require.Empty(t, SecretCopyVersion(edited))
	added := c.DeepCopy()
	added.Data["extra"] = nil
	require.Empty(t, SecretCopyVersion(added))
	// Length prefixes: moving bytes from a value into the next key
	// changes the digest.
	require.NotEqual(t, SecretDigest(map[string][]byte{"a": []byte("bc"), "d": nil}), SecretDigest(map[string][]byte{"a": []byte("b"), "cd": nil}))
	require.Empty(t, SecretCopyVersion(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}), "a Secret without annotations holds no version")

	// Printing a copy shows key names, never values.
	sc := tenant.SecretCopy{Name: "db", Version: "v1", Data: map[string][]byte{"password": []byte("hunter2")}}
	for _, s := range []string{sc.String(), sc.GoString(), sc.LogValue().String()} {
		require.Contains(t, s, "password")
		require.NotContains(t, s, "hunter2")
	}
}
