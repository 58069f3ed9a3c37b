//go:build integration

package tenantctl

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// fakeWorker has a job admitted (as the scheduler would) and claims it as
// a job worker would, so that it is "running" and only its worker can end
// it.
func fakeWorker(t *testing.T, st *store.Store, p store.JobCreateParams) store.WorkerJob {
	t.Helper()
	ctx := ctxT(t)
	j, _, err := st.JobCreate(ctx, p)
	require.NoError(t, err)
	key := store.JobKey{Tenant: j.Tenant, UID: j.UID}
	lease, ok, err := st.SchedulerLeaseAcquire(ctx, "test-scheduler", time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	res, err := st.SchedulerCommit(ctx, store.SchedulerCommitParams{Lease: lease, Admit: []store.JobKey{key}})
	require.NoError(t, err)
	require.Len(t, res.Admitted, 1)
	claimed, err := st.JobClaim(ctx, "fake-worker-"+j.Tenant, 100, time.Hour)
	require.NoError(t, err)
	require.Contains(t, store.KeysOf(claimed), key)
	w, err := st.JobLoad(ctx, j.Tenant, j.UID)
	require.NoError(t, err)
	return w
}

// snapshot is the resourceVersion of every Trainyard object of a namespace.
func snapshot(t *testing.T, b *bundle, ns string) map[string]string {
	t.Helper()
	ctx := ctxT(t)
	out := map[string]string{}
	n, err := b.admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	require.Nil(t, n.DeletionTimestamp)
	out["Namespace"] = n.ResourceVersion
	sel := metav1.ListOptions{LabelSelector: kube.ManagedSelector().String()}
	add := func(kind string, items []metav1.Object) {
		for _, o := range items {
			out[kind+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	sas, err := b.admin.CoreV1().ServiceAccounts(ns).List(ctx, sel)
	require.NoError(t, err)
	rqs, err := b.admin.CoreV1().ResourceQuotas(ns).List(ctx, sel)
	require.NoError(t, err)
	lrs, err := b.admin.CoreV1().LimitRanges(ns).List(ctx, sel)
	require.NoError(t, err)
	roles, err := b.admin.RbacV1().Roles(ns).List(ctx, sel)
	require.NoError(t, err)
	rbs, err := b.admin.RbacV1().RoleBindings(ns).List(ctx, sel)
	require.NoError(t, err)
	nps, err := b.admin.NetworkingV1().NetworkPolicies(ns).List(ctx, sel)
	require.NoError(t, err)
	pods, err := b.admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for i := range sas.Items {
		add("ServiceAccount", []metav1.Object{&sas.Items[i]})
	}
	for i := range rqs.Items {
		add("ResourceQuota", []metav1.Object{&rqs.Items[i]})
	}
	for i := range lrs.Items {
		add("LimitRange", []metav1.Object{&lrs.Items[i]})
	}
	for i := range roles.Items {
		add("Role", []metav1.Object{&roles.Items[i]})
	}
	for i := range rbs.Items {
		add("RoleBinding", []metav1.Object{&rbs.Items[i]})
	}
	for i := range nps.Items {
		add("NetworkPolicy", []metav1.Object{&nps.Items[i]})
	}
	for i := range pods.Items {
		require.Nil(t, pods.Items[i].DeletionTimestamp, "pod %s is being deleted", pods.Items[i].Name)
		out["Pod/"+pods.Items[i].Name] = "exists" // kwok updates pod status; existence is the point
	}
	return out
}

func putSecret(t *testing.T, b *bundle, id, name string) {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, kube.APIClient{Client: b.admin}.PutSecret(ctx, id, b.ns(id), name, map[string]string{"token": "s3cret"}))
	_, err := b.st.SecretPut(ctx, tenant.Secret{Tenant: id, Name: name, Keys: []string{"token"}})
	require.NoError(t, err)
}

func TestOffboardingDeletesOnlyTheTenantsNamespace(t *testing.T) {
	b := setup(t, setupOpts{controllers: 2})
	ctx := ctxT(t)
	leaving := b.createTenant(t, tenant.Tenant{ID: "leaving", Quota: tenant.Quota{GPU: 2}, PodReaderGroups: []string{"oidc:leaving"}})
	staying := b.createTenant(t, tenant.Tenant{ID: "staying", Quota: tenant.Quota{GPU: 2}, PodReaderGroups: []string{"oidc:staying"}})
	for _, id := range []string{leaving.ID, staying.ID} {
		eventually(t, 30*time.Second, func() error {
			return checkTenantObjects(b.admin, b.ns(id), id, []string{"oidc:" + id},
				corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("2")})
		})
		putSecret(t, b, id, "hf-token")
		// A running replica pod, as the job worker would have made it.
		_, err := b.admin.CoreV1().Pods(b.ns(id)).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "train-worker-0", Labels: map[string]string{kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: id},
				Annotations: map[string]string{"sim.trainyard.dev/run-forever": "true"}},
			Spec: corev1.PodSpec{ServiceAccountName: "trainyard-job", AutomountServiceAccountToken: new(false),
				Containers: []corev1.Container{{Name: "tensorflow", Image: "tensorflow/tensorflow:2.16.1"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	running := fakeWorker(t, b.st, testJob(leaving.ID, "train"))
	queued, _, err := b.st.JobCreate(ctx, testJob(leaving.ID, "waiting"))
	require.NoError(t, err)
	neighbour := fakeWorker(t, b.st, testJob(staying.ID, "train"))
	// A finished job still active for its TTL (its pods kept for an hour):
	// offboarding does not wait for it.
	finished := fakeWorker(t, b.st, testJob(leaving.ID, "done"))
	_, err = b.st.JobSave(ctx, store.JobSaveParams{WorkerID: "fake-worker-" + leaving.ID, Tenant: leaving.ID, UID: finished.Job.UID,
		Version: finished.Version, Status: job.Status{State: job.Succeeded, Reason: "JobSucceeded"}})
	require.NoError(t, err)
	before := snapshot(t, b, b.ns(staying.ID))

	// Offboard, as DeleteTenant does.
	_, err = b.st.TenantUpdate(ctx, leaving.ID, func(t *tenant.Tenant) error { t.State = tenant.Offboarding; return nil })
	require.NoError(t, err)

	// The queued job ends at once; the running one is asked to stop, and the
	// namespace stays while it runs.
	eventually(t, 30*time.Second, func() error {
		j, err := b.st.JobGet(ctx, leaving.ID, queued.Name)
		if err != nil {
			return err
		}
		if j.Status.State != job.Cancelled {
			return fmt.Errorf("queued job is %s", j.Status.State)
		}
		w, err := b.st.JobLoad(ctx, leaving.ID, running.Job.UID)
		if err != nil {
			return err
		}
		if !w.Job.Status.CancelRequested {
			return errors.New("running job has no cancel request")
		}
		return nil
	})
	b.reconcileNow(t, leaving.ID)
	b.reconcileNow(t, leaving.ID)
	n, err := getNS(t, b.admin, b.ns(leaving.ID))
	require.NoError(t, err, "the namespace must stay while a job is active")
	require.Nil(t, n.DeletionTimestamp, "the namespace must stay while a job is active")
	got, err := b.st.TenantGet(ctx, leaving.ID)
	require.NoError(t, err)
	require.Equal(t, tenant.Offboarding, got.State)

	// The job's worker stops it.
	w, err := b.st.JobLoad(ctx, leaving.ID, running.Job.UID)
	require.NoError(t, err)
	_, err = b.st.JobSave(ctx, store.JobSaveParams{WorkerID: "fake-worker-" + leaving.ID, Tenant: leaving.ID, UID: running.Job.UID,
		Version: w.Version, Status: job.Status{State: job.Cancelled, Reason: "Cancelled"}, Done: true})
	require.NoError(t, err)

	began := time.Now()
	eventually(t, 2*time.Minute, func() error {
		got, err := b.st.TenantGet(ctx, leaving.ID)
		if err != nil {
			return err
		}
		if got.State != tenant.Deleted {
			return fmt.Errorf("tenant is %s", got.State)
		}
		return nil
	})
	t.Logf("offboarded %s after its last job stopped", time.Since(began).Round(time.Millisecond))
	_, err = getNS(t, b.admin, b.ns(leaving.ID))
	require.True(t, apierrors.IsNotFound(err), "the namespace must be gone before the tenant is DELETED, got %v", err)
	secrets, err := b.st.SecretList(ctx, leaving.ID)
	require.NoError(t, err)
	require.Empty(t, secrets)

	// The neighbour: namespace, objects, pod, secret and job untouched.
	require.Equal(t, before, snapshot(t, b, b.ns(staying.ID)))
	_, err = b.admin.CoreV1().Secrets(b.ns(staying.ID)).Get(ctx, "hf-token", metav1.GetOptions{})
	require.NoError(t, err)
	nw, err := b.st.JobLoad(ctx, staying.ID, neighbour.Job.UID)
	require.NoError(t, err)
	require.True(t, nw.Active)
	require.False(t, nw.Job.Status.CancelRequested)
	st, err := b.st.TenantGet(ctx, staying.ID)
	require.NoError(t, err)
	require.Equal(t, tenant.Active, st.State)
	var completed float64
	for _, c := range b.ctrls {
		completed += testutil.ToFloat64(c.metrics.offboards)
	}
	require.Equal(t, 1.0, completed, "exactly one of the two controllers marks the tenant DELETED")

	// A worker that read the tenant as ACTIVE just before may re-create the
	// namespace; for a DELETED tenant it is removed again.
	_, err = b.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: b.ns(leaving.ID), Labels: map[string]string{kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: leaving.ID}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, 2*time.Minute, func() error {
		n, err := getNS(t, b.admin, b.ns(leaving.ID))
		if apierrors.IsNotFound(err) || (err == nil && n.DeletionTimestamp != nil) {
			return nil
		}
		return fmt.Errorf("namespace of the deleted tenant still there (err %v)", err)
	})
}

// A namespace that has the tenant's name but not Trainyard's labels for that
// tenant is never adopted, changed or deleted; nor is any namespace other
// than <prefix><id>.
func TestForeignNamespacesAreNeverTouched(t *testing.T) {
	b := setup(t, setupOpts{})
	ctx := ctxT(t)
	foreign := map[string]map[string]string{
		"unlabelled":   {"team": "someone-else"},
		"other-tenant": {kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: "someone-else"},
	}
	for id, labels := range foreign {
		_, err := b.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: b.ns(id), Labels: labels}}, metav1.CreateOptions{})
		require.NoError(t, err)
		b.createTenant(t, tenant.Tenant{ID: id, Quota: tenant.Quota{GPU: 1}})
	}
	// A tenant row naming a namespace outside the prefix (a worker and an
	// API server configured with different prefixes).
	_, err := b.st.TenantCreate(ctx, tenant.Tenant{ID: "elsewhere", Namespace: "kube-system"})
	require.NoError(t, err)
	ksBefore, err := getNS(t, b.admin, "kube-system")
	require.NoError(t, err)

	errorsOf := func(reason string) float64 {
		return testutil.ToFloat64(b.ctrls[0].metrics.errors.WithLabelValues(reason))
	}
	eventually(t, 30*time.Second, func() error {
		if errorsOf(reasonNotOwned) < 2 || errorsOf(reasonMisconfig) < 1 {
			return fmt.Errorf("not_owned %v, misconfigured %v", errorsOf(reasonNotOwned), errorsOf(reasonMisconfig))
		}
		return nil
	})

	// Offboarding them deletes nothing either.
	for _, id := range []string{"unlabelled", "other-tenant", "elsewhere"} {
		_, err := b.st.TenantUpdate(ctx, id, func(t *tenant.Tenant) error { t.State = tenant.Offboarding; return nil })
		require.NoError(t, err)
	}
	for _, id := range []string{"unlabelled", "other-tenant", "elsewhere"} {
		b.reconcileNow(t, id)
		b.reconcileNow(t, id)
	}
	for id, labels := range foreign {
		n, err := getNS(t, b.admin, b.ns(id))
		require.NoError(t, err)
		require.Nil(t, n.DeletionTimestamp)
		delete(n.Labels, "kubernetes.io/metadata.name")
		require.Equal(t, labels, n.Labels, "labels of foreign namespace %s changed", n.Name)
		for _, list := range []func() (int, error){
			func() (int, error) {
				l, err := b.admin.CoreV1().ResourceQuotas(n.Name).List(ctx, metav1.ListOptions{})
				return len(l.Items), err
			},
			func() (int, error) {
				l, err := b.admin.CoreV1().LimitRanges(n.Name).List(ctx, metav1.ListOptions{})
				return len(l.Items), err
			},
			func() (int, error) {
				l, err := b.admin.NetworkingV1().NetworkPolicies(n.Name).List(ctx, metav1.ListOptions{})
				return len(l.Items), err
			},
		} {
			count, err := list()
			require.NoError(t, err)
			require.Zero(t, count, "an object was created in foreign namespace %s", n.Name)
		}
		got, err := b.st.TenantGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, tenant.Offboarding, got.State, "offboarding must not finish while a foreign namespace holds the name")
	}
	ks, err := getNS(t, b.admin, "kube-system")
	require.NoError(t, err)
	require.Equal(t, ksBefore.ResourceVersion, ks.ResourceVersion)
	require.Nil(t, ks.DeletionTimestamp)
}

