//go:build integration

package worker

import (
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func TestDispatchCreatesPods(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Chief, 1, job.RestartNever), replica(job.Worker, 2, job.RestartOnFailure)))
	b.own(t, key)

	res := b.reconcile(t, key)
	require.Zero(t, res.after, "no deadline, no timer")

	require.Empty(t, b.actions("create", "services"), "the replicas' Service is the namespace's")
	creates := b.actions("create", "pods")
	require.Len(t, creates, 3)
	var names []string
	for _, a := range creates {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		names = append(names, pod.Name)
		require.Equal(t, "ty-acme", pod.Namespace)
		require.Equal(t, key.UID, pod.Labels[kube.LabelJobUID])
		require.Equal(t, "0", pod.Labels[kube.LabelAttempt])
		var tf map[string]any
		require.NoError(t, json.Unmarshal([]byte(pod.Spec.Containers[0].Env[0].Value), &tf), "TF_CONFIG first")
	}
	require.ElementsMatch(t, []string{"tj-chief-0", "tj-worker-0", "tj-worker-1"}, names)

	wj := b.load(t, key)
	require.True(t, wj.Admitted)
	require.Equal(t, job.Starting, wj.Job.Status.State)
	require.NotNil(t, wj.Job.Status.StartTime)
	evs := b.events(t, key)
	require.Equal(t, job.ReasonAdmitted, evs[len(evs)-1].Reason)
	require.Equal(t, 1, testCount(t, b.w.metrics.dispatchLatency), "dispatch latency observed once")
}

func TestAlreadyExistsIsAdoption(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 2, job.RestartNever)))
	b.own(t, key)
	// An earlier worker created worker-1 and crashed; this worker's cache
	// does not show it yet: the create answers AlreadyExists.
	// The live GET shows it is this job's.
	var earlier *corev1.Pod
	b.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "tj-worker-1" {
			earlier = pod.DeepCopy()
			return true, nil, apierrors.NewAlreadyExists(podsGR, pod.Name)
		}
		return false, nil, nil
	})
	b.kube.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() == "tj-worker-1" && earlier != nil {
			return true, earlier, nil
		}
		return false, nil, nil
	})

	b.reconcile(t, key)
	wj := b.load(t, key)
	require.Equal(t, job.Starting, wj.Job.Status.State)
	require.Zero(t, testCount(t, b.w.metrics.kubeErrors), "AlreadyExists is no error")
	require.Len(t, b.actions("get", "pods"), 1, "the cache did not show it: one live GET")
}

// A name held by an object Trainyard did not make (no Trainyard labels)
// will not free up by waiting: the job fails, NameConflict, and says which.
func TestAlreadyExistsForeignObjectFailsJob(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 2, job.RestartNever)))
	foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tj-worker-1", Namespace: "ty-acme", Labels: map[string]string{"app": "mine"}}}
	_, err := b.kube.CoreV1().Pods("ty-acme").Create(b.ctx, foreign, metav1.CreateOptions{})
	require.NoError(t, err)
	b.own(t, key)

	res := b.reconcile(t, key)
	require.True(t, res.requeue, "cleanup follows")
	st := b.load(t, key).Job.Status
	require.Equal(t, job.Failed, st.State)
	require.Equal(t, ReasonNameConflict, st.Reason)
	require.Equal(t, `pod "tj-worker-1" already exists in namespace ty-acme and was not created by Trainyard; delete it or submit the job under another id`, st.Message)
	pod, err := b.kube.CoreV1().Pods("ty-acme").Get(b.ctx, "tj-worker-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "mine", pod.Labels["app"], "the foreign pod is left alone")
}

