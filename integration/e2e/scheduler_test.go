//go:build integration

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// End-to-end tests of the scheduler (issue 8) on the local cluster, whose
// two GPU nodes have 8 GPUs each: 16 in all.

// schedEnv is a running Trainyard with one tenant of the given scheduling
// policy, its namespace provisioned.
type schedEnv struct {
	*workerEnv
	tenant string
}

func startScheduling(t *testing.T, tenantID string, sc *pb.Scheduling, workerArgs ...string) *schedEnv {
	t.Helper()
	waitGPUsFree(t)
	e := startWorkers(t, 1, workerArgs...)
	e.CreateTenantWith(t, tenantID, &pb.Tenant{
		Members:    []*pb.Member{harness.Subject("alice", pb.Role_ROLE_EDITOR)},
		Scheduling: sc,
	})
	e.waitNS(t, e.Namespace(tenantID))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.Cluster.Client().CoreV1().Namespaces().Delete(ctx, e.Namespace(tenantID), metav1.DeleteOptions{})
	})
	return &schedEnv{workerEnv: e, tenant: tenantID}
}

// waitGPUsFree waits until no pod on the cluster holds a GPU: the cluster
// is shared by the package's tests, and these need all 16.
func waitGPUsFree(t *testing.T) {
	t.Helper()
	c := harness.Cluster(t).Client()
	require.Eventually(t, func() bool {
		pods, err := c.CoreV1().Pods("").List(ctxT(t), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			for _, ctr := range p.Spec.Containers {
				if _, ok := ctr.Resources.Requests[cluster.GPUResource]; ok {
					return false
				}
			}
		}
		return true
	}, 90*time.Second, 200*time.Millisecond, "GPU pods of earlier tests are still on the nodes")
}

// gpuJob is a job of n workers of gpus GPUs each.
func gpuJob(n, gpus int32, priority int32, annotations map[string]string) *pb.JobSpec {
	r := rep(pb.ReplicaType_REPLICA_TYPE_WORKER, n, annotations)
	r.Resources = &pb.Resources{Gpu: gpus, Cpu: "1", Memory: "1Gi"}
	r.RestartPolicy = pb.RestartPolicy_RESTART_POLICY_ON_FAILURE
	return &pb.JobSpec{Replicas: []*pb.ReplicaSpec{r}, Priority: priority}
}

func (e *schedEnv) submitTo(t *testing.T, id string, spec *pb.JobSpec) string {
	t.Helper()
	_, err := e.jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: harness.TenantName(e.tenant), JobId: id, Job: &pb.Job{Spec: spec}})
	require.NoError(t, err, "create job %s", id)
	return harness.JobName(e.tenant, id)
}

func (e *schedEnv) get(t *testing.T, name string) *pb.Job {
	t.Helper()
	j, err := e.jobs.GetJob(ctxT(t), &pb.GetJobRequest{Name: name})
	require.NoError(t, err)
	return j
}

func (e *schedEnv) podsOf(t *testing.T, jobID string) []corev1.Pod {
	t.Helper()
	list, err := e.Cluster.Client().CoreV1().Pods(e.Namespace(e.tenant)).List(ctxT(t), metav1.ListOptions{LabelSelector: "trainyard.dev/job=" + jobID})
	require.NoError(t, err)
	return list.Items
}

