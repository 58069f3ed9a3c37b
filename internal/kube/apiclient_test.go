package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/trainyard/trainyard/internal/kube/kubeerr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	found, err := api.DeleteSecret(ctx, "ty-vision", "wandb")
	require.NoError(t, err)
	require.True(t, found)
	found, err = api.DeleteSecret(ctx, "ty-vision", "wandb")
	require.NoError(t, err, "a missing Secret is fine")
	require.False(t, found, "and says so: the API answers NOT_FOUND when there was no metadata either")
	require.Equal(t, []string{"delete secrets", "delete secrets"}, verbs(c))
}

// The cluster's refusal (deploy/'s admission policy, for a Secret that is
// not Trainyard's) comes back as kubeerr.ErrSecretNotOurs, still a Forbidden.
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
	require.ErrorIs(t, err, kubeerr.ErrSecretNotOurs)
	require.True(t, apierrors.IsForbidden(err))
	require.ErrorContains(t, err, "ty-vision/db")

	_, err = api.DeleteSecret(ctx, "ty-vision", "db")
	require.ErrorIs(t, err, kubeerr.ErrSecretNotOurs)
	require.True(t, apierrors.IsForbidden(err))
	require.NotContains(t, verbs(c), "get secrets")
}

// The API server's answers to a Secret write become APIClient's errors, so
// that callers need not know apimachinery's.
func TestSecretErrorsAreClassified(t *testing.T) {
	gr := schema.GroupResource{Resource: "secrets"}
	terminating := apierrors.NewForbidden(gr, "s", errors.New("namespace ty-a is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for name, tc := range map[string]struct {
		err  error
		want error
	}{
		"no namespace": {apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ty-a"), kubeerr.ErrNamespaceNotReady},
		"terminating":  {terminating, kubeerr.ErrNamespaceNotReady},
		"conflict":     {apierrors.NewConflict(gr, "s", errors.New("changed")), kubeerr.ErrConcurrentChange},
		"forbidden":    {apierrors.NewForbidden(gr, "s", errors.New(`User "system:serviceaccount:trainyard:trainyard-api" cannot update`)), kubeerr.ErrSecretNotOurs},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientset()
			c.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			err := APIClient{Client: c}.PutSecret(context.Background(), "a", "ty-a", "s", map[string]string{"k": "v"})
			require.ErrorIs(t, err, tc.want)
		})
	}

	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s", field.ErrorList{
		field.Invalid(field.NewPath("data").Key("a b"), "a b", "a valid config key must consist of alphanumeric characters")})
	c := fake.NewClientset()
	c.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, invalid })
	err := APIClient{Client: c}.PutSecret(context.Background(), "a", "ty-a", "s", map[string]string{"a b": "value-1"})
	var inv *kubeerr.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Len(t, inv.Causes, 1)
	require.Contains(t, inv.Causes[0], "a valid config key")

	c = fake.NewClientset()
	c.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	})
	_, err = APIClient{Client: c}.PodLogs(context.Background(), "ty-a", "p", false, 0)
	require.ErrorIs(t, err, kubeerr.ErrPodGone)
}

// Issue 41, finding 10: a cluster answer that echoes the Secret (an
// admission webhook may) reaches no caller or log with the values: the
// message is withheld, causes that echo a value too; the classification
// still holds.
func TestSecretErrorsAreRedacted(t *testing.T) {
	const value = "hunter2-very-secret"
	b64 := "aHVudGVyMi12ZXJ5LXNlY3JldA=="
	gr := schema.GroupResource{Resource: "secrets"}
	echo := `admission webhook "policy.example.com" denied the request: {"data":{"password":"` + b64 + `"},"stringData":{"password":"` + value + `"}}`
	forbidden := apierrors.NewForbidden(gr, "s", errors.New(echo))
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s", field.ErrorList{
		field.Invalid(field.NewPath("data").Key("password"), value, "must not look like a password"),
		field.Invalid(field.NewPath("data").Key("a b"), "a b", "a valid config key must consist of alphanumeric characters")})
	internal := apierrors.NewInternalError(errors.New(echo))
	for name, tc := range map[string]struct {
		err   error
		check func(t *testing.T, err error)
	}{
		"forbidden": {forbidden, func(t *testing.T, err error) {
			require.ErrorIs(t, err, kubeerr.ErrSecretNotOurs)
			require.True(t, apierrors.IsForbidden(err))
			require.Contains(t, err.Error(), `denied by admission webhook "policy.example.com"`, "who refused stays")
		}},
		"invalid": {invalid, func(t *testing.T, err error) {
			var inv *kubeerr.InvalidError
			require.ErrorAs(t, err, &inv)
			require.Len(t, inv.Causes, 2)
			require.Contains(t, strings.Join(inv.Causes, "\n"), "a valid config key", "causes without values stay")
			require.NotContains(t, strings.Join(inv.Causes, "\n"), value)
		}},
		"internal": {internal, func(t *testing.T, err error) {
			require.True(t, apierrors.IsInternalError(err))
		}},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientset()
			c.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			err := APIClient{Client: c}.PutSecret(context.Background(), "a", "ty-a", "s", map[string]string{"password": value})
			require.Error(t, err)
			tc.check(t, err)
			text := fmt.Sprintf("%v %+v %#v", err, err, err)
			require.NotContains(t, text, value)
			require.NotContains(t, text, b64)
			require.Contains(t, err.Error(), "withheld")
		})
	}
}