func TestAlreadyExistsOfAnotherJobIsRetried(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	// A deleted job of the same name still has its pod.
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tj-worker-0", Namespace: "ty-acme", Labels: map[string]string{
		kube.LabelManagedBy: kube.ManagedByValue, kube.LabelTenant: "acme", kube.LabelJobUID: "00000000-0000-0000-0000-000000000001",
	}}}
	_, err := b.kube.CoreV1().Pods("ty-acme").Create(b.ctx, old, metav1.CreateOptions{})
	require.NoError(t, err)
	b.waitPod(t, "ty-acme", "tj-worker-0", func(*corev1.Pod) bool { return true })
	b.own(t, key)

	_, err = b.w.reconcile(b.ctx, key)
	require.ErrorContains(t, err, "belongs to another job")
	require.False(t, isTerminal(err))
	require.Equal(t, job.Starting, b.load(t, key).Job.Status.State, "the job waits, it does not fail")
}

func TestTerminalAPIErrorFailsJob(t *testing.T) {
	for name, tc := range map[string]struct {
		err    error
		reason string
	}{
		"pod security": {
			err: apierrors.NewForbidden(podsGR, "tj-worker-0",
				errors.New(`violates PodSecurity "baseline:latest": privileged (container "tensorflow" must not set securityContext.privileged=true)`)),
			reason: kube.ReasonPodSecurity,
		},
		"invalid": {
			err:    apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "tj-worker-0", nil),
			reason: "Invalid",
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := setup(t)
			b.tenant(t, "acme", tenant.Quota{})
			key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
			b.own(t, key)
			var on atomic.Bool
			on.Store(true)
			b.react("create", "pods", &on, tc.err)

			res := b.reconcile(t, key)
			require.True(t, res.requeue, "cleanup follows at once")
			st := b.load(t, key).Job.Status
			require.Equal(t, job.Failed, st.State)
			require.Equal(t, tc.reason, st.Reason)
			require.Equal(t, kube.Message(tc.err), st.Message)
			evs := b.events(t, key)
			last := evs[len(evs)-1]
			require.Equal(t, job.EventWarning, last.Type)
			require.Equal(t, tc.reason, last.Reason)

			// The next pass cleans up (the Service goes with CleanRunning only
			// when pods are gone; nothing else is left) and lets the job go.
			b.reconcile(t, key)
			require.False(t, b.load(t, key).Active)
			require.False(t, b.w.own.Owns(key))
		})
	}
}

func TestRetryableAPIErrorIsRetried(t *testing.T) {
	for name, err := range map[string]error{
		"timeout":                 apierrors.NewServerTimeout(podsGR, "create", 1),
		"internal":                apierrors.NewInternalError(errors.New("etcd leader changed")),
		"namespace missing":       apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ty-acme"),
		"service account missing": apierrors.NewForbidden(podsGR, "tj-worker-0", errors.New(`error looking up service account ty-acme/trainyard-job: serviceaccount "trainyard-job" not found`)),
		"quota exceeded":          apierrors.NewForbidden(podsGR, "tj-worker-0", errors.New(`exceeded quota: trainyard-quota, requested: pods=1`)),
		// What a kube-apiserver answers in the moments after it started,
		// before its RBAC caches are filled (seen by the chaos suite).
		"RBAC denial": apierrors.NewForbidden(podsGR, "", errors.New(`User "system:serviceaccount:trainyard:trainyard-worker" cannot create resource "pods" in API group "" in the namespace "ty-acme"`)),
	} {
		t.Run(name, func(t *testing.T) {
			b := setup(t)
			b.tenant(t, "acme", tenant.Quota{})
			key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
			b.own(t, key)
			var on atomic.Bool
			on.Store(true)
			b.react("create", "pods", &on, err)

			_, rerr := b.w.reconcile(b.ctx, key)
			require.Error(t, rerr)
			var re *reconcileError
			require.ErrorAs(t, rerr, &re)
			require.Equal(t, errReasonKube, re.reason)
			require.Equal(t, job.Starting, b.load(t, key).Job.Status.State, "saved before acting, not failed")

			on.Store(false)
			b.reconcile(t, key)
			b.waitCache(t, key, 1)
			require.Equal(t, job.Starting, b.load(t, key).Job.Status.State)
		})
	}
}

