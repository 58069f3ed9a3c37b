//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/kube"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// End-to-end tests of `trainyard worker` (issue 4): the real server and
// worker processes, real Postgres, the local cluster whose simulated
// kubelet makes pods behave as their sim.trainyard.dev annotations say.

// workerTenant is the tenant every test here runs its jobs in.
const workerTenant = "acme"

// workerEnv is a running Trainyard with a tenant whose namespace exists and
// a JobService client of one of its editors.
type workerEnv struct {
	*harness.Env
	jobs pb.JobServiceClient
	ns   string
}

// startWorkers starts the API server and n workers (with extra worker
// flags), creates the tenant and, when a worker runs, waits for the
// worker's tenant reconciler to provision its namespace.
func startWorkers(t *testing.T, n int, workerArgs ...string) *workerEnv {
	t.Helper()
	return startWorkersServing(t, n, nil, workerArgs...)
}

// startWorkersServing is startWorkers with serveArgs for the API server.
func startWorkersServing(t *testing.T, n int, serveArgs []string, workerArgs ...string) *workerEnv {
	t.Helper()
	c := harness.Cluster(t)
	var ns string
	// Registered before the processes start, so it runs after they are
	// stopped: nothing re-creates the namespace then.
	t.Cleanup(func() {
		if ns == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Client().CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	env := harness.Start(t, harness.Options{Cluster: true, Workers: n, ServeArgs: serveArgs, WorkerArgs: workerArgs})
	env.CreateTenant(t, workerTenant, harness.Subject("alice", pb.Role_ROLE_EDITOR))
	ns = env.Namespace(workerTenant)
	we := &workerEnv{Env: env, jobs: env.Jobs(t, env.Token("alice")), ns: ns}
	if n > 0 {
		we.waitNamespace(t)
	}
	return we
}

// waitNamespace waits until the tenant's namespace has its job
// ServiceAccount, which the tenant reconciler in `trainyard worker` makes.
func (e *workerEnv) waitNamespace(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := e.Cluster.Client().CoreV1().ServiceAccounts(e.ns).Get(ctxT(t), kube.DefaultJobServiceAccount, metav1.GetOptions{})
		return err == nil
	}, 60*time.Second, 100*time.Millisecond, "the worker's tenant reconciler never provisioned namespace %s", e.ns)
}

// submit creates job id in the tenant and returns its resource name.
func (e *workerEnv) submit(t *testing.T, id string, spec *pb.JobSpec) string {
	t.Helper()
	_, err := e.jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{
		Parent: harness.TenantName(workerTenant), JobId: id, Job: &pb.Job{Spec: spec},
	})
	require.NoError(t, err, "create job %s", id)
	return harness.JobName(workerTenant, id)
}

func (e *workerEnv) wait(t *testing.T, name string, timeout time.Duration, states ...pb.JobState) *pb.Job {
	t.Helper()
	return harness.WaitJob(t, e.jobs, name, timeout, harness.InState(states...))
}

// pods lists the pods of a job (by its name label).
func (e *workerEnv) pods(t *testing.T, jobID string) []corev1.Pod {
	t.Helper()
	list, err := e.Cluster.Client().CoreV1().Pods(e.ns).List(ctxT(t), metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{kube.LabelJob: jobID}).String(),
	})
	require.NoError(t, err)
	return list.Items
}

// waitGone waits until the job has no pods, Services or EndpointSlices
// left.
func (e *workerEnv) waitGone(t *testing.T, jobID string, timeout time.Duration) {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{kube.LabelJob: jobID}).String()
	require.Eventually(t, func() bool {
		return e.jobObjects(ctxT(t), sel) == 0
	}, timeout, 100*time.Millisecond, "job %s still has pods, services or endpointslices", jobID)
}

// jobObjects counts the pods, Services and EndpointSlices that sel selects
// in the tenant's namespace, or -1 when the API server did not answer.
func (e *workerEnv) jobObjects(ctx context.Context, sel string) int {
	opts := metav1.ListOptions{LabelSelector: sel}
	c := e.Cluster.Client()
	pods, err1 := c.CoreV1().Pods(e.ns).List(ctx, opts)
	svcs, err2 := c.CoreV1().Services(e.ns).List(ctx, opts)
	slices, err3 := c.DiscoveryV1().EndpointSlices(e.ns).List(ctx, opts)
	if err1 != nil || err2 != nil || err3 != nil {
		return -1
	}
	return len(pods.Items) + len(svcs.Items) + len(slices.Items)
}

