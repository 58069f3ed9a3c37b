package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/worker/workertest"
)

// The reconciler's table tests: a Worker on workertest's in-memory store and
// client-go's fake clientset, its informers started, passes run by hand.
// No Postgres, no cluster (the tests with build tag integration cover the
// Postgres store; integration/e2e the real cluster).

// fixture is one worker on an in-memory store and a fake clientset.
type fixture struct {
	ctx   context.Context
	st    *workertest.Store
	kube  *fake.Clientset
	w     *Worker
	clock *clock
}

const testNS = "ty-acme"

func newFixture(t *testing.T, tenantState tenant.State) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	f := &fixture{ctx: ctx, st: workertest.New(), kube: workertest.Kube(),
		clock: &clock{t: time.Now().UTC().Truncate(time.Second)}}
	f.st.Now = f.clock.Now
	f.st.AddTenant(tenant.Tenant{ID: "acme", Namespace: testNS, State: tenantState})
	w, err := New(Config{
		ID: "w1", Store: f.st, Kube: f.kube, LeaseTTL: time.Minute, Now: f.clock.Now,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, err)
	stop := make(chan struct{})
	w.factory.Start(stop)
	w.podFactory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		w.factory.Shutdown()
		w.podFactory.Shutdown()
		w.loop.ShutDown()
	})
	require.True(t, cache.WaitForCacheSync(ctx.Done(), w.pods.HasSynced, w.services.HasSynced, w.endpoints.HasSynced))
	w.synced.Store(true)
	f.w = w
	return f
}

// submit stores an admitted job and has the worker claim it.
func (f *fixture) submit(t *testing.T, s job.Spec) store.JobKey {
	t.Helper()
	key := f.st.AddJob(job.Job{Tenant: "acme", Name: "tj", Spec: s, Creator: "alice"}, true)
	f.w.claim(f.ctx)
	require.True(t, f.w.own.Owns(key), "claimed")
	return key
}

// pass runs one reconcile of key.
func (f *fixture) pass(t *testing.T, key store.JobKey) result {
	t.Helper()
	res, err := f.w.reconcile(f.ctx, key)
	require.NoError(t, err)
	return res
}

// settle runs passes, each once the caches show the last one's writes,
// until the worker lets the job go or a pass changes nothing.
func (f *fixture) settle(t *testing.T, key store.JobKey) {
	t.Helper()
	for range 20 {
		f.waitCaches(t)
		writes, calls := len(f.writes()), f.st.Calls()
		res := f.pass(t, key)
		after := f.st.Calls()
		if !f.w.own.Owns(key) || (!res.requeue && len(f.writes()) == writes &&
			after["JobSave"] == calls["JobSave"] && after["JobPark"] == calls["JobPark"]) {
			f.waitCaches(t)
			return
		}
	}
	t.Fatalf("job %s: no pass changed nothing in 20", key)
}

var (
	podsGVR   = corev1.SchemeGroupVersion.WithResource("pods")
	svcsGVR   = corev1.SchemeGroupVersion.WithResource("services")
	slicesGVR = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
)

// waitCaches waits until the informers show what the fake API server holds
// (by name and resource version) and no write of the worker awaits its
// informer event. (The fake API server keeps no resource versions of its
// own: a write of a pod's status is waited for by kubelet.)
func (f *fixture) waitCaches(t *testing.T) {
	t.Helper()
	type source struct {
		gvr schema.GroupVersionResource
		gvk schema.GroupVersionKind
		inf cache.SharedIndexInformer
	}
	sources := []source{
		{podsGVR, corev1.SchemeGroupVersion.WithKind("Pod"), f.w.pods},
		{svcsGVR, corev1.SchemeGroupVersion.WithKind("Service"), f.w.services},
		{slicesGVR, discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), f.w.endpoints},
	}
	require.Eventually(t, func() bool {
		for _, s := range sources {
			list, err := f.kube.Tracker().List(s.gvr, s.gvk, "")
			if err != nil {
				return false
			}
			items, err := metaItems(list)
			if err != nil {
				return false
			}
			want := map[string]string{}
			for _, m := range items {
				want[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
			}
			cached := s.inf.GetStore().List()
			if len(cached) != len(want) {
				return false
			}
			for _, o := range cached {
				m := o.(metav1.Object)
				if rv, ok := want[m.GetNamespace()+"/"+m.GetName()]; !ok || rv != m.GetResourceVersion() {
					return false
				}
			}
		}
		f.w.expect.mu.Lock()
		defer f.w.expect.mu.Unlock()
		return len(f.w.expect.m) == 0
	}, 10*time.Second, time.Millisecond, "the caches never caught up with the fake API server")
}