func TestLogTailCapturedBeforeDelete(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartOnFailure)))
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 1)
	b.setPhase(t, "ty-acme", "tj-worker-0", corev1.PodRunning, 0, "")
	b.reconcile(t, key)
	require.Equal(t, job.Running, b.load(t, key).Job.Status.State)

	b.kube.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "log" {
			return false, nil, nil
		}
		opts := a.(k8stesting.GenericAction).GetValue().(*corev1.PodLogOptions)
		require.EqualValues(t, DefaultLogTailLines, *opts.TailLines)
		require.EqualValues(t, DefaultLogTailBytes, *opts.LimitBytes)
		return true, &runtime.Unknown{Raw: []byte("epoch 1\nepoch 2\nNaN loss, giving up\n")}, nil
	})
	b.setPhase(t, "ty-acme", "tj-worker-0", corev1.PodFailed, 3, "NaN loss")

	// The pass that sees the end records it with the log tail, and deletes
	// nothing.
	res := b.reconcile(t, key)
	require.True(t, res.requeue)
	require.Empty(t, b.actions("delete", "pods"))
	rs := b.load(t, key).Job.Status.Replicas[0]
	require.NotNil(t, rs.LastTermination)
	require.EqualValues(t, 3, rs.LastTermination.ExitCode)
	require.Equal(t, "NaN loss", rs.LastTermination.Message)
	require.Equal(t, "epoch 1\nepoch 2\nNaN loss, giving up\n", rs.LastTermination.LogTail)

	// The next pass restarts the replica: the old pod is deleted, by UID.
	pod, err := b.w.podLister.Pods("ty-acme").Get("tj-worker-0")
	require.NoError(t, err)
	b.reconcile(t, key)
	deletes := b.actions("delete", "pods")
	require.Len(t, deletes, 1)
	require.Less(t, b.actionIndex("get", "pods/log"), b.actionIndex("delete", "pods"), "log read before delete")
	del := deletes[0].(k8stesting.DeleteActionImpl)
	require.NotNil(t, del.DeleteOptions.Preconditions)
	require.Equal(t, pod.UID, *del.DeleteOptions.Preconditions.UID)
	wj := b.load(t, key)
	require.Equal(t, job.Restarting, wj.Job.Status.State)
	require.EqualValues(t, 1, wj.Job.Status.Restarts)
}

func TestLogTailFallsBackToTerminationMessage(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 1)
	b.kube.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "log" {
			return true, nil, errors.New("dial tcp 127.0.0.1:10250: connection refused")
		}
		return false, nil, nil
	})
	b.setPhase(t, "ty-acme", "tj-worker-0", corev1.PodFailed, 1, "Traceback: ValueError: bad shape")

	b.reconcile(t, key)
	rs := b.load(t, key).Job.Status.Replicas[0]
	require.Equal(t, "Traceback: ValueError: bad shape", rs.LastTermination.LogTail)
	b.reconcile(t, key)
	st := b.load(t, key).Job.Status
	require.Equal(t, job.Failed, st.State)
	require.Contains(t, st.Message, "exit code 1")
	require.Contains(t, st.Message, "ValueError: bad shape", "the failure message quotes the tail")
}

func TestSavesOnlyOnChange(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 2, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 2)
	before := b.load(t, key)
	nEvents := len(b.events(t, key))
	creates := len(b.actions("create", "pods"))

	for range 3 {
		b.reconcile(t, key)
	}
	after := b.load(t, key)
	require.Equal(t, before.Version, after.Version, "nothing changed: no write")
	require.Len(t, b.events(t, key), nEvents)
	require.Len(t, b.actions("create", "pods"), creates, "nothing recreated")

	b.setPhase(t, "ty-acme", "tj-worker-0", corev1.PodRunning, 0, "")
	b.reconcile(t, key)
	require.Greater(t, b.load(t, key).Version, after.Version, "a replica state changed: written")
}