// podRecorder records every pod creation in a namespace (from a watch
// started before the jobs are submitted): the UIDs seen per pod name.
type podRecorder struct {
	mu   sync.Mutex
	uids map[string]map[string]bool
}

func (e *workerEnv) recordPods(t *testing.T) *podRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// A watch the API server ends (a slow consumer on a loaded machine)
	// resumes where it was, so that no creation goes unseen; one that
	// cannot (its resource version expired: the retry watcher gives up)
	// starts again from a new list, which still holds the pods of ended
	// jobs.
	pods := e.Cluster.Client().CoreV1().Pods(e.ns)
	selector := kube.ManagedSelector().String()
	r := &podRecorder{uids: map[string]map[string]bool{}}
	record := func(pod *corev1.Pod) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.uids[pod.Name] == nil {
			r.uids[pod.Name] = map[string]bool{}
		}
		r.uids[pod.Name][string(pod.UID)] = true
	}
	start := func() (watch.Interface, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			record(&list.Items[i])
		}
		return watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.LabelSelector = selector
				return pods.Watch(ctx, o)
			}})
	}
	w, err := start()
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for ev := range w.ResultChan() {
				if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Error {
					record(pod)
				}
			}
			w.Stop()
			for ctx.Err() == nil {
				if w, err = start(); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if ctx.Err() != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// created returns, per pod name with the prefix, how many distinct pods
// (UIDs) were ever created.
func (r *podRecorder) created(prefix string) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for name, uids := range r.uids {
		if strings.HasPrefix(name, prefix) {
			out[name] = len(uids)
		}
	}
	return out
}

func rep(typ pb.ReplicaType, count int32, annotations map[string]string) *pb.ReplicaSpec {
	return &pb.ReplicaSpec{Type: typ, Count: count, Image: "tensorflow/tensorflow:2.16.1",
		Command: []string{"python", "train.py"}, PodAnnotations: annotations}
}

func annot(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// tfConfig is TF_CONFIG as a pod sees it.
type tfConfig struct {
	Cluster map[string][]string `json:"cluster"`
	Task    struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	} `json:"task"`
	Environment string `json:"environment"`
}