// Two jobs of 3×4 GPUs on 2×8 GPUs: exactly one runs (a gang is admitted
// whole or not at all, so neither holds half of what both need); the other
// waits for capacity, first in line, and runs once the first has ended.
func TestSchedulerGangOnGPUNodes(t *testing.T) {
	e := startScheduling(t, "gang", nil)
	first := e.submitTo(t, "first", gpuJob(3, 4, 0, annot(cluster.AnnotationRunFor, "6s")))
	e.wait(t, first, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	second := e.submitTo(t, "second", gpuJob(3, 4, 0, annot(cluster.AnnotationRunFor, "2s")))

	j := harness.WaitJob(t, e.jobs, second, 30*time.Second, func(j *pb.Job) bool { return j.GetStatus().GetQueue() != nil })
	q := j.GetStatus().GetQueue()
	require.Equal(t, pb.JobState_JOB_STATE_QUEUED, j.GetStatus().GetState())
	require.Equal(t, pb.WaitReason_WAIT_REASON_CAPACITY, q.GetReason(), "queue: %v", q)
	require.EqualValues(t, 1, q.GetTenantPosition())
	require.EqualValues(t, 1, q.GetClusterPosition())
	require.Equal(t, []string{"nvidia.com/gpu"}, q.GetWaitingFor())
	require.Empty(t, e.podsOf(t, "second"), "not one pod of the waiting gang exists")

	f := e.wait(t, first, 60*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	s := e.wait(t, second, 60*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	require.False(t, s.GetStatus().GetStartTime().AsTime().Before(f.GetStatus().GetCompletionTime().AsTime().Add(-time.Second)),
		"the second gang started once the first had ended")
}

// A priority-900 job preempts the tenant's priority-0 job that holds the
// GPUs it needs, within seconds; the victim goes back to the queue with
// its restarts unchanged, and runs again (to success) afterwards.
func TestSchedulerPreemptsLowerPriority(t *testing.T) {
	e := startScheduling(t, "prio", &pb.Scheduling{PreemptionPolicy: pb.PreemptionPolicy_PREEMPTION_POLICY_LOWER_PRIORITY})
	lowSpec := gpuJob(2, 8, 0, annot(cluster.AnnotationRunFor, "8s"))
	lowSpec.TerminationGracePeriodSeconds = new(int64(2))
	low := e.submitTo(t, "low", lowSpec)
	e.wait(t, low, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)

	submitted := time.Now()
	urgent := e.submitTo(t, "urgent", gpuJob(1, 8, 900, annot(cluster.AnnotationRunFor, "3s")))
	u := e.wait(t, urgent, 60*time.Second, pb.JobState_JOB_STATE_RUNNING, pb.JobState_JOB_STATE_SUCCEEDED)
	startedIn := u.GetStatus().GetStartTime().AsTime().Sub(submitted)
	t.Logf("the urgent job started %s after it was submitted", startedIn)
	require.Less(t, startedIn, 20*time.Second, "preemption takes seconds")

	// The victim: back in the queue, preempted by urgent, restarts unchanged.
	l := harness.WaitJob(t, e.jobs, low, 30*time.Second, func(j *pb.Job) bool { return j.GetStatus().GetRequeues() >= 1 })
	require.EqualValues(t, 0, l.GetStatus().GetRestarts(), "a preemption is not a restart")
	events, err := e.jobs.ListJobEvents(ctxT(t), &pb.ListJobEventsRequest{Parent: low, PageSize: 100})
	require.NoError(t, err)
	var preempted string
	for _, ev := range events.GetEvents() {
		if ev.GetReason() == "Preempted" {
			preempted = ev.GetMessage()
		}
	}
	require.Contains(t, preempted, `"urgent"`, "the event names the job that displaced it")

	e.wait(t, urgent, 60*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	l = e.wait(t, low, 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	require.EqualValues(t, 0, l.GetStatus().GetRestarts())
	require.EqualValues(t, 1, l.GetStatus().GetRequeues())
}

// A job admitted on room that something else takes before its pods are
// placed (here: kube-scheduler is held while pods that are not
// Trainyard's are bound to both GPU nodes) has its pods removed after the
// unschedulable timeout and goes back to the queue with a backoff, its
// restarts unchanged; once the room is free again it runs.
func TestSchedulerRequeuesUnschedulableJob(t *testing.T) {
	e := startScheduling(t, "unsched", nil, "--unschedulable-timeout", "5s", "--requeue-backoff", "2s")
	resume, err := e.Cluster.Pause("kube-scheduler")
	require.NoError(t, err)
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			resume()
		}
	})

	name := e.submitTo(t, "j", gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "2s")))
	require.Eventually(t, func() bool { return len(e.podsOf(t, "j")) == 1 }, 30*time.Second, 100*time.Millisecond,
		"the job is admitted and its pod created (kube-scheduler does not place it: paused)")
	require.Empty(t, e.podsOf(t, "j")[0].Spec.NodeName, "kube-scheduler is paused: nothing binds the pod")

	// Someone else's pods take every GPU, bound directly to the nodes.
	hogs := e.Namespace(e.tenant)
	for _, node := range []string{"kwok-gpu-0", "kwok-gpu-1"} {
		_, err := e.Cluster.Client().CoreV1().Pods(hogs).Create(ctxT(t), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hog-" + node, Annotations: map[string]string{cluster.AnnotationRunForever: "true"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "hog", Image: "hog",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{cluster.GPUResource: resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{cluster.GPUResource: resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				}}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// A fresh kube-scheduler lists every pod before it schedules any, so it
	// sees the hogs before it looks at the job's pod. (Resuming the paused
	// one would race: it could act on its queue before its informer caught
	// up with the hogs, and overcommit the node, which kwok never refuses.)
	require.NoError(t, e.Cluster.Restart(ctxT(t), "kube-scheduler"))
	restarted = true

	j := harness.WaitJob(t, e.jobs, name, 60*time.Second, func(j *pb.Job) bool { return j.GetStatus().GetRequeues() >= 1 })
	require.Equal(t, pb.JobState_JOB_STATE_QUEUED, j.GetStatus().GetState())
	require.Equal(t, "Unschedulable", j.GetStatus().GetReason())
	require.EqualValues(t, 0, j.GetStatus().GetRestarts())
	require.Eventually(t, func() bool { return len(e.podsOf(t, "j")) == 0 }, 30*time.Second, 100*time.Millisecond, "its pod was removed")
	q := harness.WaitJob(t, e.jobs, name, 30*time.Second, func(j *pb.Job) bool { return j.GetStatus().GetQueue() != nil }).GetStatus().GetQueue()
	require.Contains(t, []pb.WaitReason{pb.WaitReason_WAIT_REASON_UNSCHEDULABLE, pb.WaitReason_WAIT_REASON_CAPACITY}, q.GetReason(), "queue: %v", q)

	for _, node := range []string{"kwok-gpu-0", "kwok-gpu-1"} {
		require.NoError(t, e.Cluster.Client().CoreV1().Pods(hogs).Delete(ctxT(t), "hog-"+node, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}))
	}
	j = e.wait(t, name, 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	require.EqualValues(t, 1, j.GetStatus().GetRequeues())
}

// Two workers, so two schedulers; the leader is killed with SIGKILL while
// jobs stream in. The other takes the lease over within its TTL, every job
// runs to the end, and none is admitted twice: each job started once
// (one Admitted event) and each replica pod was created once.
func TestSchedulerLeaderKilledMidLoad(t *testing.T) {
	waitGPUsFree(t)
	e := startWorkers(t, 0)
	args := []string{"--lease-ttl", "3s", "--scheduler-lease-ttl", "3s"}
	workers := map[string]*harness.Process{
		"w1": e.StartWorker(t, append(args, "--worker-id", "w1")...),
		"w2": e.StartWorker(t, append(args, "--worker-id", "w2")...),
	}
	e.waitNamespace(t)
	rec := e.recordPods(t)

	db, err := pgx.Connect(ctxT(t), e.DatabaseURL)
	require.NoError(t, err)
	defer db.Close(context.Background())
	leader := func() string {
		var holder string
		if err := db.QueryRow(ctxT(t), `SELECT coalesce(holder, '') FROM scheduler_lease WHERE expires_at > now()`).Scan(&holder); err != nil {
			return ""
		}
		return holder
	}
	require.Eventually(t, func() bool { return leader() != "" }, 30*time.Second, 50*time.Millisecond)

	const n = 30
	var (
		wg    sync.WaitGroup
		names = make([]string, n)
	)
	wg.Go(func() {
		for i := range n {
			names[i] = e.submit(t, fmt.Sprintf("load-%02d", i), &pb.JobSpec{Replicas: []*pb.ReplicaSpec{
				rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 2, annot(cluster.AnnotationRunFor, "1s"))}})
			time.Sleep(50 * time.Millisecond) // a steady stream, so that the kill lands mid-load
		}
	})
	// Kill the leader once some jobs are in.
	require.Eventually(t, func() bool { return len(rec.created("load-")) >= 4 }, 60*time.Second, 20*time.Millisecond)
	old := leader()
	require.NotEmpty(t, old)
	killed := time.Now()
	workers[old].Kill()
	var next string
	require.Eventually(t, func() bool {
		next = leader()
		return next != "" && next != old
	}, 30*time.Second, 50*time.Millisecond, "nobody took the scheduler lease over")
	t.Logf("scheduler %s killed; %s took over after %s", old, next, time.Since(killed).Round(100*time.Millisecond))
	wg.Wait()

	for _, name := range names {
		j := e.wait(t, name, 120*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
		events, err := e.jobs.ListJobEvents(ctxT(t), &pb.ListJobEventsRequest{Parent: name, PageSize: 100})
		require.NoError(t, err)
		admitted := 0
		for _, ev := range events.GetEvents() {
			if ev.GetReason() == "Admitted" {
				admitted++
			}
		}
		require.Equal(t, 1, admitted, "%s started once: %v", name, j.GetStatus())
	}
	// The recorder's watch may trail the worker's informer on a loaded
	// machine: the last jobs can have SUCCEEDED before it has seen their
	// pods' creation.
	var created map[string]int
	require.Eventually(t, func() bool {
		created = rec.created("load-")
		return len(created) >= 2*n
	}, 30*time.Second, 50*time.Millisecond, "every replica pod was created")
	require.Len(t, created, 2*n, "every replica pod was created")
	for pod, uids := range created {
		require.Equal(t, 1, uids, "pod %s was created more than once", pod)
	}
}