// A job waiting for the scheduler is nobody's: no worker claims it, and a
// cancel before its admission ends it at once, so nothing is ever created.
func TestCancelBeforeAdmissionCreatesNothing(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submitPending(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	b.w.claim(b.ctx)
	require.False(t, b.w.own.Owns(key), "not claimable before admission")

	_, err := b.store.JobCancel(b.ctx, "acme", "tj")
	require.NoError(t, err)
	// The scheduler's decision, taken before the cancel, commits after it.
	res, err := b.store.SchedulerCommit(b.ctx, store.SchedulerCommitParams{Lease: b.schedulerLease(t), Admit: []store.JobKey{key}})
	require.NoError(t, err)
	require.Empty(t, res.Admitted)
	b.w.claim(b.ctx)
	require.False(t, b.w.own.Owns(key))
	require.Empty(t, b.writes(), "nothing was created")
	require.Equal(t, job.Cancelled, b.load(t, key).Job.Status.State)
}

// The first pass over a job just admitted (STARTING, job.Admit) works from
// the row its claim returned: it reads nothing more (a write that moves no
// version, as no real writer's does, is not seen), and it writes nothing
// before it creates the pods: the admission wrote the status it starts
// with.
func TestFirstPassUsesTheClaimedRow(t *testing.T) {
	b := setup(t, listening)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	b.own(t, key)
	claimed := b.load(t, key)
	require.Equal(t, job.Starting, claimed.Job.Status.State)
	_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET spec = jsonb_set(spec, '{replicas,0,image}', '"unseen:1"') WHERE uid = $1`, key.UID)
	require.NoError(t, err)

	b.reconcile(t, key)
	creates := b.actions("create", "pods")
	require.Len(t, creates, 1)
	require.NotEqual(t, "unseen:1", creates[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod).Spec.Containers[0].Image)
	after := b.load(t, key)
	require.Equal(t, job.Starting, after.Job.Status.State)
	require.Equal(t, claimed.Version, after.Version, "the first pass saved nothing")
	_, again := b.w.own.TakeClaimed(key)
	require.False(t, again, "the row serves one pass")
}

// listening gives the worker a listener (not run: nothing arrives), as a
// worker in a process has: claimed rows are kept for their first passes
// only then (Worker.stashGuard).
func listening(c *Config) {
	l, err := store.NewListener("postgres://127.0.0.1:5432/unused", store.ListenerConfig{})
	if err != nil {
		panic(err)
	}
	c.Listener = l
}

// A claim keeps its rows for their first passes only while nothing that
// could make them stale came in during it: a job's notification (any
// job's), or a reconnect of the listener. Without a listener it keeps none.
func TestClaimKeepsRowsOnlyWhenNothingCameIn(t *testing.T) {
	b := setup(t, listening)
	b.tenant(t, "acme", tenant.Quota{})
	before, ok := b.w.stashGuard()
	require.True(t, ok)
	b.w.jobNotified("acme/") // admissions: nothing about a claimed row
	b.w.jobNotified(store.AdmittedPayload("acme", "default"))
	b.w.jobNotified(store.AdmittedPayload("acme", "eu-1"))
	same, _ := b.w.stashGuard()
	require.Equal(t, before, same)
	b.w.jobNotified("acme/01a24491-d333-797a-afea-90c295a8053d") // a cancel, a preemption: not owned yet
	moved, _ := b.w.stashGuard()
	require.NotEqual(t, before, moved)

	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	b.own(t, key)
	_, kept := b.w.own.TakeClaimed(key)
	require.True(t, kept, "a quiet claim keeps its rows")

	plain := setup(t)
	plain.tenant(t, "acme", tenant.Quota{})
	_, ok = plain.w.stashGuard()
	require.False(t, ok)
	key = plain.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	plain.own(t, key)
	_, kept = plain.w.own.TakeClaimed(key)
	require.False(t, kept, "without a listener nothing says a row went stale: the first pass loads")
}

// A cancel that lands between the claim and the first pass notifies the
// job's channel: the worker drops the row its claim returned, and the pass
// loads the job and creates nothing.
func TestCancelAfterClaimCreatesNothing(t *testing.T) {
	b := setup(t, listening)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 2, job.RestartNever)))
	b.own(t, key)
	_, err := b.store.JobCancel(b.ctx, "acme", "tj")
	require.NoError(t, err)
	b.w.jobNotified(key.String()) // the cancel's NOTIFY, as the listener hands it over

	b.reconcile(t, key)
	require.Empty(t, b.writes(), "nothing created on the stale row")
	for range 3 {
		if !b.w.own.Owns(key) {
			break
		}
		b.reconcile(t, key)
	}
	require.Empty(t, b.writes(), "nothing created")
	require.Equal(t, job.Cancelled, b.load(t, key).Job.Status.State)
}

// A cancel whose notification comes only after the first pass took the
// claimed row: that pass creates the pods of the cancelled job, and the
// pass the notification brings removes them and ends the job.
func TestCancelSeenLateRemovesWhatTheFirstPassCreated(t *testing.T) {
	b := setup(t, listening)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 2, job.RestartNever)))
	b.own(t, key)
	_, err := b.store.JobCancel(b.ctx, "acme", "tj")
	require.NoError(t, err)

	b.reconcile(t, key)
	require.Len(t, b.actions("create", "pods"), 2, "the stale row's pass created the pods")
	b.waitCache(t, key, 2)
	b.w.jobNotified(key.String())
	b.reconcile(t, key)
	require.Len(t, b.actions("delete", "pods"), 2)
	require.Equal(t, job.Cancelled, b.load(t, key).Job.Status.State)
}

// A preempted job's pods are deleted (gracefully: the pods carry the job's
// grace period), and once they are gone the job is QUEUED again,
// unadmitted and unowned, its restarts untouched.
func TestPreemptionRequeues(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	sp := spec(replica(job.Worker, 2, job.RestartOnFailure))
	sp.TerminationGracePeriodSeconds = new(int64(45))
	key := b.submit(t, "acme", "tj", sp)
	urgent := b.submitPending(t, "acme", "urgent", spec(replica(job.Worker, 1, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 2)
	for _, a := range b.actions("create", "pods") {
		require.EqualValues(t, 45, *a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Spec.TerminationGracePeriodSeconds)
	}
	_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET status = jsonb_set(status, '{restarts}', '2') WHERE uid = $1`, key.UID)
	require.NoError(t, err)

	res, err := b.store.SchedulerCommit(b.ctx, store.SchedulerCommitParams{Lease: b.schedulerLease(t),
		Preempt: []store.PreemptWrite{{Victim: key, For: urgent.UID, Message: `preempted by job "urgent" (priority 900)`}}})
	require.NoError(t, err)
	require.Len(t, res.Preempted, 1)

	b.reconcile(t, key)
	require.Len(t, b.actions("delete", "pods"), 2, "every pod is deleted")
	for _, a := range b.actions("delete", "pods") {
		require.Nil(t, a.(k8stesting.DeleteAction).GetDeleteOptions().GracePeriodSeconds, "the pod's own grace period applies")
	}
	b.waitCache(t, key, 0)
	b.reconcile(t, key)

	wj := b.load(t, key)
	require.Equal(t, job.Queued, wj.Job.Status.State)
	require.False(t, wj.Admitted)
	require.Empty(t, wj.WorkerID)
	require.Empty(t, wj.PreemptFor)
	require.False(t, b.w.own.Owns(key))
	require.EqualValues(t, 2, wj.Job.Status.Restarts, "a preemption is not a restart")
	require.EqualValues(t, 1, wj.Job.Status.Requeues)
	evs := b.events(t, key)
	last := evs[len(evs)-1]
	require.Equal(t, job.ReasonPreempted, last.Reason)
	require.Contains(t, last.Message, `"urgent"`)

	// Admitted again, it is claimed and its pods are created anew.
	b.admit(t, key)
	b.own(t, key)
	b.reconcile(t, key)
	require.Len(t, b.actions("create", "pods"), 4)
	require.Equal(t, job.Starting, b.load(t, key).Job.Status.State)
}

