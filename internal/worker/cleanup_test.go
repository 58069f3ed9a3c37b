//go:build integration

package worker

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/worker/ownership"
	"github.com/trainyard/trainyard/internal/worker/workertest"
)

// blindWorker points b.w's API calls at a clientset its informers do not
// watch: what it creates exists for the API server, but the caches never
// show it — the moments between a create and its informer event, made
// permanent.
func blindWorker(b *bundle) *fake.Clientset {
	live := workertest.WithUIDs(fake.NewClientset())
	b.w.kube = live
	return live
}

// lapse makes every expectation of b.w run out, as when the informer
// events of its writes never came.
func lapse(b *bundle) {
	later := time.Now().Add(time.Hour)
	b.w.expect.mu.Lock()
	b.w.expect.now = func() time.Time { return later }
	b.w.expect.mu.Unlock()
}

func liveCount(t *testing.T, b *bundle, c *fake.Clientset) (pods, svcs int) {
	t.Helper()
	p, err := c.CoreV1().Pods("ty-acme").List(b.ctx, metav1.ListOptions{})
	require.NoError(t, err)
	s, err := c.CoreV1().Services("ty-acme").List(b.ctx, metav1.ListOptions{})
	require.NoError(t, err)
	return len(p.Items), len(s.Items)
}