func metaItems(list any) ([]metav1.Object, error) {
	var out []metav1.Object
	switch l := list.(type) {
	case *corev1.PodList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ServiceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *discoveryv1.EndpointSliceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("unexpected list %T", list)
	}
	return out, nil
}

// writes are the fake clientset's recorded creates, updates and deletes.
func (f *fixture) writes() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.kube.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			out = append(out, a)
		}
	}
	return out
}

// pods are the job's pods the fake API server holds, by name.
func (f *fixture) pods(t *testing.T) map[string]*corev1.Pod {
	t.Helper()
	list, err := f.kube.Tracker().List(podsGVR, corev1.SchemeGroupVersion.WithKind("Pod"), testNS)
	require.NoError(t, err)
	out := map[string]*corev1.Pod{}
	for _, p := range list.(*corev1.PodList).Items {
		out[p.Name] = &p
	}
	return out
}

// kubelet sets a pod's phase as the kubelet would (an address once it
// runs, a terminated container once it ended) and waits for the cache.
func (f *fixture) kubelet(t *testing.T, name string, phase corev1.PodPhase, exitCode int32) {
	t.Helper()
	obj, err := f.kube.Tracker().Get(podsGVR, testNS, name)
	require.NoError(t, err)
	pod := obj.(*corev1.Pod).DeepCopy()
	pod.Status.Phase = phase
	pod.Spec.NodeName = "node-1"
	switch phase {
	case corev1.PodRunning:
		pod.Status.PodIP = fmt.Sprintf("10.0.0.%d", len(f.pods(t))+int(name[len(name)-1]))
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.ContainerName, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(f.clock.Now())}}}}
	case corev1.PodSucceeded, corev1.PodFailed:
		reason := "Completed"
		if exitCode != 0 {
			reason = "Error"
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.ContainerName, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: reason, FinishedAt: metav1.NewTime(f.clock.Now())},
		}}}
	}
	require.NoError(t, f.kube.Tracker().Update(podsGVR, pod, testNS))
	// The fake keeps no resource versions: wait for the phase itself.
	require.Eventually(t, func() bool {
		cached, err := f.w.podLister.Pods(testNS).Get(name)
		return err == nil && cached.Status.Phase == phase
	}, 10*time.Second, time.Millisecond, "the cache never showed pod %s %s", name, phase)
	f.waitCaches(t)
}

// step is something that happens to a dispatched job, after which the
// worker's passes run until it settles.
type step struct {
	name string
	do   func(t *testing.T, f *fixture, key store.JobKey)
}

func podPhase(name string, phase corev1.PodPhase, exitCode int32) step {
	return step{fmt.Sprintf("%s %s (exit %d)", name, phase, exitCode), func(t *testing.T, f *fixture, _ store.JobKey) {
		f.kubelet(t, name, phase, exitCode)
	}}
}

func allRunning() step {
	return step{"every pod running", func(t *testing.T, f *fixture, _ store.JobKey) {
		for name := range f.pods(t) {
			f.kubelet(t, name, corev1.PodRunning, 0)
		}
	}}
}

func advance(d time.Duration) step {
	return step{"clock +" + d.String(), func(_ *testing.T, f *fixture, _ store.JobKey) { f.clock.Advance(d) }}
}