// Pods that stay unschedulable past the timeout are removed and the job
// goes back to the queue with a backoff, its restarts untouched.
func TestUnschedulableTimeoutRequeues(t *testing.T) {
	b := setup(t, func(c *Config) {
		c.UnschedulableTimeout, c.RequeueBackoff, c.RequeueBackoffMax = time.Minute, 30*time.Second, time.Hour
	})
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 1)
	pod, err := b.kube.CoreV1().Pods("ty-acme").Get(b.ctx, "tj-worker-0", metav1.GetOptions{})
	require.NoError(t, err)
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}}
	_, err = b.kube.CoreV1().Pods("ty-acme").UpdateStatus(b.ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	b.waitPod(t, "ty-acme", "tj-worker-0", func(p *corev1.Pod) bool { return len(p.Status.Conditions) > 0 })

	res := b.reconcile(t, key)
	require.Equal(t, time.Minute, res.after, "looked at again when the timeout passes")
	b.clock.Advance(time.Minute)
	b.reconcile(t, key)
	require.Len(t, b.actions("delete", "pods"), 1)
	b.waitCache(t, key, 0)
	b.reconcile(t, key)

	wj := b.load(t, key)
	require.Equal(t, job.Queued, wj.Job.Status.State)
	require.Equal(t, job.ReasonUnschedulable, wj.Job.Status.Reason)
	require.False(t, wj.Admitted)
	require.Zero(t, wj.Job.Status.Restarts)
	var notBefore time.Time
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT not_before FROM jobs WHERE uid = $1`, key.UID).Scan(&notBefore))
	require.WithinDuration(t, time.Now().Add(30*time.Second), notBefore, 10*time.Second, "the first requeue backs off RequeueBackoff")
}

func TestRequeueBackoff(t *testing.T) {
	c := Config{RequeueBackoff: 30 * time.Second, RequeueBackoffMax: 5 * time.Minute}
	require.Equal(t, 30*time.Second, c.requeueBackoff(1))
	require.Equal(t, time.Minute, c.requeueBackoff(2))
	require.Equal(t, 4*time.Minute, c.requeueBackoff(4))
	require.Equal(t, 5*time.Minute, c.requeueBackoff(5))
	require.Equal(t, 5*time.Minute, c.requeueBackoff(50))
}

func TestCancelRunningDeletesEverything(t *testing.T) {
	b := setup(t)
	b.leadSlices(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 2, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 2)
	for _, n := range []string{"tj-worker-0", "tj-worker-1"} {
		b.kubelet(t, n, corev1.PodRunning) // with addresses: the job's EndpointSlice lists them
	}
	b.reconcile(t, key)
	require.Eventually(t, func() bool { return len(b.actions("create", "endpointslices")) == 1 }, 10*time.Second, 5*time.Millisecond)
	_, err := b.store.JobCancel(b.ctx, "acme", "tj")
	require.NoError(t, err)

	b.reconcile(t, key)
	require.Equal(t, job.Cancelled, b.load(t, key).Job.Status.State)
	require.Len(t, b.actions("delete", "pods"), 2)
	for _, a := range b.actions("delete", "pods") {
		require.NotNil(t, a.(k8stesting.DeleteActionImpl).DeleteOptions.Preconditions.UID)
	}

	// Once the informers show everything gone the job is let go.
	b.waitCache(t, key, 0)
	require.Eventually(t, func() bool {
		objs, _ := b.w.services.GetIndexer().ByIndex(indexJobUID, jobIndexKey("ty-acme", key.UID))
		return len(objs) == 0
	}, 5*time.Second, 5*time.Millisecond)
	b.reconcile(t, key)
	wj := b.load(t, key)
	require.False(t, wj.Active)
	require.True(t, wj.Job.Status.CleanedUp)
	require.False(t, b.w.own.Owns(key))
	require.Eventually(t, func() bool { return len(b.actions("delete", "endpointslices")) == 1 }, 10*time.Second, 5*time.Millisecond,
		"the slice controller deletes the slice once no replica runs")
}

func TestDeadlineTimer(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	s := spec(replica(job.Worker, 1, job.RestartNever))
	s.RunPolicy.ActiveDeadlineSeconds = new(int64(30))
	key := b.submit(t, "acme", "tj", s)
	b.own(t, key)

	res := b.reconcile(t, key)
	require.Equal(t, 30*time.Second, res.after, "the timer is the deadline")
	b.waitCache(t, key, 1)
	b.clock.Advance(10 * time.Second)
	res = b.reconcile(t, key)
	require.Equal(t, 20*time.Second, res.after)

	b.clock.Advance(20 * time.Second)
	b.reconcile(t, key)
	st := b.load(t, key).Job.Status
	require.Equal(t, job.Failed, st.State)
	require.Equal(t, job.ReasonDeadlineExceeded, st.Reason)
	require.Len(t, b.actions("delete", "pods"), 1)
}

func TestDeletedJobIsPurged(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	s := spec(replica(job.Worker, 1, job.RestartNever))
	s.RunPolicy.CleanPodPolicy = job.CleanNone
	key := b.submit(t, "acme", "tj", s)
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 1)
	b.setPhase(t, "ty-acme", "tj-worker-0", corev1.PodSucceeded, 0, "")
	b.reconcile(t, key)
	b.reconcile(t, key)
	require.Equal(t, job.Succeeded, b.load(t, key).Job.Status.State)
	require.False(t, b.w.own.Owns(key), "kept objects without TTL: nothing to do")

	require.NoError(t, b.store.JobDelete(b.ctx, "acme", "tj"))
	b.own(t, key)
	b.reconcile(t, key)
	require.Len(t, b.actions("delete", "pods"), 1)
	b.waitCache(t, key, 0)
	require.Eventually(t, func() bool {
		objs, _ := b.w.services.GetIndexer().ByIndex(indexJobUID, jobIndexKey("ty-acme", key.UID))
		return len(objs) == 0
	}, 5*time.Second, 5*time.Millisecond)
	b.reconcile(t, key)
	_, err := b.store.JobLoad(b.ctx, "acme", key.UID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.False(t, b.w.own.Owns(key))
}

// A finished job whose kept pods wait for a long TTL holds no worker slot
// meanwhile: it is parked in Postgres until the TTL, then claimed again and
// cleaned up. A delete of a parked job is claimable at once.
func TestTTLParksFinishedJob(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	ttl := func(name string) store.JobKey {
		s := spec(replica(job.Worker, 1, job.RestartNever))
		s.RunPolicy.TTLSecondsAfterFinished = new(int32(3600))
		key := b.submit(t, "acme", name, s)
		b.own(t, key)
		b.reconcile(t, key)
		b.waitCache(t, key, 1)
		b.setPhase(t, "ty-acme", name+"-worker-0", corev1.PodSucceeded, 0, "")
		for pass := 0; ; pass++ {
			require.Less(t, pass, 5, "the job ends")
			before := b.load(t, key).Version
			b.reconcile(t, key)
			if wj := b.load(t, key); wj.Job.Status.State == job.Succeeded {
				require.Equal(t, before+1, wj.Version, "the save that ends the job parks it: one write, not a save and a park")
				break
			}
		}
		require.False(t, b.w.own.Owns(key), "parked: not owned while the TTL runs")
		return key
	}
	key := ttl("tj")
	b.w.claim(b.ctx)
	require.False(t, b.w.own.Owns(key), "not claimable before its TTL")

	// Due: claimed again, and the TTL deletes the kept pod.
	_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET claim_after = now() WHERE uid = $1`, key.UID)
	require.NoError(t, err)
	b.clock.Advance(time.Hour)
	b.own(t, key)
	b.reconcile(t, key)
	require.Len(t, b.actions("delete", "pods"), 1)
	b.waitCache(t, key, 0)
	b.reconcile(t, key)
	require.False(t, b.w.own.Owns(key))
	require.True(t, b.load(t, key).Job.Status.CleanedUp)

	// A delete does not wait for the TTL.
	other := ttl("tk")
	require.NoError(t, b.store.JobDelete(b.ctx, "acme", "tk"))
	b.own(t, other)
}

