package job_test

import (
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/job"
)

func TestPlanDeadline(t *testing.T) {
	mk := func() *jobBuilder { return chiefWorkersPS().deadline(600).state(job.Running) }
	runTable(t, map[string]struct {
		in   job.PlanInput
		want want
	}{
		"before: the timer fires when the deadline passes": {
			in:   mk().observe(allRunning()...).now(started.Add(590 * time.Second)).obj(),
			want: want{State: job.Running, RequeueAfter: 10 * time.Second},
		},
		"just before, to the nanosecond": {
			in:   mk().observe(allRunning()...).now(started.Add(600*time.Second - 1)).obj(),
			want: want{State: job.Running, RequeueAfter: 1},
		},
		"at the deadline: failed, running pods cleaned": {
			in: mk().observe(allRunning()...).now(started.Add(600 * time.Second)).obj(),
			want: want{
				State: job.Failed, Reason: job.ReasonDeadlineExceeded, Message: "Job ran past its active deadline of 600s",
				Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Warning/DeadlineExceeded"},
			},
		},
		"at the deadline while a termination is being recorded: log captured, then cleaned": {
			in: mk().observe(withPod(allRunning(), pod(job.Worker, 1, job.PodFailed))...).now(started.Add(601 * time.Second)).obj(),
			want: want{
				State: job.Failed, Reason: job.ReasonDeadlineExceeded,
				Actions: []job.Action{captureLog(job.Worker, 1, 0), deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Warning/DeadlineExceeded"},
			},
		},
		"a recorded success wins over a deadline passed since": {
			in: mk().rep(job.Chief, 0, 0, job.ReplicaSucceeded, term(0, 0, "Completed", "")).
				observe(withPod(allRunning(), pod(job.Chief, 0, job.PodSucceeded))...).now(started.Add(601 * time.Second)).obj(),
			want: want{
				State: job.Succeeded, Reason: job.ReasonSucceeded,
				Actions: []job.Action{deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Normal/JobSucceeded"},
			},
		},
		"queued: the deadline has not started": {
			in:   chiefWorkersPS().deadline(1).notAdmitted().now(t0.Add(time.Hour)).obj(),
			want: want{State: job.Queued},
		},
	})
}

func TestPlanFinished(t *testing.T) {
	// A FAILED job whose chief failed, with a worker still running, a PS
	// pending, the service and TensorBoard.
	left := []job.ObservedPod{pod(job.Chief, 0, job.PodFailed), pod(job.Worker, 0, job.PodRunning), pod(job.Worker, 1, job.PodSucceeded), pod(job.PS, 0, job.PodPending)}
	failed := func() *jobBuilder {
		return chiefWorkersPS().tensorBoard().state(job.Failed).rep(job.Chief, 0, 0, job.ReplicaFailed, term(0, 1, "Error", "")).observe(left...)
	}
	succeededAgo := func(ago time.Duration) *jobBuilder {
		b := chiefWorkersPS().ttl(60).state(job.Succeeded)
		end := t0.Add(-ago)
		b.in.Job.Status.CompletionTime = &end
		return b
	}
	finishedPods := []job.ObservedPod{pod(job.Chief, 0, job.PodSucceeded), pod(job.Worker, 0, job.PodSucceeded), pod(job.Worker, 1, job.PodFailed), pod(job.PS, 0, job.PodFailed)}
	runTable(t, map[string]struct {
		in   job.PlanInput
		want want
	}{
		"CleanPodPolicy None: everything kept, forgotten": {
			in:   failed().clean(job.CleanNone).obj(),
			want: want{State: job.Failed, Forget: true},
		},
		"CleanPodPolicy Running: unfinished pods, tensorboard and service deleted": {
			in: failed().clean(job.CleanRunning).obj(),
			want: want{
				State:   job.Failed,
				Actions: []job.Action{deletePod(job.Worker, 0, 0), deletePod(job.PS, 0, 0), deleteTB},
			},
		},
		"CleanPodPolicy Running, deletions under way: wait": {
			in: failed().clean(job.CleanRunning).observe(pod(job.Chief, 0, job.PodFailed), pod(job.Worker, 0, job.PodRunning, deleting)).obj(),
			want: want{
				State:   job.Failed,
				Actions: []job.Action{deleteTB},
			},
		},
		"CleanPodPolicy Running, done: forgotten": {
			in: func() job.PlanInput {
				b := failed().clean(job.CleanRunning).observe(pod(job.Chief, 0, job.PodFailed), pod(job.Worker, 1, job.PodSucceeded))
				b.in.Observed.TensorBoardPod, b.in.Observed.TensorBoardSvc = false, false
				return b.obj()
			}(),
			want: want{State: job.Failed, Actions: []job.Action{}, Forget: true},
		},
		"CleanPodPolicy All: everything deleted": {
			in: failed().clean(job.CleanAll).obj(),
			want: want{
				State:   job.Failed,
				Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0), deleteTB},
			},
		},
		"CleanPodPolicy All, all gone: cleaned up, forgotten": {
			in:   failed().clean(job.CleanAll).nothingLeft().obj(),
			want: want{State: job.Failed, CleanedUp: true, Forget: true},
		},
		"CleanPodPolicy None, a kept replica still runs: the Service stays with it": {
			in:   chiefWorkersPS().clean(job.CleanNone).state(job.Succeeded).observe(pod(job.Chief, 0, job.PodSucceeded), pod(job.Worker, 0, job.PodRunning)).obj(),
			want: want{State: job.Succeeded, Forget: true},
		},
		"CleanPodPolicy Running, every replica finished: the pods stay, the job is let go": {
			in:   chiefWorkersPS().clean(job.CleanRunning).state(job.Succeeded).observe(pod(job.Chief, 0, job.PodSucceeded), pod(job.Worker, 0, job.PodSucceeded)).obj(),
			want: want{State: job.Succeeded, Actions: []job.Action{}, Forget: true},
		},
		"a finished job never recreates a replica": {
			in:   chiefWorkersPS().clean(job.CleanNone).state(job.Succeeded).observe(pod(job.Chief, 0, job.PodSucceeded)).obj(),
			want: want{State: job.Succeeded, Actions: []job.Action{}, Forget: true},
		},
		"a finished job ignores a failed pod": {
			in:   chiefWorkersPS().clean(job.CleanNone).state(job.Succeeded).observe(pod(job.Chief, 0, job.PodSucceeded), pod(job.Worker, 0, job.PodFailed, exit(137, "OOMKilled"))).obj(),
			want: want{State: job.Succeeded, Actions: []job.Action{}, Forget: true},
		},
		"TTL pending: kept until then, timer set": {
			in:   succeededAgo(20 * time.Second).observe(finishedPods...).obj(),
			want: want{State: job.Succeeded, Actions: []job.Action{}, RequeueAfter: 40 * time.Second},
		},
		"TTL passed: everything deleted": {
			in: succeededAgo(60 * time.Second).observe(finishedPods...).obj(),
			want: want{
				State:   job.Succeeded,
				Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)},
			},
		},
		"TTL passed, all gone: cleaned up, forgotten": {
			in:   succeededAgo(time.Hour).obj(),
			want: want{State: job.Succeeded, CleanedUp: true, Forget: true},
		},
		"TTL pending but nothing left: forgotten": {
			in:   succeededAgo(time.Second).clean(job.CleanAll).obj(),
			want: want{State: job.Succeeded, CleanedUp: true, Forget: true},
		},
		"deleted: everything goes": {
			in: failed().clean(job.CleanNone).deleted().obj(),
			want: want{
				State:   job.Failed,
				Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0), deleteTB},
			},
		},
		"deleted, pods still terminating: wait": {
			in: func() job.PlanInput {
				b := failed().deleted().nothingLeft()
				b.in.Observed.Pods = []job.ObservedPod{pod(job.Chief, 0, job.PodFailed, deleting)}
				return b.obj()
			}(),
			want: want{State: job.Failed},
		},
		"deleted, nothing left: forgotten": {
			in:   failed().deleted().nothingLeft().obj(),
			want: want{State: job.Failed, CleanedUp: true, Forget: true},
		},
		"deleted while running: cancelled, everything goes": {
			in: chiefWorkersPS().state(job.Running).deleted().observe(allRunning()...).obj(),
			want: want{
				State: job.Cancelled, Reason: job.ReasonCancelled,
				Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Normal/Cancelled"},
			},
		},
	})
}

