package endpoints

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/worker/workertest"
)

// rig is a Controller on client-go's fake clientset with started, synced
// informers; namespace ty-<tenant> is this installation's, any other not.
type rig struct {
	ctx    context.Context
	client *fake.Clientset
	c      *Controller
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	client := workertest.Kube()
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods().Informer()
	svcs := factory.Core().V1().Services().Informer()
	es := factory.Discovery().V1().EndpointSlices().Informer()
	for _, inf := range []cache.SharedIndexInformer{pods, svcs, es} {
		require.NoError(t, inf.AddIndexers(cache.Indexers{index: byJob}))
	}
	c, err := New(Config{
		Kube: client, Pods: pods, Services: svcs, Slices: es, Index: index,
		Mine: func(_ context.Context, ns, tenantID string) (bool, error) {
			return ns == "ty-"+tenantID, nil
		},
		Count:  func(string, string, time.Time, error) {},
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	t.Cleanup(factory.Shutdown) // after cancel: Shutdown waits for the informers
	t.Cleanup(cancel)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, svcs.HasSynced, es.HasSynced))
	go c.Run(ctx, 2)
	return &rig{ctx: ctx, client: client, c: c}
}

// lead makes the rig's controller the writer until the returned func.
func (r *rig) lead() (stop func()) {
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.c.Lead(ctx) }()
	return func() { cancel(); <-done }
}

// replica is a running replica pod of job tj (uid u1) of tenant acme.
func (r *rig) replica(t *testing.T, ns, name, ip string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: "acme", kube.LabelJob: "tj", kube.LabelJobUID: "u1",
			kube.LabelComponent: kube.ComponentReplica,
		}},
		Spec: corev1.PodSpec{Hostname: name, Containers: []corev1.Container{{
			Name: kube.ContainerName, Ports: []corev1.ContainerPort{{Name: kube.PortName, ContainerPort: 2222, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{{Name: "TF_CONFIG", Value: "{}"}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
	pod, err := r.client.CoreV1().Pods(ns).Create(r.ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	return pod
}

func (r *rig) setPod(t *testing.T, pod *corev1.Pod, edit func(*corev1.Pod)) {
	t.Helper()
	edit(pod)
	_, err := r.client.CoreV1().Pods(pod.Namespace).Update(r.ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// hosts are the hostnames the job's slice in ns lists; nil when there is
// no slice.
func (r *rig) hosts(ns string) []string {
	es, err := r.client.DiscoveryV1().EndpointSlices(ns).Get(r.ctx, "tj", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	out := []string{}
	for _, e := range es.Endpoints {
		out = append(out, *e.Hostname)
	}
	slices.Sort(out)
	return out
}

func (r *rig) eventually(t *testing.T, ns string, want []string, msg string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, want, r.hosts(ns))
	}, 10*time.Second, 5*time.Millisecond, msg)
}

// The slice follows the job's replica pods while the controller leads:
// created once one has an address, updated as addresses come and go,
// written again when someone deletes it, deleted once none runs.
func TestControllerKeepsTheSliceListingRunningReplicas(t *testing.T) {
	r := newRig(t)
	chief := r.replica(t, "ty-acme", "tj-chief-0", "10.0.0.1")
	worker := r.replica(t, "ty-acme", "tj-worker-0", "")
	time.Sleep(50 * time.Millisecond) // events delivered while not leading
	require.Nil(t, r.hosts("ty-acme"), "nothing is written while another process leads")

	stop := r.lead()
	defer func() { stop() }()
	r.eventually(t, "ty-acme", []string{"tj-chief-0"}, "leading: every job is synced at once")

	r.setPod(t, worker, func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.2" })
	r.eventually(t, "ty-acme", []string{"tj-chief-0", "tj-worker-0"}, "an address came")

	require.NoError(t, r.client.DiscoveryV1().EndpointSlices("ty-acme").Delete(r.ctx, "tj", metav1.DeleteOptions{}))
	r.eventually(t, "ty-acme", []string{"tj-chief-0", "tj-worker-0"}, "deleted by someone else: written again")

	r.setPod(t, worker, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })
	r.eventually(t, "ty-acme", []string{"tj-chief-0"}, "a finished replica's address may be reused: gone from the slice")

	r.setPod(t, chief, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
	r.eventually(t, "ty-acme", nil, "no replica runs: no slice")

	stop()
	stop = func() {}
	r.setPod(t, chief, func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning })
	time.Sleep(50 * time.Millisecond)
	require.Nil(t, r.hosts("ty-acme"), "no longer leading: nothing written")
}

// A job dispatched before the namespace had its Service of replicas keeps
// its own: the slice names it. TensorBoard is no replica; another
// installation's namespace is not touched.
func TestControllerNamesLegacyServiceSkipsTensorBoardAndOthers(t *testing.T) {
	r := newRig(t)
	defer r.lead()()
	legacy := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ty-acme", Labels: map[string]string{
		kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: "acme", kube.LabelJob: "tj", kube.LabelJobUID: "u1",
	}}}
	_, err := r.client.CoreV1().Services("ty-acme").Create(r.ctx, legacy, metav1.CreateOptions{})
	require.NoError(t, err)
	tb := r.replica(t, "ty-acme", "tj-tensorboard", "10.0.0.9")
	r.setPod(t, tb, func(p *corev1.Pod) { p.Labels[kube.LabelComponent] = kube.ComponentTensorBoard })
	r.replica(t, "ty-acme", "tj-chief-0", "10.0.0.1")
	r.replica(t, "other-acme", "tj-chief-0", "10.0.1.1")
	single := r.replica(t, "ty-acme", "one-chief-0", "10.0.0.3")
	r.setPod(t, single, func(p *corev1.Pod) {
		p.Labels[kube.LabelJob], p.Labels[kube.LabelJobUID], p.Spec.Containers[0].Env = "one", "u2", nil
	})

	r.eventually(t, "ty-acme", []string{"tj-chief-0"}, "the replica, not TensorBoard")
	es, err := r.client.DiscoveryV1().EndpointSlices("ty-acme").Get(r.ctx, "tj", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "tj", es.Labels[discoveryv1.LabelServiceName])
	require.Equal(t, kube.EndpointSliceManagedBy, es.Labels[discoveryv1.LabelManagedBy])
	require.Equal(t, int32(2222), *es.Ports[0].Port)

	time.Sleep(50 * time.Millisecond)
	require.Nil(t, r.hosts("other-acme"), "another installation's job")
	_, err = r.client.DiscoveryV1().EndpointSlices("ty-acme").Get(r.ctx, "one", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "a job of one pod (no TF_CONFIG) has no peers, no slice: %v", err)
}
