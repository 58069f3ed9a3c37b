package kube

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// verbs lists the API calls the fake client saw, as "verb resource".
func verbs(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

// PutSecret creates; on AlreadyExists it replaces the Secret with an
// unconditional update. It never reads a Secret: the API server holds no
// get on secrets.
func TestPutSecretNeverReads(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	api := APIClient{Client: c}

	require.NoError(t, api.PutSecret(ctx, "vision", "ty-vision", "wandb", map[string]string{"k": "one"}))
	require.Equal(t, []string{"create secrets"}, verbs(c))

	c.ClearActions()
	require.NoError(t, api.PutSecret(ctx, "vision", "ty-vision", "wandb", map[string]string{"k": "two", "l": "three"}))
	require.Equal(t, []string{"create secrets", "update secrets"}, verbs(c), "no get")
	upd := c.Actions()[1].(k8stesting.UpdateAction).GetObject().(*corev1.Secret)
	require.Empty(t, upd.ResourceVersion, "the update is unconditional")
	require.Equal(t, tenantLabels, upd.Labels, "the replacement carries Trainyard's labels, which admission checks")
	require.Equal(t, corev1.SecretTypeOpaque, upd.Type)

	s, err := c.CoreV1().Secrets("ty-vision").Get(ctx, "wandb", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{"k": []byte("two"), "l": []byte("three")}, s.Data)

	c.ClearActions()
	require.NoError(t, api.DeleteSecret(ctx, "ty-vision", "wandb"))
	require.NoError(t, api.DeleteSecret(ctx, "ty-vision", "wandb"), "a missing Secret is fine")
	require.Equal(t, []string{"delete secrets", "delete secrets"}, verbs(c))
}

// The cluster's refusal (deploy/'s admission policy, for a Secret that is
// not Trainyard's) comes back as ErrSecretNotOurs, still a Forbidden.
func TestPutSecretRefusedByTheCluster(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ty-vision"}})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "db",
		errors.New(`ValidatingAdmissionPolicy 'trainyard-api-secrets' denied request`))
	refuse := func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, forbidden }
	c.PrependReactor("update", "secrets", refuse)
	c.PrependReactor("delete", "secrets", refuse)
	api := APIClient{Client: c}

	err := api.PutSecret(ctx, "vision", "ty-vision", "db", map[string]string{"k": "v"})
	require.ErrorIs(t, err, ErrSecretNotOurs)
	require.True(t, apierrors.IsForbidden(err))
	require.ErrorContains(t, err, "ty-vision/db")

	err = api.DeleteSecret(ctx, "ty-vision", "db")
	require.ErrorIs(t, err, ErrSecretNotOurs)
	require.True(t, apierrors.IsForbidden(err))
	require.NotContains(t, verbs(c), "get secrets")
}