// A 1 chief + 4 worker + 2 PS + 1 evaluator job reaches SUCCEEDED, and
// while it runs every pod's TF_CONFIG is correct and resolvable by name
// the way cluster DNS would answer: the pod's hostname and subdomain (the
// namespace's headless Service of replicas) make the listed name, and the
// job's EndpointSlice of that Service, which the worker writes (the
// Service has no selector: the controller manager would scan the whole
// namespace for every change), lists it under that hostname with its
// address.
func TestWorkerRunsDistributedJobWithResolvableTFConfig(t *testing.T) {
	e := startWorkers(t, 1)
	forever := annot(cluster.AnnotationRunForever, "true")
	name := e.submit(t, "dist", &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{
			rep(pb.ReplicaType_REPLICA_TYPE_CHIEF, 1, annot(cluster.AnnotationRunFor, "8s")),
			rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 4, forever),
			rep(pb.ReplicaType_REPLICA_TYPE_PS, 2, forever),
			rep(pb.ReplicaType_REPLICA_TYPE_EVALUATOR, 1, forever),
		},
	})
	e.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)

	svc, err := e.Cluster.Client().CoreV1().Services(e.ns).Get(ctxT(t), "replicas", metav1.GetOptions{})
	require.NoError(t, err, "the tenant namespace's Service of replicas")
	require.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
	require.True(t, svc.Spec.PublishNotReadyAddresses)
	addr := func(pod string) string { return fmt.Sprintf("%s.replicas.%s.svc:2222", pod, e.ns) }
	wantCluster := map[string][]string{
		"chief":     {addr("dist-chief-0")},
		"worker":    {addr("dist-worker-0"), addr("dist-worker-1"), addr("dist-worker-2"), addr("dist-worker-3")},
		"ps":        {addr("dist-ps-0"), addr("dist-ps-1")},
		"evaluator": {addr("dist-evaluator-0")},
	}

	pods := e.pods(t, "dist")
	require.Len(t, pods, 8)
	for _, pod := range pods {
		var tf tfConfig
		var raw string
		for _, env := range pod.Spec.Containers[0].Env {
			if env.Name == "TF_CONFIG" {
				raw = env.Value
			}
		}
		require.NoError(t, json.Unmarshal([]byte(raw), &tf), "pod %s TF_CONFIG %q", pod.Name, raw)
		require.Equal(t, wantCluster, tf.Cluster, "pod %s", pod.Name)
		require.Equal(t, "cloud", tf.Environment)
		require.Equal(t, pod.Labels[kube.LabelReplicaType], tf.Task.Type)
		require.Equal(t, pod.Labels[kube.LabelReplicaIndex], fmt.Sprint(tf.Task.Index))
		require.Equal(t, fmt.Sprintf("dist-%s-%d", tf.Task.Type, tf.Task.Index), pod.Name)

		// <hostname>.<subdomain>.<ns>.svc is the name TF_CONFIG lists.
		require.Equal(t, pod.Name, pod.Spec.Hostname)
		require.Equal(t, svc.Name, pod.Spec.Subdomain)
		self := wantCluster[tf.Task.Type][tf.Task.Index]
		require.Equal(t, fmt.Sprintf("%s.%s.%s.svc:2222", pod.Spec.Hostname, pod.Spec.Subdomain, pod.Namespace), self)
	}
	require.Empty(t, svc.Spec.Selector)

	// The EndpointSlice lists every pod under its hostname: a DNS server
	// would answer each TF_CONFIG name with the pod's address.
	require.Eventually(t, func() bool {
		slices, err := e.Cluster.Client().DiscoveryV1().EndpointSlices(e.ns).List(ctxT(t), metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=replicas," + kube.LabelJob + "=dist",
		})
		if err != nil {
			return false
		}
		listed := map[string]string{}
		for _, s := range slices.Items {
			if s.Labels[discoveryv1.LabelManagedBy] != kube.EndpointSliceManagedBy {
				return false
			}
			for _, ep := range s.Endpoints {
				if ep.TargetRef != nil && ep.Hostname != nil && *ep.Hostname == ep.TargetRef.Name && len(ep.Addresses) == 1 {
					listed[ep.TargetRef.Name] = ep.Addresses[0]
				}
			}
		}
		for _, pod := range e.pods(t, "dist") {
			if pod.Status.PodIP == "" || listed[pod.Name] != pod.Status.PodIP {
				return false
			}
		}
		return len(listed) == len(pods)
	}, 20*time.Second, 200*time.Millisecond, "the job's EndpointSlice of Service replicas lists every pod under its hostname")

	j := e.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	require.Equal(t, "chief-0 succeeded", j.GetStatus().GetMessage())
	// CleanPodPolicy Running (the default): the pods still running go; the
	// finished chief stays.
	require.Eventually(t, func() bool {
		pods := e.pods(t, "dist")
		return len(pods) == 1 && pods[0].Name == "dist-chief-0"
	}, 30*time.Second, 100*time.Millisecond)
	// No replica runs any more: the job's EndpointSlice goes, so the
	// finished pods' addresses are not listed anywhere; the namespace's
	// Service stays for the next jobs.
	require.Eventually(t, func() bool {
		_, err := e.Cluster.Client().DiscoveryV1().EndpointSlices(e.ns).Get(ctxT(t), "dist", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 100*time.Millisecond, "the finished job's EndpointSlice is still there")
	_, err = e.Cluster.Client().CoreV1().Services(e.ns).Get(ctxT(t), "replicas", metav1.GetOptions{})
	require.NoError(t, err)
}

// A replica that fails with an exit code the ExitCode policy retries (137,
// killed by a signal) is recreated as attempt 1, which succeeds; the job
// succeeds with one restart counted.
func TestWorkerRestartsRetryableFailure(t *testing.T) {
	e := startWorkers(t, 1)
	r := rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, annot(
		cluster.AnnotationFailAttempts, "1", cluster.AnnotationExitCode, "137", cluster.AnnotationReason, "OOMKilled"))
	r.RestartPolicy = pb.RestartPolicy_RESTART_POLICY_EXIT_CODE
	rec := e.recordPods(t)
	name := e.submit(t, "retry", &pb.JobSpec{
		Replicas:  []*pb.ReplicaSpec{r},
		RunPolicy: &pb.RunPolicy{CleanPodPolicy: pb.CleanPodPolicy_CLEAN_POD_POLICY_NONE},
	})
	j := e.wait(t, name, 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED, pb.JobState_JOB_STATE_FAILED)
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, j.GetStatus().GetState(), "status: %v", j.GetStatus())
	require.EqualValues(t, 1, j.GetStatus().GetRestarts())
	rs := j.GetStatus().GetReplicas()[0]
	require.EqualValues(t, 1, rs.GetRestarts())
	require.EqualValues(t, 0, rs.GetLastTermination().GetExitCode(), "the last run succeeded")

	pods := e.pods(t, "retry")
	require.Len(t, pods, 1)
	require.Equal(t, "1", pods[0].Labels[kube.LabelAttempt], "the pod left is the restarted attempt")
	require.Equal(t, map[string]int{"retry-worker-0": 2}, rec.created("retry-"), "one pod per attempt")

	events := jobEvents(t, e, "retry")
	require.Contains(t, events, "Restarting: Restarting worker-0 after exit code 137, reason OOMKilled (restart 1 of 3)")
}