// A job cancelled while its objects exist only for the API server (created,
// not yet shown by the informers) is not let go: first not while its
// creates are awaited, then, once those expectations lapsed, not before a
// live GET of each lapsed create finds it gone. The objects the caches
// never showed are deleted; no LIST is made.
func TestCancelDuringDispatchLeavesNothing(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	live := blindWorker(b)
	key := b.submit(t, "acme", "tj", spec(replica(job.Chief, 1, job.RestartNever), replica(job.Worker, 2, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)
	pods, svcs := liveCount(t, b, live)
	require.Equal(t, 3, pods)
	require.Zero(t, svcs, "no Service of its own: the replicas' is the namespace's")

	_, err := b.store.JobCancel(b.ctx, "acme", "tj")
	require.NoError(t, err)
	// The caches show nothing: Plan would let the job go at once.
	res := b.reconcile(t, key)
	require.Positive(t, res.after, "creates still awaited: looked at again")
	wj := b.load(t, key)
	require.True(t, wj.Active, "not let go")
	require.True(t, b.w.own.Owns(key))

	// The informer events never come; the expectations lapse.
	lapse(b)
	res = b.reconcile(t, key)
	require.Positive(t, res.after)
	wj = b.load(t, key)
	require.Equal(t, job.Cancelled, wj.Job.Status.State)
	require.True(t, wj.Active, "still not let go: the live GETs found objects")
	require.False(t, wj.Job.Status.CleanedUp)
	pods, svcs = liveCount(t, b, live)
	require.Zero(t, pods, "the pods the caches never showed are deleted")
	require.Zero(t, svcs)
	for _, a := range live.Actions() {
		if a.GetVerb() == "delete" {
			require.NotNil(t, a.(k8stesting.DeleteActionImpl).DeleteOptions.Preconditions, "deletes carry UID preconditions")
		}
	}

	// Nothing is left: now the job is let go.
	b.reconcile(t, key)
	wj = b.load(t, key)
	require.False(t, wj.Active)
	require.True(t, wj.Job.Status.CleanedUp)
	require.False(t, b.w.own.Owns(key))
	for _, res := range []string{"pods", "services"} {
		require.Zero(t, testutil.ToFloat64(b.w.metrics.kubeRequests.WithLabelValues("list", res)),
			"no LIST of %s: the lapsed creates are read by name", res)
		require.Equal(t, float64(map[string]int{"pods": 3, "services": 0}[res]*2),
			testutil.ToFloat64(b.w.metrics.kubeRequests.WithLabelValues("get", res)), "one GET per lapsed create and pass")
	}
	require.Empty(t, b.w.expect.lapsedCreates(key.UID), "found gone: forgotten")
}

// A deleted job is purged only once live GETs of its lapsed creates show
// nothing of it; a finished job whose policy keeps its pods keeps the ones
// the caches did not show either, and says so (CleanedUp false).
func TestFinishingChecksTheAPIServer(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	live := blindWorker(b)
	s := spec(replica(job.Worker, 1, job.RestartNever))
	s.RunPolicy.CleanPodPolicy = job.CleanNone
	key := b.submit(t, "acme", "tj", s)
	b.own(t, key)
	b.reconcile(t, key)
	lapse(b)

	// The deadline-like end: the job fails; CleanNone keeps the pod.
	wj := b.load(t, key)
	failed, events := job.Fail(wj.Job.Status, "Test", "ended by the test", b.clock.Now())
	p := &pass{key: key, wj: wj, loaded: wj.Job.Status.State, ns: "ty-acme", now: b.clock.Now()}
	ok, _, err := b.w.save(b.ctx, p, failed, events, false, 0)
	require.NoError(t, err)
	require.True(t, ok)
	b.reconcile(t, key)
	wj = b.load(t, key)
	require.False(t, wj.Active, "let go: the policy keeps its pod")
	require.False(t, wj.Job.Status.CleanedUp, "and it says so, from the live GET")
	pods, _ := liveCount(t, b, live)
	require.Equal(t, 1, pods)

	// Deleted: the pod goes before the row does.
	require.NoError(t, b.store.JobDelete(b.ctx, "acme", "tj"))
	b.own(t, key)
	res := b.reconcile(t, key)
	require.Positive(t, res.after)
	_, err = b.store.JobLoad(b.ctx, "acme", key.UID)
	require.NoError(t, err, "not purged while the pod exists")
	pods, svcs := liveCount(t, b, live)
	require.Zero(t, pods)
	require.Zero(t, svcs)
	b.reconcile(t, key)
	_, err = b.store.JobLoad(b.ctx, "acme", key.UID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// labelled is a Trainyard-labelled pod of job uid in ns.
func labelled(ns, name, tenantID, uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
		kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: tenantID, kube.LabelJobUID: uid,
		kube.LabelComponent: kube.ComponentReplica,
	}}}
}

// The orphan sweep deletes Trainyard objects whose job was purged or is
// finished and cleaned up, and nothing else: not the objects of a job
// another worker owns, of a job that keeps them by policy, in another
// namespace, of a tenant this installation does not know, or with a job
// uid Trainyard never makes.
func TestOrphanSweep(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})

	// cleaned: finished, let go, nothing left — then a late pod appears.
	cleaned := b.submit(t, "acme", "cleaned", spec(replica(job.Worker, 1, job.RestartNever)))
	// kept: finished, let go, its pod kept by CleanPodPolicy None.
	kept := b.submit(t, "acme", "kept", spec(replica(job.Worker, 1, job.RestartNever)))
	// theirs: owned by another worker.
	theirs := b.submit(t, "acme", "theirs", spec(replica(job.Worker, 1, job.RestartNever)))
	b.w.claim(b.ctx)
	for k, cleanedUp := range map[store.JobKey]bool{cleaned: true, kept: false} {
		wj := b.load(t, k)
		st := wj.Job.Status
		st.State, st.CleanedUp = job.Succeeded, cleanedUp
		_, err := b.store.JobSave(b.ctx, store.JobSaveParams{WorkerID: "w1", Tenant: "acme", UID: k.UID,
			Version: wj.Version, Status: st, Done: true})
		require.NoError(t, err)
		b.w.disown(k)
	}
	_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET worker_id = 'w2' WHERE uid = $1`, theirs.UID)
	require.NoError(t, err)
	b.w.disown(theirs)

	purged := "00000000-0000-0000-0000-0000000000aa"
	objs := map[string]*corev1.Pod{
		"late":         labelled("ty-acme", "cleaned-worker-0", "acme", cleaned.UID),
		"purged":       labelled("ty-acme", "gone-worker-0", "acme", purged),
		"kept":         labelled("ty-acme", "kept-worker-0", "acme", kept.UID),
		"theirs":       labelled("ty-acme", "theirs-worker-0", "acme", theirs.UID),
		"other ns":     labelled("elsewhere", "x-worker-0", "acme", purged),
		"other tenant": labelled("ty-stranger", "y-worker-0", "stranger", purged),
		"bad uid":      labelled("ty-acme", "z-worker-0", "acme", "not-a-uid"),
	}
	for _, pod := range objs {
		_, err := b.kube.CoreV1().Pods(pod.Namespace).Create(b.ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		b.waitPod(t, pod.Namespace, pod.Name, func(*corev1.Pod) bool { return true })
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ty-acme", Labels: objs["purged"].Labels}}
	_, err = b.kube.CoreV1().Services("ty-acme").Create(b.ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := b.w.svcLister.Services("ty-acme").Get("gone"); return err == nil },
		10*time.Second, 5*time.Millisecond)
	// The EndpointSlice a cleanup missed (the late job's, written after it
	// was let go), and the namespace's Service of replicas, which is no
	// job's.
	lateSlice := kube.RenderEndpointSlice("ty-acme", []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "cleaned-chief-0", Labels: map[string]string{
		kube.LabelTenant: "acme", kube.LabelJob: "cleaned", kube.LabelJobUID: cleaned.UID,
	}}}})
	_, err = b.kube.DiscoveryV1().EndpointSlices("ty-acme").Create(b.ctx, lateSlice, metav1.CreateOptions{})
	require.NoError(t, err)
	// A TensorBoard Service's slice, made by the controller manager with
	// the Service's labels: it goes with its Service, not by the sweep.
	tbSlice := lateSlice.DeepCopy()
	tbSlice.Name = "cleaned-tensorboard-x7k2p"
	tbSlice.Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
	_, err = b.kube.DiscoveryV1().EndpointSlices("ty-acme").Create(b.ctx, tbSlice, metav1.CreateOptions{})
	require.NoError(t, err)
	replicas := kube.RenderReplicaService("acme", "ty-acme")
	_, err = b.kube.CoreV1().Services("ty-acme").Create(b.ctx, replicas, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err1 := b.w.svcLister.Services("ty-acme").Get(replicas.Name)
		objs, _ := b.w.endpoints.GetIndexer().ByIndex(indexJobUID, jobIndexKey("ty-acme", cleaned.UID))
		return err1 == nil && len(objs) == 2
	}, 10*time.Second, 5*time.Millisecond)

	n, err := b.w.sweep(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	for what, pod := range objs {
		_, err := b.kube.CoreV1().Pods(pod.Namespace).Get(b.ctx, pod.Name, metav1.GetOptions{})
		if what == "late" || what == "purged" {
			require.Error(t, err, "%s: deleted", what)
		} else {
			require.NoError(t, err, "%s: kept", what)
		}
	}
	_, err = b.kube.CoreV1().Services("ty-acme").Get(b.ctx, "gone", metav1.GetOptions{})
	require.Error(t, err, "the purged job's Service is deleted")
	_, err = b.kube.DiscoveryV1().EndpointSlices("ty-acme").Get(b.ctx, lateSlice.Name, metav1.GetOptions{})
	require.Error(t, err, "the cleaned-up job's EndpointSlice is deleted")
	_, err = b.kube.CoreV1().Services("ty-acme").Get(b.ctx, replicas.Name, metav1.GetOptions{})
	require.NoError(t, err, "the namespace's Service of replicas is kept")
	_, err = b.kube.DiscoveryV1().EndpointSlices("ty-acme").Get(b.ctx, tbSlice.Name, metav1.GetOptions{})
	require.NoError(t, err, "the controller manager's slice is left to it")
	require.EqualValues(t, 2, testutil.ToFloat64(b.w.metrics.orphans.WithLabelValues("pods")))
	for _, a := range b.actions("delete", "pods") {
		require.NotNil(t, a.(k8stesting.DeleteActionImpl).DeleteOptions.Preconditions.UID)
	}
}

// A pod that carries a job's uid label in another namespace is not the
// job's: observe looks in the tenant's namespace only.
func TestObserveOnlyInTheTenantNamespace(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	impostor := labelled("ty-other", "tj-worker-0", "acme", key.UID)
	impostor.Labels[kube.LabelReplicaType] = "worker"
	impostor.Labels[kube.LabelReplicaIndex] = "0"
	impostor.Labels[kube.LabelAttempt] = "0"
	_, err := b.kube.CoreV1().Pods("ty-other").Create(b.ctx, impostor, metav1.CreateOptions{})
	require.NoError(t, err)
	b.waitPod(t, "ty-other", "tj-worker-0", func(*corev1.Pod) bool { return true })

	obs, _ := b.w.observe("ty-acme", key.UID)
	require.Empty(t, obs.Pods)
	b.own(t, key)
	b.reconcile(t, key)
	var created []string
	for _, a := range b.actions("create", "pods") {
		if a.GetNamespace() == "ty-acme" {
			created = append(created, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Name)
		}
	}
	require.Equal(t, []string{"tj-worker-0"}, created, "the job's own pod is created; the impostor is not taken for it")
}

// A job of a tenant that is not ACTIVE (offboarding: the job committed
// after the last cancel sweep) is cancelled, never dispatched.
func TestJobOfOffboardingTenantIsCancelled(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	_, err := b.store.TenantSetState(b.ctx, "acme", tenant.Offboarding)
	require.NoError(t, err)
	b.own(t, key)

	b.reconcile(t, key)
	wj := b.load(t, key)
	require.Equal(t, job.Cancelled, wj.Job.Status.State)
	require.False(t, wj.Active)
	require.Empty(t, b.writes(), "nothing was created")
}

// A worker that stops being certainly leased while it creates a big job's
// pods stops creating: no create starts without the lease.
func TestCreatesStopWhenTheLeaseEnds(t *testing.T) {
	b := setup(t, func(c *Config) { c.CreateParallelism = 1 })
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 20, job.RestartNever)))
	b.own(t, key)
	var creates atomic.Int32
	b.kube.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if creates.Add(1) == 3 {
			// The worker stalled: by now its lease estimate has run out.
			b.w.own.Add([]store.JobKey{key}, time.Now())
		}
		return false, nil, nil
	})

	_, err := b.w.reconcile(b.ctx, key)
	var re *reconcileError
	require.ErrorAs(t, err, &re)
	require.Equal(t, errReasonLease, re.reason)
	require.Equal(t, job.Starting, b.load(t, key).Job.Status.State, "saved before acting")
	require.EqualValues(t, 3, creates.Load(), "no create after the lease ended")

	// Renewed: the next pass creates the rest.
	b.w.own.Add([]store.JobKey{key}, time.Now().Add(time.Minute))
	b.reconcile(t, key)
	b.waitCache(t, key, 20)
}

// The act context ends when the lease estimate runs out, and renewals push
// that back.
func TestLeaseContext(t *testing.T) {
	w := &Worker{own: ownership.NewSet()}
	k := store.JobKey{Tenant: "a", UID: "u"}
	w.own.Add([]store.JobKey{k}, time.Now().Add(100*time.Millisecond))
	ctx, stop := w.leaseContext(context.Background(), k)
	defer stop()
	renewed := time.Now().Add(300 * time.Millisecond)
	w.own.Add([]store.JobKey{k}, renewed)
	select {
	case <-ctx.Done():
		require.False(t, time.Now().Before(renewed), "ended at the renewed expiry, not before")
		require.ErrorIs(t, context.Cause(ctx), errLeaseEnding)
	case <-time.After(5 * time.Second):
		t.Fatal("the context outlived the lease")
	}

	// stop ends it.
	w.own.Add([]store.JobKey{k}, time.Now().Add(time.Hour))
	ctx, stop = w.leaseContext(context.Background(), k)
	defer stop()
	require.NoError(t, ctx.Err())
	stop()
	require.ErrorIs(t, ctx.Err(), context.Canceled)
}

// When many replicas fail at once, a pass reads at most MaxLogTailsPerPass
// tails, CreateParallelism at a time, and a job keeps at most
// MaxLogTailBytesPerJob of them.
func TestLogTailsBounded(t *testing.T) {
	const tailBytes = 48 << 10 // 3 tails fill the job's budget
	b := setup(t, func(c *Config) { c.CreateParallelism = 2; c.LogTailBytes = tailBytes })
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 20, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 20)

	var inFlight, most, reads atomic.Int32
	release := make(chan struct{})
	b.kube.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "log" {
			return false, nil, nil
		}
		reads.Add(1)
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		inFlight.Add(-1)
		return true, &runtime.Unknown{Raw: []byte(strings.Repeat("x", tailBytes-1) + "\n")}, nil
	})
	go func() {
		for {
			select {
			case release <- struct{}{}:
			case <-b.ctx.Done():
				return
			}
		}
	}()
	for i := range 20 {
		b.setPhase(t, "ty-acme", fmt.Sprintf("tj-worker-%d", i), corev1.PodFailed, 1, "boom")
	}

	b.reconcile(t, key)
	require.LessOrEqual(t, most.Load(), int32(2), "CreateParallelism reads at a time")
	require.EqualValues(t, 3, reads.Load(), "reads stop where the job's budget ends")
	st := b.load(t, key).Job.Status
	total, withTail, ended := 0, 0, 0
	for _, r := range st.Replicas {
		if r.LastTermination == nil {
			continue
		}
		ended++
		total += len(r.LastTermination.LogTail)
		if r.LastTermination.LogTail != "" {
			withTail++
		}
	}
	require.Equal(t, 20, ended, "every end is recorded")
	require.Equal(t, 3, withTail)
	require.LessOrEqual(t, total, MaxLogTailBytesPerJob)
}

func TestLogTailsCappedPerPass(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 20, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 20)
	for i := range 20 {
		b.setPhase(t, "ty-acme", fmt.Sprintf("tj-worker-%d", i), corev1.PodFailed, 1, "boom")
	}
	b.reconcile(t, key)
	require.Len(t, b.actions("get", "pods/log"), MaxLogTailsPerPass)
}

func TestLastBytes(t *testing.T) {
	require.Equal(t, "abc", lastBytes("abc", 5))
	require.Equal(t, "bc", lastBytes("abc", 2))
	require.Equal(t, "é!", lastBytes("aé!", 3))
	require.Equal(t, "!", lastBytes("aé!", 2), "never half a rune")
	require.Empty(t, lastBytes("abc", 0))
}
