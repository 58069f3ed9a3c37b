package tenantctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// fakeSource is the control plane's side for one tenant: secrets by name,
// each at a version, answered as AgentService answers.
type fakeSource struct {
	secrets  map[string]tenant.SecretCopy
	notFound bool
	asked    []map[string]string // the have of each call
}

func (f *fakeSource) TenantSecrets(_ context.Context, tenantID string, have map[string]string) ([]tenant.SecretCopy, error) {
	f.asked = append(f.asked, maps.Clone(have))
	if f.notFound {
		return nil, fmt.Errorf("%w: tenant %s", store.ErrNotFound, tenantID)
	}
	var out []tenant.SecretCopy
	for _, s := range f.secrets {
		if have[s.Name] == s.Version {
			out = append(out, tenant.SecretCopy{Name: s.Name, Version: s.Version, Unchanged: true})
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

func (f *fakeSource) put(name, version string, data map[string]string) {
	sc := tenant.SecretCopy{Name: name, Version: version, Data: map[string][]byte{}}
	for k, v := range data {
		sc.Data[k] = []byte(v)
	}
	f.secrets[name] = sc
}

type copyBundle struct {
	c      *Controller
	client *fake.Clientset
	src    *fakeSource
	logs   *bytes.Buffer
}

func newCopyBundle(t *testing.T, objs ...*corev1.Secret) *copyBundle {
	t.Helper()
	b := &copyBundle{src: &fakeSource{secrets: map[string]tenant.SecretCopy{}}, logs: &bytes.Buffer{}}
	b.client = fake.NewClientset()
	for _, o := range objs {
		require.NoError(t, b.client.Tracker().Add(o))
	}
	cfg := Config{Secrets: b.src, Client: b.client, Logger: slog.New(slog.NewTextHandler(b.logs, nil))}.WithDefaults()
	b.c = &Controller{cfg: cfg, client: b.client, log: cfg.Logger, metrics: newMetrics(prometheus.NewRegistry())}
	return b
}

func (b *copyBundle) sync(t *testing.T) error {
	t.Helper()
	b.client.ClearActions()
	return b.c.copySecrets(context.Background(), "acme", "ty-acme")
}

func (b *copyBundle) secret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	s, err := b.client.CoreV1().Secrets("ty-acme").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return s
}

// writes are the create, update and delete calls of the last sync.
func (b *copyBundle) writes() []string {
	var out []string
	for _, a := range b.client.Actions() {
		switch a.GetVerb() {
		case "create", "update":
			out = append(out, a.GetVerb()+" "+a.(k8stesting.CreateAction).GetObject().(*corev1.Secret).Name)
		case "delete":
			out = append(out, "delete "+a.(k8stesting.DeleteAction).GetName())
		}
	}
	return out
}

// A cluster that keeps copies: a secret put at home appears, a pass with
// nothing new writes nothing and moves no value, a new version and a copy
// changed by hand are written again, a secret deleted at home goes.
func TestCopySecrets(t *testing.T) {
	b := newCopyBundle(t)
	b.src.put("db", "v1", map[string]string{"password": "hunter2"})
	require.NoError(t, b.sync(t))
	require.Equal(t, []string{"create db"}, b.writes())
	db := b.secret(t, "db")
	require.Equal(t, []byte("hunter2"), db.Data["password"])
	require.Equal(t, map[string]string{kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: "acme", kube.LabelSecretCopy: "true"}, db.Labels)
	require.Equal(t, "v1", db.Annotations[kube.AnnotationSecretVersion])

	require.NoError(t, b.sync(t))
	require.Empty(t, b.writes(), "a copy in shape is not written")
	require.Equal(t, map[string]string{"db": "v1"}, b.src.asked[len(b.src.asked)-1], "the pass names the version it holds, so no value travels")

	b.src.put("db", "v2", map[string]string{"password": "correct horse"})
	require.NoError(t, b.sync(t))
	require.Equal(t, []string{"update db"}, b.writes())
	require.Equal(t, []byte("correct horse"), b.secret(t, "db").Data["password"])

	// Changed by hand: the digest no longer matches, the version is not
	// claimed, the values come again and are put back.
	edited := b.secret(t, "db")
	edited.Data["password"] = []byte("tampered")
	_, err := b.client.CoreV1().Secrets("ty-acme").Update(context.Background(), edited, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, b.sync(t))
	require.Equal(t, map[string]string{}, b.src.asked[len(b.src.asked)-1])
	require.Equal(t, []string{"update db"}, b.writes())
	require.Equal(t, []byte("correct horse"), b.secret(t, "db").Data["password"])

	// Deleted by hand: created again.
	require.NoError(t, b.client.CoreV1().Secrets("ty-acme").Delete(context.Background(), "db", metav1.DeleteOptions{}))
	require.NoError(t, b.sync(t))
	require.Equal(t, []string{"create db"}, b.writes())

	delete(b.src.secrets, "db")
	require.NoError(t, b.sync(t))
	require.Equal(t, []string{"delete db"}, b.writes())

	require.NotContains(t, b.logs.String(), "hunter2")
	require.NotContains(t, b.logs.String(), "correct horse")
}

// Only copies are Trainyard's to change here: a Secret of the same name
// that is not one stays as it is (not_owned), and Secrets that are not
// copies are never deleted.
func TestCopySecretsLeavesOthersAlone(t *testing.T) {
	mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ty-acme"}, Data: map[string][]byte{"k": []byte("someone's")}}
	webhook := kube.RenderSecret("acme", "ty-acme", "trainyard-webhook-1", map[string]string{"secret": "s"})
	b := newCopyBundle(t, mine, webhook)
	b.src.put("db", "v1", map[string]string{"password": "hunter2"})
	err := b.sync(t)
	require.ErrorIs(t, err, errNotOwned)
	require.Equal(t, reasonNotOwned, errorReason(err))
	require.NotContains(t, err.Error(), "hunter2")
	require.Equal(t, []byte("someone's"), b.secret(t, "db").Data["k"])
	b.secret(t, "trainyard-webhook-1")

	delete(b.src.secrets, "db")
	require.NoError(t, b.sync(t))
	require.Empty(t, b.writes())
}

// A tenant the control plane does not (or no longer) host here: nothing
// is deleted on the strength of that answer; the tenant's next pass
// removes its namespace if it must.
func TestCopySecretsTenantNotHere(t *testing.T) {
	b := newCopyBundle(t)
	b.src.put("db", "v1", map[string]string{"password": "hunter2"})
	require.NoError(t, b.sync(t))
	b.src.notFound = true
	require.NoError(t, b.sync(t))
	require.Empty(t, b.writes())
	b.secret(t, "db")

	b.c.cfg.Secrets = failingSource{}
	err := b.sync(t)
	require.Equal(t, reasonStore, errorReason(err))
	require.Empty(t, b.writes(), "an unreachable control plane deletes nothing")
}

type failingSource struct{}

func (failingSource) TenantSecrets(context.Context, string, map[string]string) ([]tenant.SecretCopy, error) {
	return nil, errors.Join(store.ErrUnavailable, errors.New("control plane unreachable"))
}

// The API server's own cluster keeps no copies: no Secret call at all.
func TestCopySecretsOffAtHome(t *testing.T) {
	b := newCopyBundle(t)
	b.c.cfg.Secrets = nil
	require.NoError(t, b.sync(t))
	require.Empty(t, b.client.Actions())
}

// A remote agent cannot list a tenant's jobs: Trainyard's pods in the
// namespace stand for them before the namespace of a tenant no longer
// allowed there is removed.
func TestRemoteUnfinishedHereCountsPods(t *testing.T) {
	b := newCopyBundle(t)
	b.c.cfg.Remote, b.c.cfg.NamespacePrefix = true, "ty-"
	n, err := b.c.unfinishedHere(context.Background(), "acme")
	require.NoError(t, err)
	require.Zero(t, n)
	require.NoError(t, b.client.Tracker().Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user-pod", Namespace: "ty-acme"}}))
	n, err = b.c.unfinishedHere(context.Background(), "acme")
	require.NoError(t, err)
	require.Zero(t, n, "a pod Trainyard did not make is not a job of the tenant")
	require.NoError(t, b.client.Tracker().Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "j-worker-0", Namespace: "ty-acme",
		Labels: map[string]string{kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: "acme"}}}))
	n, err = b.c.unfinishedHere(context.Background(), "acme")
	require.NoError(t, err)
	require.Equal(t, 1, n)
}