func TestLostLeaseStopsWork(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	b.own(t, key)
	_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET worker_id = 'w2' WHERE uid = $1`, key.UID)
	require.NoError(t, err)
	// A takeover comes only after this worker's lease ran out, long after
	// the first pass used the claimed row: the pass loads the job.
	b.w.own.DropClaimed(key)

	b.reconcile(t, key)
	require.False(t, b.w.own.Owns(key))
	require.Empty(t, b.writes())

	// The renewer drops what another worker took over once the lease ran
	// out; while it is live, renewals need not list the jobs.
	other := b.submit(t, "acme", "tk", spec(replica(job.Worker, 1, job.RestartNever)))
	b.own(t, other)
	b.w.renew(b.ctx)
	require.Equal(t, 1, extended(b.w), "extended without a list")
	require.True(t, b.w.own.Owns(other))
	_, err = b.pool.Exec(b.ctx, `UPDATE worker_leases SET expires_at = now() - interval '1 second'`)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `UPDATE jobs SET worker_id = 'w2' WHERE name = 'tk'`)
	require.NoError(t, err)
	b.w.renew(b.ctx)
	require.Zero(t, b.w.own.Count())
	require.Zero(t, extended(b.w), "the lease ran out: the renewal listed")
}

func TestFencedSaveAfterTakeover(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	b.own(t, key)
	wj := b.load(t, key)
	// Another worker takes the job over between the load and the save.
	_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET worker_id = 'w2' WHERE uid = $1`, key.UID)
	require.NoError(t, err)
	p := &pass{key: key, wj: wj, loaded: wj.Job.Status.State, ns: "ty-acme", now: b.clock.Now()}
	st := wj.Job.Status
	st.Message = "x"
	ok, res, err := b.w.save(b.ctx, p, st, nil, false, 0)
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, result{}, res)
	require.False(t, b.w.own.Owns(key))
}