func withPolicy(s job.Spec, edit func(*job.RunPolicy)) job.Spec {
	edit(&s.RunPolicy)
	return s
}

func TestReconcile(t *testing.T) {
	oneWorker := func(rp job.RestartPolicy) job.Spec { return spec(replica(job.Worker, 1, rp)) }
	distributed := spec(replica(job.Chief, 1, job.RestartNever), replica(job.Worker, 2, job.RestartOnFailure))

	cases := []struct {
		name        string
		spec        job.Spec
		tenantState tenant.State // ACTIVE when empty
		steps       []step
		state       job.State // wanted at the end
		reason      string
		pods        []string // left in the API server, by name
		owned       bool     // still owned by the worker at the end
		then        func(t *testing.T, f *fixture, key store.JobKey)
	}{{
		name:  "new job: its pods, with TF_CONFIG, in the tenant's namespace",
		spec:  distributed,
		state: job.Starting, pods: []string{"tj-chief-0", "tj-worker-0", "tj-worker-1"}, owned: true,
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			for _, pod := range f.pods(t) {
				require.Equal(t, key.UID, pod.Labels[kube.LabelJobUID])
				require.Equal(t, "0", pod.Labels[kube.LabelAttempt])
				env := pod.Spec.Containers[0].Env[0]
				require.Equal(t, "TF_CONFIG", env.Name)
				var tf struct {
					Cluster map[string][]string `json:"cluster"`
					Task    struct {
						Type  string `json:"type"`
						Index int    `json:"index"`
					} `json:"task"`
				}
				require.NoError(t, json.Unmarshal([]byte(env.Value), &tf))
				require.Len(t, tf.Cluster["chief"], 1)
				require.Len(t, tf.Cluster["worker"], 2)
				require.Equal(t, pod.Labels[kube.LabelReplicaType], tf.Task.Type)
			}
			services, err := f.kube.Tracker().List(svcsGVR, corev1.SchemeGroupVersion.WithKind("Service"), testNS)
			require.NoError(t, err)
			require.Empty(t, services.(*corev1.ServiceList).Items, "the replicas' Service is the namespace's")
		},
	}, {
		name:  "pods running: RUNNING (the EndpointSlice is the slice controller's, not the pass's)",
		spec:  distributed,
		steps: []step{allRunning()},
		state: job.Running, pods: []string{"tj-chief-0", "tj-worker-0", "tj-worker-1"}, owned: true,
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			list, err := f.kube.Tracker().List(slicesGVR, discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), testNS)
			require.NoError(t, err)
			require.Empty(t, list.(*discoveryv1.EndpointSliceList).Items)
		},
	}, {
		name:  "pod failed within the backoff limit: restarted as the next attempt",
		spec:  oneWorker(job.RestartOnFailure),
		steps: []step{allRunning(), podPhase("tj-worker-0", corev1.PodFailed, 1)},
		pods:  []string{"tj-worker-0"}, owned: true,
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			require.Equal(t, "1", f.pods(t)["tj-worker-0"].Labels[kube.LabelAttempt], "the next attempt")
			wj, _ := f.st.Job(key)
			require.Equal(t, int32(1), wj.Job.Status.Restarts)
			require.False(t, wj.Job.Status.State.Final())
			require.NotEmpty(t, f.st.Events(key))
		},
	}, {
		name: "backoff limit exceeded: FAILED",
		spec: withPolicy(oneWorker(job.RestartOnFailure), func(rp *job.RunPolicy) { rp.BackoffLimit = 1 }),
		steps: []step{allRunning(), podPhase("tj-worker-0", corev1.PodFailed, 1),
			allRunning(), podPhase("tj-worker-0", corev1.PodFailed, 1)},
		state: job.Failed, reason: job.ReasonBackoffLimitExceeded, pods: []string{"tj-worker-0"},
	}, {
		name:  "replica failed with restart policy Never: FAILED",
		spec:  oneWorker(job.RestartNever),
		steps: []step{allRunning(), podPhase("tj-worker-0", corev1.PodFailed, 1)},
		state: job.Failed, reason: job.ReasonReplicaFailed, pods: []string{"tj-worker-0"},
	}, {
		name: "deadline passed: FAILED, running pods deleted",
		spec: withPolicy(oneWorker(job.RestartNever), func(rp *job.RunPolicy) {
			rp.ActiveDeadlineSeconds = new(int64(30))
		}),
		steps: []step{allRunning(), advance(31 * time.Second)},
		state: job.Failed, reason: job.ReasonDeadlineExceeded,
	}, {
		name: "cancelled while running: CANCELLED, everything deleted, let go cleaned up",
		spec: distributed,
		steps: []step{allRunning(), {"cancel", func(_ *testing.T, f *fixture, key store.JobKey) {
			f.st.Cancel(key)
		}}},
		state: job.Cancelled,
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			wj, _ := f.st.Job(key)
			require.False(t, wj.Active)
			require.True(t, wj.Job.Status.CleanedUp)
			list, err := f.kube.Tracker().List(slicesGVR, discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), testNS)
			require.NoError(t, err)
			require.Empty(t, list.(*discoveryv1.EndpointSliceList).Items, "the slice goes with the job")
		},
	}, {
		name:  "chief succeeded: SUCCEEDED, running workers deleted, finished pods kept",
		spec:  distributed,
		steps: []step{allRunning(), podPhase("tj-chief-0", corev1.PodSucceeded, 0)},
		state: job.Succeeded, reason: job.ReasonSucceeded, pods: []string{"tj-chief-0"},
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			wj, _ := f.st.Job(key)
			require.False(t, wj.Active, "nothing left to do: let go")
		},
	}, {
		name:  "succeeded with CleanPodPolicy All: nothing left",
		spec:  withPolicy(oneWorker(job.RestartNever), func(rp *job.RunPolicy) { rp.CleanPodPolicy = job.CleanAll }),
		steps: []step{allRunning(), podPhase("tj-worker-0", corev1.PodSucceeded, 0)},
		state: job.Succeeded,
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			wj, _ := f.st.Job(key)
			require.True(t, wj.Job.Status.CleanedUp)
		},
	}, {
		name: "succeeded with a TTL: parked until it, pods kept",
		spec: withPolicy(oneWorker(job.RestartNever), func(rp *job.RunPolicy) {
			rp.TTLSecondsAfterFinished = new(int32(3600))
		}),
		steps: []step{allRunning(), podPhase("tj-worker-0", corev1.PodSucceeded, 0)},
		state: job.Succeeded, pods: []string{"tj-worker-0"},
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			wj, _ := f.st.Job(key)
			require.True(t, wj.Active, "parked, not done")
			require.Empty(t, wj.WorkerID)
			require.Zero(t, f.st.Calls()["JobPark"], "the save that ends the job parks it")
		},
	}, {
		name: "deleted: objects deleted, then the row purged",
		spec: oneWorker(job.RestartNever),
		steps: []step{allRunning(), {"delete", func(_ *testing.T, f *fixture, key store.JobKey) {
			f.st.Delete(key)
		}}},
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			_, ok := f.st.Job(key)
			require.False(t, ok, "purged")
		},
	}, {
		name: "preempted: pods deleted, back in the queue, not owned",
		spec: oneWorker(job.RestartNever),
		steps: []step{allRunning(), {"preempt", func(_ *testing.T, f *fixture, key store.JobKey) {
			f.st.Preempt(key, "00000000-0000-0000-0000-000000000009", "for a job of higher priority")
		}}},
		state: job.Queued,
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			wj, _ := f.st.Job(key)
			require.False(t, wj.Admitted)
			require.Equal(t, int32(1), wj.Job.Status.Requeues)
		},
	}, {
		name: "suspended: pods deleted with their grace period, SUSPENDED, unadmitted, no restart counted",
		spec: func() job.Spec {
			s := oneWorker(job.RestartOnFailure)
			s.TerminationGracePeriodSeconds = new(int64(45))
			return s
		}(),
		steps: []step{allRunning(), {"suspend", func(t *testing.T, f *fixture, key store.JobKey) {
			require.EqualValues(t, 45, *f.pods(t)["tj-worker-0"].Spec.TerminationGracePeriodSeconds)
			f.kube.ClearActions()
			f.st.Suspend(key)
		}}},
		state: job.Suspended, reason: job.ReasonSuspended,
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			var deletes int
			for _, a := range f.writes() {
				if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource() == podsGVR {
					deletes++
					require.Nil(t, d.GetDeleteOptions().GracePeriodSeconds, "the pod's own grace period (45s) applies")
				}
			}
			require.Equal(t, 1, deletes)
			wj, _ := f.st.Job(key)
			require.False(t, wj.Admitted, "its quota is released")
			require.Empty(t, wj.WorkerID)
			require.Zero(t, wj.Job.Status.Restarts)
			require.Zero(t, wj.Job.Status.Requeues)
			require.False(t, f.w.own.Owns(key))
		},
	}, {
		name: "resumed: back in the queue, restarts unchanged; admitted again, its pods come back",
		spec: oneWorker(job.RestartOnFailure),
		steps: []step{allRunning(), podPhase("tj-worker-0", corev1.PodFailed, 1), allRunning(),
			{"suspend", func(_ *testing.T, f *fixture, key store.JobKey) { f.st.Suspend(key) }},
			{"resume and admit", func(t *testing.T, f *fixture, key store.JobKey) {
				wj, _ := f.st.Job(key)
				require.Equal(t, job.Suspended, wj.Job.Status.State)
				f.st.Resume(key)
				wj, _ = f.st.Job(key)
				require.Equal(t, job.Queued, wj.Job.Status.State)
				require.False(t, wj.Admitted)
				require.NoError(t, f.st.Admit(key))
				f.w.claim(f.ctx)
				require.True(t, f.w.own.Owns(key), "claimed again once admitted")
			}}},
		state: job.Starting, pods: []string{"tj-worker-0"}, owned: true,
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			wj, _ := f.st.Job(key)
			require.Equal(t, int32(1), wj.Job.Status.Restarts, "the restart before the suspension, no more")
		},
	}, {
		name:        "tenant offboarding: the job is cancelled, never dispatched",
		spec:        oneWorker(job.RestartNever),
		tenantState: tenant.Offboarding,
		state:       job.Cancelled,
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			require.Empty(t, f.writes(), "nothing created")
		},
	}, {
		name: "lost fence (lease ran out): the save fails, nothing is written to Kubernetes",
		spec: oneWorker(job.RestartOnFailure),
		steps: []step{allRunning(), {"lease runs out, then the pod fails", func(t *testing.T, f *fixture, key store.JobKey) {
			f.st.ExpireLease("w1")
			f.kubelet(t, "tj-worker-0", corev1.PodFailed, 1)
			f.kube.ClearActions()
		}}},
		state: job.Running, pods: []string{"tj-worker-0"},
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			require.Empty(t, f.writes(), "no delete, no restart")
			require.Equal(t, "0", f.pods(t)["tj-worker-0"].Labels[kube.LabelAttempt])
		},
	}, {
		name: "taken over by another worker: dropped, nothing written",
		spec: oneWorker(job.RestartOnFailure),
		steps: []step{allRunning(), {"taken over, then the pod fails", func(t *testing.T, f *fixture, key store.JobKey) {
			f.st.TakeOver(key, "w2", time.Minute)
			f.kubelet(t, "tj-worker-0", corev1.PodFailed, 1)
			f.kube.ClearActions()
		}}},
		state: job.Running, pods: []string{"tj-worker-0"},
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			require.Empty(t, f.writes())
			wj, _ := f.st.Job(key)
			require.Equal(t, "w2", wj.WorkerID)
		},
	}, {
		name: "a cancel between the load and the save: the save conflicts, the next pass cancels",
		spec: oneWorker(job.RestartOnFailure),
		steps: []step{allRunning(), {"the pod fails, and a cancel lands after the load", func(t *testing.T, f *fixture, key store.JobKey) {
			f.st.AfterLoad = func(k store.JobKey) {
				f.st.AfterLoad = nil
				f.st.Cancel(k)
			}
			f.kubelet(t, "tj-worker-0", corev1.PodFailed, 1)
		}}},
		state: job.Cancelled,
		then: func(t *testing.T, f *fixture, key store.JobKey) {
			require.Positive(t, f.st.Calls()["JobLoad"], "the pass after the conflict reads the job again")
			for _, a := range f.writes() {
				require.False(t, a.GetVerb() == "create" && a.GetResource().Resource == "pods" &&
					a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Labels[kube.LabelAttempt] == "1",
					"no restart after the cancel")
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := tc.tenantState
			if ts == "" {
				ts = tenant.Active
			}
			f := newFixture(t, ts)
			key := f.submit(t, tc.spec)
			f.settle(t, key)
			for _, s := range tc.steps {
				s.do(t, f, key)
				if f.w.own.Owns(key) {
					f.settle(t, key)
				} else if wj, ok := f.st.Job(key); ok && wj.Active && wj.WorkerID == "" {
					// Let go meanwhile (a delete of a finished job): the
					// next claim takes it.
					f.w.claim(f.ctx)
					f.settle(t, key)
				}
			}
			wj, ok := f.st.Job(key)
			if tc.state != "" {
				require.True(t, ok)
				require.Equal(t, tc.state, wj.Job.Status.State, "%s: %s", wj.Job.Status.Reason, wj.Job.Status.Message)
			}
			if tc.reason != "" {
				require.Equal(t, tc.reason, wj.Job.Status.Reason)
			}
			var names []string
			for name, pod := range f.pods(t) {
				if pod.DeletionTimestamp == nil {
					names = append(names, name)
				}
			}
			slices.Sort(names)
			require.Equal(t, tc.pods, names, "pods left")
			require.Equal(t, tc.owned, f.w.own.Owns(key), "owned")
			if tc.then != nil {
				tc.then(t, f, key)
			}
		})
	}
}