// A replica that keeps failing uses up backoffLimit: the job FAILS with
// the exit code and the tail of the replica's log (read from the kubelet
// before the pod was deleted) in its status.
func TestWorkerFailsPastBackoffLimitWithLogTail(t *testing.T) {
	e := startWorkers(t, 1)
	r := rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, annot(cluster.AnnotationExitCode, "3"))
	r.RestartPolicy = pb.RestartPolicy_RESTART_POLICY_ON_FAILURE
	name := e.submit(t, "crash", &pb.JobSpec{
		Replicas:  []*pb.ReplicaSpec{r},
		RunPolicy: &pb.RunPolicy{BackoffLimit: new(int32(1))},
	})
	j := e.wait(t, name, 90*time.Second, pb.JobState_JOB_STATE_FAILED, pb.JobState_JOB_STATE_SUCCEEDED)
	st := j.GetStatus()
	require.Equal(t, pb.JobState_JOB_STATE_FAILED, st.GetState())
	require.Equal(t, "BackoffLimitExceeded", st.GetReason())
	require.Contains(t, st.GetMessage(), "worker-0 ended with exit code 3")
	require.Contains(t, st.GetMessage(), cluster.LogLineFailed, "the message quotes the log tail")
	require.EqualValues(t, 1, st.GetRestarts())
	last := st.GetReplicas()[0].GetLastTermination()
	require.EqualValues(t, 3, last.GetExitCode())
	require.Equal(t, "Error", last.GetReason())
	require.Contains(t, last.GetLogTail(), "Traceback (most recent call last):")
	require.True(t, strings.HasSuffix(strings.TrimSpace(last.GetLogTail()), cluster.LogLineFailed), "log tail: %q", last.GetLogTail())

	events := jobEvents(t, e, "crash")
	require.Contains(t, events, "Restarting: Restarting worker-0 after exit code 3, reason Error (restart 1 of 1)")
	require.True(t, hasPrefix(events, "BackoffLimitExceeded: worker-0 ended with exit code 3"), "events: %q", events)
}

// A job with a 3 s deadline whose pods never end is FAILED by the
// deadline's timer within 2 s of it, and its running pods are deleted
// (and with no replica left running, its EndpointSlice). The deadline counts from admission, so the test waits for the
// end itself: slow pods (never RUNNING before the deadline) do not make it
// hang, they make the job fail the same way.
func TestWorkerDeadlineFiresOnTime(t *testing.T) {
	e := startWorkers(t, 1)
	name := e.submit(t, "late", &pb.JobSpec{
		Replicas:  []*pb.ReplicaSpec{rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 2, runForever())},
		RunPolicy: &pb.RunPolicy{ActiveDeadlineSeconds: new(int64(3))},
	})
	j := e.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_FAILED, pb.JobState_JOB_STATE_SUCCEEDED, pb.JobState_JOB_STATE_CANCELLED)
	st := j.GetStatus()
	require.Equal(t, pb.JobState_JOB_STATE_FAILED, st.GetState(), "status: %v", st)
	require.Equal(t, "DeadlineExceeded", st.GetReason())
	deadline := st.GetStartTime().AsTime().Add(3 * time.Second)
	late := st.GetCompletionTime().AsTime().Sub(deadline)
	t.Logf("failed %s after the deadline", late)
	require.GreaterOrEqual(t, late, time.Duration(0), "not before the deadline")
	require.Less(t, late, 2*time.Second, "within 2 s of the deadline")
	require.Eventually(t, func() bool { return len(e.pods(t, "late")) == 0 }, 30*time.Second, 100*time.Millisecond,
		"the running pods are deleted")
}

// Cancelling a running job deletes its pods and its Service, and the job
// ends CANCELLED.
func TestWorkerCancelMidRun(t *testing.T) {
	e := startWorkers(t, 1)
	name := e.submit(t, "stopme", &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{
			rep(pb.ReplicaType_REPLICA_TYPE_CHIEF, 1, runForever()),
			rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 2, runForever()),
		},
	})
	e.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	require.Len(t, e.pods(t, "stopme"), 3)

	resp := e.REST(e.Token("alice")).Do(t, "POST", "/v1/"+name+":cancel", map[string]any{})
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	j := e.wait(t, name, 30*time.Second, pb.JobState_JOB_STATE_CANCELLED)
	require.Equal(t, "Cancelled", j.GetStatus().GetReason())
	e.waitGone(t, "stopme", 30*time.Second)
}