func TestStuckContainerIsReported(t *testing.T) {
	b := setup(t)
	b.tenant(t, "acme", tenant.Quota{})
	key := b.submit(t, "acme", "tj", spec(replica(job.Worker, 1, job.RestartNever)))
	b.own(t, key)
	b.reconcile(t, key)
	b.waitCache(t, key, 1)
	pod, err := b.kube.CoreV1().Pods("ty-acme").Get(b.ctx, "tj-worker-0", metav1.GetOptions{})
	require.NoError(t, err)
	pod.Status.Phase = corev1.PodPending
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.ContainerName, State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "tf:2"`},
	}}}
	_, err = b.kube.CoreV1().Pods("ty-acme").UpdateStatus(b.ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	b.waitPod(t, "ty-acme", "tj-worker-0", func(p *corev1.Pod) bool { return len(p.Status.ContainerStatuses) > 0 })

	b.reconcile(t, key)
	cond := condition(b.load(t, key).Job.Status, job.CondContainersWaiting)
	require.NotNil(t, cond)
	require.True(t, cond.Status)
	require.Equal(t, "ImagePullBackOff", cond.Reason)
	require.Equal(t, `tj-worker-0: ImagePullBackOff: Back-off pulling image "tf:2"`, cond.Message)
	evs := b.events(t, key)
	require.Equal(t, "ImagePullBackOff", evs[len(evs)-1].Reason)
}

// testCount is how many samples a histogram has, or series a collector.
func testCount(t *testing.T, c prometheus.Collector) int {
	t.Helper()
	if h, ok := c.(prometheus.Histogram); ok {
		var m dto.Metric
		require.NoError(t, h.Write(&m))
		return int(m.GetHistogram().GetSampleCount())
	}
	return testutil.CollectAndCount(c)
}

func condition(st job.Status, typ string) *job.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

func extended(w *Worker) int {
	n, _ := w.keeper.Listing()
	return n
}