// The first pass over a job just claimed creates its pods on the row the
// claim returned: no load, no save, one tenant read, and one create per pod.
func TestDispatchRoundTrips(t *testing.T) {
	f := newFixture(t, tenant.Active)
	key := f.st.AddJob(job.Job{Tenant: "acme", Name: "tj", Spec: spec(replica(job.Worker, 4, job.RestartNever)), Creator: "alice"}, true)
	f.w.cfg.Listener = nil
	f.w.claim(f.ctx)
	f.st.ResetCalls()
	f.pass(t, key)
	require.Len(t, f.writes(), 4)
	require.Equal(t, map[string]int{"JobLoad": 1, "TenantGet": 1}, f.st.Calls(),
		"without a listener the claimed row is not kept: one load")
}

// A tenant's namespace is the one its record names, whatever the prefix;
// a record without one is an error naming the field, not a guess.
func TestTenantRecordNamesTheNamespace(t *testing.T) {
	f := newFixture(t, tenant.Active)
	f.st.AddTenant(tenant.Tenant{ID: "acme", Namespace: "team-acme", State: tenant.Active})
	key := f.submit(t, spec(replica(job.Worker, 1, job.RestartNever)))
	f.pass(t, key)
	list, err := f.kube.Tracker().List(podsGVR, corev1.SchemeGroupVersion.WithKind("Pod"), "team-acme")
	require.NoError(t, err)
	require.Len(t, list.(*corev1.PodList).Items, 1)

	f.st.AddTenant(tenant.Tenant{ID: "acme", State: tenant.Active})
	f.w.tenants.invalidate("acme")
	f.kube.ClearActions()
	_, err = f.w.reconcile(f.ctx, key)
	require.ErrorContains(t, err, "tenants.namespace")
	require.Empty(t, f.writes())
}