// A cluster's reconciler (Config.Cluster, "default" here) provisions only
// the tenants allowed there: one allowed elsewhere gets no namespace; one
// whose list loses this cluster has its namespace deleted, and only its
// own; one whose list gains it gets one.
func TestTenantsOnlyInTheirAllowedClusters(t *testing.T) {
	b := setup(t, setupOpts{})
	ctx := context.Background()
	b.createTenant(t, tenant.Tenant{ID: "here"})
	b.createTenant(t, tenant.Tenant{ID: "away", Clusters: []string{"eu"}})
	exists := func(id string) bool {
		ns, err := b.admin.CoreV1().Namespaces().Get(ctx, b.ns(id), metav1.GetOptions{})
		return err == nil && ns.DeletionTimestamp == nil
	}
	require.Eventually(t, func() bool { return exists("here") }, 30*time.Second, 20*time.Millisecond)
	b.reconcileNow(t, "away")
	require.False(t, exists("away"), "not allowed here: no namespace")

	allow := func(id string, clusters ...string) {
		_, err := b.st.TenantUpdate(ctx, id, func(t *tenant.Tenant) error { t.Clusters = clusters; return nil })
		require.NoError(t, err)
	}
	allow("here", "eu")
	require.Eventually(t, func() bool { return !exists("here") }, 30*time.Second, 20*time.Millisecond, "taken off: its namespace goes")
	allow("away", "eu", "default")
	require.Eventually(t, func() bool { return exists("away") }, 30*time.Second, 20*time.Millisecond, "allowed now: it gets one")
	got, err := b.st.TenantGet(ctx, "here")
	require.NoError(t, err)
	require.Equal(t, tenant.Active, got.State, "the tenant itself is untouched")
}