func TestPlanCancel(t *testing.T) {
	deleteAll := []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0), deleteTB}
	runTable(t, map[string]struct {
		in   job.PlanInput
		want want
	}{
		"queued: cancelled at once, nothing to clean": {
			in:   chiefWorkersPS().notAdmitted().cancel().obj(),
			want: want{State: job.Cancelled, Reason: job.ReasonCancelled, Events: []string{"Normal/Cancelled"}, CleanedUp: true, Forget: true},
		},
		"starting: every pod, tensorboard and the service deleted": {
			in: chiefWorkersPS().tensorBoard().state(job.Starting).cancel().
				observe(pod(job.Chief, 0, job.PodPending), pod(job.Worker, 0, job.PodRunning), pod(job.Worker, 1, job.PodPending), pod(job.PS, 0, job.PodPending)).obj(),
			want: want{State: job.Cancelled, Reason: job.ReasonCancelled, Actions: deleteAll, Events: []string{"Normal/Cancelled"}},
		},
		"running: everything deleted, even with CleanPodPolicy None": {
			in:   chiefWorkersPS().tensorBoard().clean(job.CleanNone).state(job.Running).cancel().observe(allRunning()...).obj(),
			want: want{State: job.Cancelled, Reason: job.ReasonCancelled, Actions: deleteAll, Events: []string{"Normal/Cancelled"}},
		},
		"restarting: pods not already deleting are deleted": {
			in: chiefWorkersPS().state(job.Restarting).restarts(1).rep(job.Worker, 1, 1, job.ReplicaPending, term(0, 1, "Error", "")).cancel().
				observe(withPod(allRunning(), pod(job.Worker, 1, job.PodFailed, deleting))...).obj(),
			want: want{
				State: job.Cancelled, Reason: job.ReasonCancelled, Restarts: 1,
				Actions: []job.Action{deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Normal/Cancelled"},
			},
		},
		"while a failure is being recorded: log captured before the pods go": {
			in: chiefWorkersPS().state(job.Running).cancel().observe(withPod(allRunning(), pod(job.Worker, 0, job.PodFailed))...).obj(),
			want: want{
				State: job.Cancelled, Reason: job.ReasonCancelled,
				Actions: []job.Action{captureLog(job.Worker, 0, 0), deletePod(job.Chief, 0, 0), deletePod(job.Worker, 0, 0), deletePod(job.Worker, 1, 0), deletePod(job.PS, 0, 0)},
				Events:  []string{"Normal/Cancelled"},
			},
		},
		"already final: a cancel changes nothing": {
			in:   chiefWorkersPS().clean(job.CleanNone).state(job.Succeeded).cancel().observe(pod(job.Chief, 0, job.PodSucceeded)).obj(),
			want: want{State: job.Succeeded, Actions: []job.Action{}, Forget: true},
		},
	})
}