// The worker is killed (SIGKILL) while it creates a job's pods — its
// client throttled to 2 requests per second, so the kill lands after the
// first pods and before the last. A new worker takes the job over once the
// lease expires, adopts what exists, creates the rest: no pod is created
// twice, and the job completes. The chief runs for 10 s, well past the
// takeover (a 3 s lease): a chief that succeeds first ends the job, with
// the rest never created (CI saw it with 2 s).
func TestWorkerKilledMidDispatchConverges(t *testing.T) {
	e := startWorkers(t, 0)
	slow := e.StartWorker(t, "--lease-ttl", "3s", "--kube-qps", "2", "--kube-burst", "1")
	e.waitNamespace(t)
	rec := e.recordPods(t)
	name := e.submit(t, "crashy", &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{
			rep(pb.ReplicaType_REPLICA_TYPE_CHIEF, 1, annot(cluster.AnnotationRunFor, "10s")),
			rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 6, runForever()),
		},
	})
	require.Eventually(t, func() bool { return len(rec.created("crashy-")) >= 1 }, 60*time.Second, 10*time.Millisecond,
		"the first pod appears")
	slow.Kill()
	n := len(rec.created("crashy-"))
	t.Logf("worker killed with %d of 7 pods created", n)
	require.Less(t, n, 7, "killed mid-dispatch")

	e.StartWorker(t, "--lease-ttl", "3s")
	j := e.wait(t, name, 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED, pb.JobState_JOB_STATE_FAILED)
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, j.GetStatus().GetState(), "status: %v", j.GetStatus())
	require.Zero(t, j.GetStatus().GetRestarts())
	created := rec.created("crashy-")
	require.Len(t, created, 7)
	for pod, n := range created {
		require.Equal(t, 1, n, "pod %s created %d times", pod, n)
	}
}

// Two workers share one database: every job is dispatched by exactly one
// of them — one admission each (its events, from the API) and no pod
// created twice (pod UIDs, from a watch on the API server).
func TestTwoWorkersDispatchEachJobOnce(t *testing.T) {
	e := startWorkers(t, 2)
	rec := e.recordPods(t)
	const jobs = 12
	var names []string
	for i := range jobs {
		names = append(names, e.submit(t, fmt.Sprintf("pair-%02d", i), &pb.JobSpec{
			Replicas: []*pb.ReplicaSpec{
				rep(pb.ReplicaType_REPLICA_TYPE_CHIEF, 1, annot(cluster.AnnotationRunFor, "1s")),
				rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 2, runForever()),
			},
		}))
	}
	for _, name := range names {
		e.wait(t, name, 120*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	}
	created := rec.created("pair-")
	require.Len(t, created, 3*jobs)
	for pod, n := range created {
		require.Equal(t, 1, n, "pod %s created %d times", pod, n)
	}
	for i := range jobs {
		id := fmt.Sprintf("pair-%02d", i)
		admitted := 0
		for _, ev := range jobEvents(t, e, id) {
			if strings.HasPrefix(ev, "Admitted: ") {
				admitted++
			}
		}
		require.Equal(t, 1, admitted, "job %s admitted %d times", id, admitted)
	}
}

// A worker that dies (kill -9) with a running job: the other worker, running
// all along, takes the job over once the dead one's lease expires, within
// seconds and with no restart of anything. Cancelling the job right after
// the kill proves it: only an owner deletes the pods and ends it.
func TestSurvivingWorkerTakesOverWithinSeconds(t *testing.T) {
	const leaseTTL = 3 * time.Second
	e := startWorkers(t, 0)
	first := e.StartWorker(t, "--lease-ttl", leaseTTL.String())
	e.waitNamespace(t)
	name := e.submit(t, "orphaned", &pb.JobSpec{Replicas: []*pb.ReplicaSpec{
		rep(pb.ReplicaType_REPLICA_TYPE_CHIEF, 1, runForever()),
		rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 2, runForever()),
	}})
	e.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	// The survivor starts only now, so the dead worker is certainly the owner.
	e.StartWorker(t, "--lease-ttl", leaseTTL.String())
	time.Sleep(time.Second) // its informers sync; it claims nothing: no job is free
	first.Kill()
	killed := time.Now()
	_, err := e.jobs.CancelJob(ctxT(t), &pb.CancelJobRequest{Name: name})
	require.NoError(t, err)
	e.wait(t, name, 30*time.Second, pb.JobState_JOB_STATE_CANCELLED)
	took := time.Since(killed)
	t.Logf("job cancelled by the surviving worker %s after the kill (lease TTL %s)", took.Round(time.Millisecond), leaseTTL)
	require.Less(t, took, leaseTTL+7*time.Second, "the survivor must take over within seconds of the lease expiring")
	e.waitGone(t, "orphaned", 30*time.Second)
}

