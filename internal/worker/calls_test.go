//go:build integration

package worker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/worker/workertest"
)

// The Kubernetes calls a job costs the worker, by verb, over its whole
// life, pinned: a job's cost must not grow with the finished pods and jobs
// its namespace holds (issue 13), so there is no LIST in it (a
// label-selected LIST makes the API server walk every pod of the
// namespace) and no GET. The job is 1 chief + 4 workers, like the bench's.
func TestKubeCallsPerJob(t *testing.T) {
	oneDay := 24 * time.Hour
	for _, tc := range []struct {
		name        string
		finishedTTL time.Duration // the worker's default
		jobTTL      *int32
		cancel      bool
		kept        bool // the job is let go with its objects
		want        map[string]int
	}{
		// No Service: the replicas' is the namespace's. The EndpointSlice
		// (the slice controller's) is created when a pod has an address,
		// updated as others come and go, and deleted when no replica runs.
		{name: "succeeds, pods kept, EndpointSlice deleted", kept: true,
			want: map[string]int{"create pods": 5, "create endpointslices": 1, "delete endpointslices": 1}},
		{name: "succeeds, removed after the worker's default TTL", finishedTTL: oneDay,
			want: map[string]int{"create pods": 5, "delete pods": 5, "create endpointslices": 1, "delete endpointslices": 1}},
		{name: "succeeds, removed at once by the job's own TTL", finishedTTL: oneDay, jobTTL: new(int32(0)),
			want: map[string]int{"create pods": 5, "delete pods": 5, "create endpointslices": 1, "delete endpointslices": 1}},
		{name: "cancelled while running", cancel: true,
			want: map[string]int{"create pods": 5, "delete pods": 5, "create endpointslices": 1, "delete endpointslices": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, func(c *Config) { c.FinishedTTL = tc.finishedTTL })
			b.leadSlices(t)
			b.tenant(t, "acme", tenant.Quota{})
			s := spec(replica(job.Chief, 1, job.RestartNever), replica(job.Worker, 4, job.RestartNever))
			s.RunPolicy.TTLSecondsAfterFinished = tc.jobTTL
			key := b.submit(t, "acme", "tj", s)
			b.own(t, key)
			// From here on every call on the clientset is the worker's:
			// the informers have listed already, and the test writes pod
			// statuses through the tracker, which records no call.
			from := len(b.kube.Actions())

			b.reconcile(t, key)
			b.waitCache(t, key, 5)
			pods := []string{"tj-chief-0", "tj-worker-0", "tj-worker-1", "tj-worker-2", "tj-worker-3"}
			for _, name := range pods {
				b.kubelet(t, name, corev1.PodRunning)
			}
			b.reconcile(t, key)
			// The slice controller lists them (after its batch: pods that
			// ran and ended within it would never be listed).
			require.Eventually(t, func() bool { return len(b.actions("create", "endpointslices")) == 1 }, 10*time.Second, 5*time.Millisecond,
				"the slice controller lists the running replicas")
			if tc.cancel {
				_, err := b.store.JobCancel(b.ctx, "acme", "tj")
				require.NoError(t, err)
			} else {
				for _, name := range pods {
					b.kubelet(t, name, corev1.PodSucceeded)
				}
			}
			b.reconcileUntilLetGo(t, key)
			if tc.finishedTTL > 0 && tc.jobTTL == nil {
				require.Equal(t, job.Succeeded, b.load(t, key).Job.Status.State)
				require.False(t, b.load(t, key).Job.Status.CleanedUp, "kept for the default TTL")
				require.True(t, b.load(t, key).Active, "parked until the TTL, not let go")
				_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET claim_after = now() WHERE uid = $1`, key.UID)
				require.NoError(t, err)
				b.clock.Advance(tc.finishedTTL)
				b.own(t, key)
				b.reconcileUntilLetGo(t, key)
			}
			wj := b.load(t, key)
			require.False(t, wj.Active, "let go")
			require.Equal(t, tc.kept, !wj.Job.Status.CleanedUp, "CleanedUp says whether objects are kept")

			require.Eventually(t, func() bool { return len(b.actions("delete", "endpointslices")) == 1 }, 10*time.Second, 5*time.Millisecond,
				"the slice controller deletes the slice once no replica runs")
			got := map[string]int{}
			for _, a := range b.kube.Actions()[from:] {
				r := a.GetResource().Resource
				if a.GetSubresource() != "" {
					r += "/" + a.GetSubresource()
				}
				got[a.GetVerb()+" "+r]++
			}
			// An update per replica's address coming or going, at most:
			// the slice controller writes as the addresses change (events
			// within endpoints.DefaultBatch make one write).
			updates := got["update endpointslices"]
			require.LessOrEqual(t, updates, 2*(len(pods)-1), "slice updates")
			delete(got, "update endpointslices")
			require.Equal(t, tc.want, got, "the worker's Kubernetes calls for one job")
			tc.want["update endpointslices"] = updates
			// The fake records a call as it starts and the metric counts it
			// once it returned: the slice controller's last call may be
			// between the two.
			for call, n := range tc.want {
				verb, resource, _ := strings.Cut(call, " ")
				var got uint64
				require.Eventually(t, func() bool {
					var m dto.Metric
					require.NoError(t, b.w.metrics.kubeSeconds.WithLabelValues(verb, resource).(prometheus.Histogram).Write(&m))
					got = m.GetHistogram().GetSampleCount()
					return got >= uint64(n)
				}, 10*time.Second, 5*time.Millisecond, "trainyard_worker_kube_request_seconds of %s", call)
				require.Equal(t, uint64(n), got, "trainyard_worker_kube_request_seconds of %s", call)
			}
			for verb, n := range map[string]int{"list": 0, "get": 0} {
				for _, res := range []string{"pods", "services"} {
					require.Equal(t, float64(n), testutil.ToFloat64(b.w.metrics.kubeRequests.WithLabelValues(verb, res)),
						"trainyard_worker_kube_requests_total{verb=%q,resource=%q}", verb, res)
				}
			}
		})
	}
}

// kubelet writes a pod's phase as the kubelet would, through the fake's
// tracker (no recorded call), and waits for the informer to show it. A pod
// that runs gets an address.
func (b *bundle) kubelet(t *testing.T, name string, phase corev1.PodPhase) {
	t.Helper()
	obj, err := b.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "ty-acme", name)
	require.NoError(t, err)
	pod := obj.(*corev1.Pod).DeepCopy()
	pod.Status.Phase = phase
	if phase == corev1.PodRunning && pod.Status.PodIP == "" {
		pod.Status.PodIP = fmt.Sprintf("10.0.0.%d", len(name)+int(name[len(name)-1]))
	}
	if phase == corev1.PodSucceeded {
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.ContainerName, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", FinishedAt: metav1.NewTime(b.clock.Now())},
		}}}
	}
	require.NoError(t, b.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, "ty-acme"))
	b.waitPod(t, "ty-acme", name, func(p *corev1.Pod) bool { return p.Status.Phase == phase })
}

// reconcileUntilLetGo runs passes, waiting for the caches to show each
// pass's deletions, until the worker lets the job go (done, or parked).
func (b *bundle) reconcileUntilLetGo(t *testing.T, key store.JobKey) {
	t.Helper()
	for range 10 {
		b.reconcile(t, key)
		if !b.w.own.Owns(key) {
			return
		}
		b.waitGone(t, key)
	}
	t.Fatalf("job %s still owned after 10 passes", key)
}

// waitGone waits until the caches show no object of the job that the API
// server (the fake's tracker) no longer has.
func (b *bundle) waitGone(t *testing.T, key store.JobKey) {
	t.Helper()
	require.Eventually(t, func() bool {
		for res, inf := range map[string]cache.SharedIndexInformer{"pods": b.w.pods, "services": b.w.services} {
			objs, err := inf.GetIndexer().ByIndex(indexJobUID, jobIndexKey("ty-acme", key.UID))
			if err != nil {
				return false
			}
			for _, o := range objs {
				m := o.(metav1.Object)
				if _, err := b.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource(res), m.GetNamespace(), m.GetName()); err != nil {
					return false
				}
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "the caches never caught up with the deletions of %s", key)
}

// The job's EndpointSlice lists its running replicas under their hostnames
// as they get addresses, is written only when that changes, and is gone
// once the job has finished (a finished pod's address is given back): the
// worker's passes and its slice controller side by side.
func TestEndpointSliceFollowsPods(t *testing.T) {
	b := setup(t)
	b.leadSlices(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Chief, 1, job.RestartNever), replica(job.Worker, 2, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 3)
	require.Empty(t, b.actions("create", "services"), "the replicas' Service is the namespace's, not the job's")

	hostnames := func() []string {
		es, err := b.kube.DiscoveryV1().EndpointSlices("ty-acme").Get(b.ctx, "tj", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		require.NoError(t, err)
		require.Empty(t, es.OwnerReferences, "deleted by the slice controller, not with a Service")
		require.Equal(t, job.ReplicaService, es.Labels[discoveryv1.LabelServiceName])
		hs := []string{}
		for _, ep := range es.Endpoints {
			hs = append(hs, *ep.Hostname)
		}
		return hs
	}
	waitHosts := func(want []string, msg string) {
		t.Helper()
		require.Eventually(t, func() bool { return slices.Equal(want, hostnames()) }, 10*time.Second, 5*time.Millisecond, msg)
	}
	b.reconcile(t, key)
	require.Nil(t, hostnames(), "no slice while no pod has an address")

	b.kubelet(t, "tj-chief-0", corev1.PodRunning)
	waitHosts([]string{"tj-chief-0"}, "the chief's address")
	b.kubelet(t, "tj-worker-0", corev1.PodRunning)
	b.kubelet(t, "tj-worker-1", corev1.PodRunning)
	b.reconcile(t, key)
	waitHosts([]string{"tj-chief-0", "tj-worker-0", "tj-worker-1"}, "every replica's address")
	require.Len(t, b.actions("create", "endpointslices"), 1)
	require.LessOrEqual(t, len(b.actions("update", "endpointslices")), 2, "a write per address at most")
	require.Zero(t, testutil.ToFloat64(b.w.metrics.kubeErrors.WithLabelValues("update", "endpointslices", "Conflict")))

	b.kubelet(t, "tj-chief-0", corev1.PodSucceeded)
	b.reconcileUntilLetGo(t, key)
	require.Equal(t, job.Succeeded, b.load(t, key).Job.Status.State)
	// No replica runs: the slice is deleted, instead of an update that
	// empties it, and not written again.
	waitHosts(nil, "the finished job's EndpointSlice is deleted")
	require.Len(t, b.actions("delete", "endpointslices"), 1)
	time.Sleep(100 * time.Millisecond)
	deleted := b.actionIndex("delete", "endpointslices")
	for i, a := range b.kube.Actions() {
		if i > deleted && a.GetResource().Resource == "endpointslices" && slices.Contains([]string{"create", "update", "patch", "delete"}, a.GetVerb()) {
			t.Errorf("action %d (%s) writes the slice after its delete", i, a.GetVerb())
		}
	}
}

// The informers list and watch through Config.Watch, and every call goes
// through Config.Kube: cmd/trainyard gives them separate connections, so
// that the answers to creates do not queue behind watch events.
func TestInformersUseTheWatchClient(t *testing.T) {
	watch := workertest.WithUIDs(fake.NewClientset())
	b := setup(t, func(c *Config) { c.Watch = watch })
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Chief, 1, job.RestartNever), replica(job.Worker, 1, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)

	verbs := func(c *fake.Clientset) map[string]int {
		got := map[string]int{}
		for _, a := range c.Actions() {
			got[a.GetVerb()+" "+a.GetResource().Resource]++
		}
		return got
	}
	k, w := verbs(b.kube), verbs(watch)
	for _, r := range []string{"pods", "services", "endpointslices"} {
		require.Equal(t, 1, w["list "+r], "the informers list %s through Watch", r)
		require.Equal(t, 1, w["watch "+r], "the informers watch %s through Watch", r)
		require.Zero(t, k["list "+r]+k["watch "+r], "nothing lists or watches %s through Kube", r)
	}
	require.Equal(t, 2, k["create pods"], "the pods are created through Kube")
	require.Zero(t, w["create pods"]+w["create endpointslices"], "nothing is created through Watch")
}

// Given the process's pod informer (Config.Pods), the worker lists and
// watches pods through it alone, sees its own pods there, and leaves the
// cluster's other pods, which the shared cache also holds, alone.
func TestPodsComeFromTheSharedInformer(t *testing.T) {
	shared := workertest.WithUIDs(fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "db-0", Namespace: "ty-acme", Labels: map[string]string{kube.LabelJobUID: "not-ours"}}}))
	pods := kube.PodInformers(shared)
	watch := workertest.WithUIDs(fake.NewClientset())
	b := setup(t, func(c *Config) { c.Watch, c.Pods = watch, pods })
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Chief, 1, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)

	for _, a := range b.kube.Actions() {
		if a.GetResource().Resource == "pods" {
			require.NotContains(t, []string{"list", "watch"}, a.GetVerb(), "pods are not listed or watched through Kube")
		}
	}
	// The created pod reaches the worker's index through the shared
	// informer (the fake's creates are in b.kube; copy it over).
	created, err := b.kube.CoreV1().Pods("ty-acme").List(b.ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, created.Items, 1)
	_, err = shared.CoreV1().Pods("ty-acme").Create(b.ctx, &created.Items[0], metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		objs, _ := b.w.pods.GetIndexer().ByIndex(indexJobUID, jobIndexKey("ty-acme", key.UID))
		return len(objs) == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.Len(t, b.w.pods.GetStore().List(), 2, "the shared cache holds every pod")

	// Another's pod under a name the worker awaits does not stand in for
	// the awaited create (the handlers skip pods that are not Trainyard's).
	awaited := createKey("pod", "ty-acme", "tj-chief-1")
	b.w.expect.expect(awaited, key.UID)
	_, err = shared.CoreV1().Pods("ty-acme").Create(b.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tj-chief-1", Namespace: "ty-acme"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(b.w.pods.GetStore().List()) == 3 }, 10*time.Second, 10*time.Millisecond)
	require.True(t, b.w.expect.pending(awaited), "a pod that is not Trainyard's fulfilled an expectation")

	n, err := b.w.sweep(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the sweep leaves pods that are not Trainyard's alone")
	for _, a := range watch.Actions() {
		require.NotEqual(t, "pods", a.GetResource().Resource, "pods are not listed or watched through Watch: %s", a.GetVerb())
	}
}

// A job dispatched before the Service of replicas was the namespace's has
// its own headless Service, and its pods' TF_CONFIG names their peers
// under it: a worker of this version keeps its slice naming that Service
// (not taking the names away from a running job), deletes the slice when
// the job ends, and the orphan sweep deletes the old Service once the job
// is let go with nothing else left.
func TestJobDispatchedWithItsOwnServiceKeepsItsNames(t *testing.T) {
	b := setup(t)
	b.leadSlices(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Chief, 1, job.RestartNever), replica(job.Worker, 1, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 2)
	// What the earlier version made beside the pods.
	legacy := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ty-acme", Labels: map[string]string{
			kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: "acme", kube.LabelJob: "tj", kube.LabelJobUID: key.UID,
		}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true},
	}
	legacy, err := b.kube.CoreV1().Services("ty-acme").Create(b.ctx, legacy, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := b.w.svcLister.Services("ty-acme").Get("tj"); return err == nil },
		10*time.Second, 5*time.Millisecond)

	b.kubelet(t, "tj-chief-0", corev1.PodRunning)
	b.kubelet(t, "tj-worker-0", corev1.PodRunning)
	b.reconcile(t, key)
	require.Eventually(t, func() bool {
		es, err := b.kube.DiscoveryV1().EndpointSlices("ty-acme").Get(b.ctx, "tj", metav1.GetOptions{})
		return err == nil && len(es.Endpoints) == 2 && es.Labels[discoveryv1.LabelServiceName] == "tj"
	}, 10*time.Second, 5*time.Millisecond, "the slice names the Service its pods were given")

	// Cancelled: nothing of it is kept, so it is let go cleaned up (a
	// job that keeps finished pods keeps the old Service as long).
	_, err = b.store.JobCancel(b.ctx, "acme", "tj")
	require.NoError(t, err)
	b.reconcileUntilLetGo(t, key)
	wj := b.load(t, key)
	require.Equal(t, job.Cancelled, wj.Job.Status.State)
	require.True(t, wj.Job.Status.CleanedUp)
	require.Eventually(t, func() bool { return len(b.actions("delete", "endpointslices")) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Empty(t, b.actions("delete", "services"), "the job's passes leave the old Service to the sweep")

	_, err = b.w.sweep(b.ctx)
	require.NoError(t, err)
	_, err = b.kube.CoreV1().Services("ty-acme").Get(b.ctx, legacy.Name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the sweep deletes the old Service of a job let go: %v", err)
}