// A job whose pods no node could ever hold (more GPUs than any node has)
// is never admitted, and says why: its queue status is UNSCHEDULABLE, a
// Waiting event records it once, and no pod is made.
func TestWorkerReportsUnschedulableJob(t *testing.T) {
	e := startWorkers(t, 1)
	r := rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, nil)
	r.Resources = &pb.Resources{Gpu: 64}
	name := e.submit(t, "huge", &pb.JobSpec{Replicas: []*pb.ReplicaSpec{r}})
	j := harness.WaitJob(t, e.jobs, name, 60*time.Second, func(j *pb.Job) bool {
		return j.GetStatus().GetQueue().GetReason() == pb.WaitReason_WAIT_REASON_UNSCHEDULABLE
	})
	require.Equal(t, pb.JobState_JOB_STATE_QUEUED, j.GetStatus().GetState())
	require.Contains(t, j.GetStatus().GetQueue().GetMessage(), "no set of schedulable nodes can hold all of its pods")
	require.Nil(t, j.GetStatus().GetQueue().GetEstimatedStartTime(), "nothing it waits for will come")
	// The event is written in the transaction that records the reason, before the queue view shows it.
	require.True(t, hasPrefix(jobEvents(t, e, "huge"), "Waiting: UNSCHEDULABLE: "), "%v", jobEvents(t, e, "huge"))
	require.Empty(t, e.pods(t, "huge"))
}

// The API server refusing a pod for good — here Pod Security Admission
// (the namespace enforces baseline) refusing a privileged replica — fails
// the job at once with the server's reason and message; nothing is retried.
func TestWorkerFailsJobTheAPIServerForbids(t *testing.T) {
	e := startWorkers(t, 1)
	r := rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, runForever())
	r.Privileged = true
	name := e.submit(t, "priv", &pb.JobSpec{Replicas: []*pb.ReplicaSpec{r}})
	j := e.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_FAILED)
	st := j.GetStatus()
	require.Equal(t, kube.ReasonPodSecurity, st.GetReason())
	require.Contains(t, st.GetMessage(), `violates PodSecurity "baseline`)
	require.Contains(t, st.GetMessage(), "privileged")
	require.Empty(t, e.pods(t, "priv"))
	require.True(t, hasPrefix(jobEvents(t, e, "priv"), kube.ReasonPodSecurity+": "))
}

// jobEvents returns a job's events as "Reason: message".
func jobEvents(t *testing.T, e *workerEnv, jobID string) []string {
	t.Helper()
	resp, err := e.jobs.ListJobEvents(ctxT(t), &pb.ListJobEventsRequest{Parent: harness.JobName(workerTenant, jobID), PageSize: 1000})
	require.NoError(t, err)
	var out []string
	for _, ev := range resp.GetEvents() {
		out = append(out, ev.GetReason()+": "+ev.GetMessage())
	}
	return out
}

func hasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// waitNS waits until namespace ns has the job ServiceAccount the tenant
// reconciler makes.
func (e *workerEnv) waitNS(t *testing.T, ns string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := e.Cluster.Client().CoreV1().ServiceAccounts(ns).Get(ctxT(t), kube.DefaultJobServiceAccount, metav1.GetOptions{})
		return err == nil
	}, 60*time.Second, 100*time.Millisecond, "the worker's tenant reconciler never provisioned namespace %s", ns)
}

// objectCount counts the objects of Trainyard jobs (pods, Services,
// EndpointSlices: not the tenant's own, such as its Service of replicas)
// in the tenant's namespace, or -1 when the API server did not answer. It
// does not fail the test: it runs in require.Eventually's and
// require.Never's goroutines.
func (e *workerEnv) objectCount() int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return e.jobObjects(ctx, kube.ManagedSelector().String()+","+kube.LabelJobUID)
}

// A big job cancelled while its worker is still creating its pods (the
// client throttled, so the cancel lands after the first pods and before
// the last) ends with nothing left in the namespace, and nothing comes
// back: the worker does not let the job go while objects it created exist
// that its caches did not show yet.
func TestCancelDuringDispatchLeavesNoPods(t *testing.T) {
	e := startWorkers(t, 0)
	e.StartWorker(t, "--kube-qps", "10", "--kube-burst", "1")
	e.waitNamespace(t)
	rec := e.recordPods(t)
	name := e.submit(t, "bigc", &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{
			rep(pb.ReplicaType_REPLICA_TYPE_CHIEF, 1, runForever()),
			rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 30, runForever()),
		},
	})
	require.Eventually(t, func() bool { return len(rec.created("bigc-")) >= 1 }, 60*time.Second, 5*time.Millisecond,
		"the first pod appears")
	_, err := e.jobs.CancelJob(ctxT(t), &pb.CancelJobRequest{Name: name})
	require.NoError(t, err)
	t.Logf("cancelled with %d of 31 pods created", len(rec.created("bigc-")))

	j := e.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_CANCELLED)
	require.Equal(t, "Cancelled", j.GetStatus().GetReason())
	require.Eventually(t, func() bool { return e.objectCount() == 0 }, 60*time.Second, 100*time.Millisecond,
		"pods or the Service of the cancelled job are left")
	created := func() (n int) {
		for _, c := range rec.created("bigc-") {
			n += c
		}
		return n
	}
	total := created()
	require.Never(t, func() bool { return e.objectCount() > 0 || created() > total },
		5*time.Second, 200*time.Millisecond, "an object of the cancelled job came back")
}

// The worker is killed (SIGKILL) right after it saved a replica's restart
// and before it deleted and recreated the pod — its client slowed to one
// request a second, so the save is seen before the delete. A new worker
// takes the job over: the restart is counted once, the replica runs again
// once, and the job succeeds.
func TestKilledWorkerBetweenRestartSaveAndRecreate(t *testing.T) {
	e := startWorkers(t, 0)
	// A worker at full speed provisions the namespace, then steps aside.
	fast := e.StartWorker(t)
	e.waitNamespace(t)
	if err := fast.Stop(); err != nil {
		t.Logf("stopping the first worker: %v", err)
	}
	slow := e.StartWorker(t, "--lease-ttl", "3s", "--kube-qps", "1", "--kube-burst", "1")
	rec := e.recordPods(t)
	r := rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, annot(
		cluster.AnnotationFailAttempts, "1", cluster.AnnotationExitCode, "137", cluster.AnnotationReason, "OOMKilled"))
	r.RestartPolicy = pb.RestartPolicy_RESTART_POLICY_EXIT_CODE
	name := e.submit(t, "kk", &pb.JobSpec{
		Replicas:  []*pb.ReplicaSpec{r},
		RunPolicy: &pb.RunPolicy{CleanPodPolicy: pb.CleanPodPolicy_CLEAN_POD_POLICY_NONE},
	})
	harness.WaitJob(t, e.jobs, name, 90*time.Second, func(j *pb.Job) bool { return j.GetStatus().GetRestarts() >= 1 })
	slow.Kill()
	pods := e.pods(t, "kk")
	var attempts []string
	for _, p := range pods {
		deleting := ""
		if p.DeletionTimestamp != nil {
			deleting = " (deleting)"
		}
		attempts = append(attempts, p.Labels[kube.LabelAttempt]+deleting)
	}
	t.Logf("worker killed with the restart saved; pods by attempt: %v", attempts)

	e.StartWorker(t, "--lease-ttl", "3s")
	j := e.wait(t, name, 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED, pb.JobState_JOB_STATE_FAILED)
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, j.GetStatus().GetState(), "status: %v", j.GetStatus())
	require.EqualValues(t, 1, j.GetStatus().GetRestarts(), "the restart is counted once")
	require.EqualValues(t, 1, j.GetStatus().GetReplicas()[0].GetRestarts())
	require.Equal(t, map[string]int{"kk-worker-0": 2}, rec.created("kk-"), "one pod per attempt")
	pods = e.pods(t, "kk")
	require.Len(t, pods, 1)
	require.Equal(t, "1", pods[0].Labels[kube.LabelAttempt])
}

// A tenant that queues more jobs over its quota than a worker may own does
// not stop another tenant's job: jobs waiting for admission are nobody's,
// so they take no worker slot.
func TestQuotaWaitingJobsDoNotBlockOtherTenants(t *testing.T) {
	e := startWorkers(t, 0)
	e.StartWorker(t, "--max-owned-jobs", "3")
	e.CreateTenantWith(t, "greedy", &pb.Tenant{
		Members: []*pb.Member{harness.Subject("alice", pb.Role_ROLE_EDITOR)},
		Quota:   &pb.Quota{Gpu: 1},
	})
	e.waitNamespace(t)
	e.waitNS(t, e.Namespace("greedy"))
	oneGPU := func(annotations map[string]string) *pb.JobSpec {
		r := rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, annotations)
		r.Resources = &pb.Resources{Gpu: 1}
		return &pb.JobSpec{Replicas: []*pb.ReplicaSpec{r}}
	}
	submit := func(tenantID, id string, spec *pb.JobSpec) string {
		_, err := e.jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: harness.TenantName(tenantID), JobId: id, Job: &pb.Job{Spec: spec}})
		require.NoError(t, err, "create job %s", id)
		return harness.JobName(tenantID, id)
	}
	hog := submit("greedy", "hog", oneGPU(runForever()))
	e.wait(t, hog, 60*time.Second, pb.JobState_JOB_STATE_STARTING, pb.JobState_JOB_STATE_RUNNING)
	var waiting []string
	for i := range 8 {
		waiting = append(waiting, submit("greedy", fmt.Sprintf("wait-%d", i), oneGPU(runForever())))
	}
	for _, name := range waiting {
		harness.WaitJob(t, e.jobs, name, 60*time.Second, func(j *pb.Job) bool {
			for _, c := range j.GetStatus().GetConditions() {
				if c.GetType() == "Admitted" && !c.GetStatus() {
					return true
				}
			}
			return false
		})
	}

	// 8 jobs wait, more than the worker's 3 slots; acme's job still runs.
	name := e.submit(t, "other", &pb.JobSpec{Replicas: []*pb.ReplicaSpec{rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, runForever())}})
	e.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	for _, n := range waiting {
		j, err := e.jobs.GetJob(ctxT(t), &pb.GetJobRequest{Name: n})
		require.NoError(t, err)
		require.Equal(t, pb.JobState_JOB_STATE_QUEUED, j.GetStatus().GetState(), "%s", n)
	}
}

// Within a tenant, jobs are admitted in (priority, submission) order,
// strictly: a small job that would fit the free quota waits behind a
// bigger one submitted before it, and says so; a higher-priority job
// submitted after both goes first.
func TestAdmissionStrictOrderWithinTenant(t *testing.T) {
	e := startWorkers(t, 0)
	e.StartWorker(t)
	e.CreateTenantWith(t, "ordered", &pb.Tenant{
		Members: []*pb.Member{harness.Subject("alice", pb.Role_ROLE_EDITOR)},
		Quota:   &pb.Quota{Gpu: 3},
	})
	e.waitNS(t, e.Namespace("ordered"))
	job := func(id string, gpus int32, priority int32, runFor string) string {
		r := rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, annot(cluster.AnnotationRunFor, runFor))
		r.Resources = &pb.Resources{Gpu: gpus}
		_, err := e.jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: harness.TenantName("ordered"), JobId: id,
			Job: &pb.Job{Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{r}, Priority: priority}}})
		require.NoError(t, err, "create job %s", id)
		return harness.JobName("ordered", id)
	}
	first := job("first", 2, 0, "8s")
	e.wait(t, first, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)

	// One GPU is free: big (2) does not fit; small (1) would, but big is
	// ahead of it.
	big := job("big", 2, 0, "2s")
	small := job("small", 1, 0, "1s")
	harness.WaitJob(t, e.jobs, small, 30*time.Second, func(j *pb.Job) bool {
		q := j.GetStatus().GetQueue()
		return q.GetReason() == pb.WaitReason_WAIT_REASON_ORDER && q.GetBlockedBy() == "big" && q.GetTenantPosition() == 2
	})
	// urgent (priority 10) is ahead of both: it takes the free GPU at once.
	urgent := job("urgent", 1, 10, "2s")

	var done []*pb.Job
	for _, n := range []string{first, urgent, big, small} {
		done = append(done, e.wait(t, n, 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED))
	}
	start := func(j *pb.Job) time.Time { return j.GetStatus().GetStartTime().AsTime() }
	end := func(j *pb.Job) time.Time { return j.GetStatus().GetCompletionTime().AsTime() }
	f, u, b, sm := done[0], done[1], done[2], done[3]
	require.True(t, start(u).Before(end(f)), "urgent, submitted last, started while first still ran")
	require.False(t, start(b).Before(end(f)), "big started once first freed its GPUs")
	// big and small are admitted in the same scheduling cycle once first
	// ends (both fit then); before that, small waited behind big.
	require.False(t, start(sm).Before(end(f)), "small, submitted after big, was not admitted while big waited")
}
