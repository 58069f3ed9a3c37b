//go:build integration

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// The three-step chain of issue 43, as a user writes it: one file of three
// documents submitted by tyctl as one batch. Each step waits with reason
// DEPENDENCY (naming the step before) until that step succeeded, then
// runs; the outputs of each step's chief (its termination message, which
// the simulated kubelet sets from sim.trainyard.dev/message) reach the next
// step's pods as environment variables and its status.
const pipelineYAML = `name: prep
spec:
  replicas:
    - type: WORKER
      image: tensorflow/tensorflow:2.16.1
      podAnnotations:
        sim.trainyard.dev/run-for: 6s
        sim.trainyard.dev/message: "dataset=gs://datasets/mnist/v7\nrows=60000"
---
name: train
spec:
  dependsOn:
    - job: prep
  replicas:
    - type: CHIEF
      image: tensorflow/tensorflow:2.16.1
      podAnnotations:
        sim.trainyard.dev/run-for: 3s
        sim.trainyard.dev/message: '{"model": "gs://models/mnist/42"}'
    - type: WORKER
      count: 2
      image: tensorflow/tensorflow:2.16.1
      podAnnotations:
        sim.trainyard.dev/run-for: 3s
---
name: publish
spec:
  dependsOn:
    - job: train
      condition: SUCCEEDED
  replicas:
    - type: WORKER
      image: tensorflow/tensorflow:2.16.1
      podAnnotations:
        sim.trainyard.dev/run-for: 1s
`

func TestPipelineRunsInOrder(t *testing.T) {
	e := startWorkers(t, 1)
	file := filepath.Join(t.TempDir(), "pipeline.yaml")
	require.NoError(t, os.WriteFile(file, []byte(pipelineYAML), 0o600))
	out := tyctl(t, e.Env, "alice", "jobs", "submit", "-f", file, "--request-id", "run-42")
	require.Contains(t, out, "job publish submitted")
	prep, train, publish := harness.JobName(workerTenant, "prep"), harness.JobName(workerTenant, "train"), harness.JobName(workerTenant, "publish")

	// While prep runs, train waits for it, outside the line.
	j := harness.WaitJob(t, e.jobs, train, 30*time.Second, func(j *pb.Job) bool {
		return j.GetStatus().GetQueue().GetReason() == pb.WaitReason_WAIT_REASON_DEPENDENCY
	})
	require.Equal(t, "prep", j.GetStatus().GetQueue().GetBlockedBy())
	require.Contains(t, j.GetStatus().GetQueue().GetMessage(), "waits for job prep to succeed")
	require.Zero(t, j.GetStatus().GetQueue().GetTenantPosition())
	require.Equal(t, e.get(t, prep).GetUid(), j.GetSpec().GetDependsOn()[0].GetJobUid())

	done := []pb.JobState{pb.JobState_JOB_STATE_SUCCEEDED, pb.JobState_JOB_STATE_FAILED, pb.JobState_JOB_STATE_CANCELLED}
	p := e.wait(t, publish, 120*time.Second, done...)
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, p.GetStatus().GetState(), "status: %v", p.GetStatus())
	pr, tr := e.get(t, prep), e.get(t, train)
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, tr.GetStatus().GetState())
	require.False(t, tr.GetStatus().GetStartTime().AsTime().Before(pr.GetStatus().GetCompletionTime().AsTime()), "train started after prep ended")
	require.False(t, p.GetStatus().GetStartTime().AsTime().Before(tr.GetStatus().GetCompletionTime().AsTime()), "publish started after train ended")

	// Parameters flow forward: outputs in GetJob, results in the
	// dependent's status and in its pods' environment.
	require.Equal(t, map[string]string{"dataset": "gs://datasets/mnist/v7", "rows": "60000"}, pr.GetStatus().GetOutputs())
	require.Equal(t, map[string]string{"model": "gs://models/mnist/42"}, tr.GetStatus().GetOutputs())
	d := tr.GetStatus().GetDependencies()[0]
	require.Equal(t, "prep", d.GetJob())
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, d.GetState())
	require.Equal(t, int32(0), d.GetExitCodes()["worker-0"])
	require.Equal(t, "gs://datasets/mnist/v7", d.GetOutputs()["dataset"])

	env := podEnv(t, e, "train")
	require.Equal(t, "SUCCEEDED", env["TRAINYARD_DEP_PREP_STATE"])
	require.Equal(t, "0", env["TRAINYARD_DEP_PREP_EXIT_CODE"])
	require.Equal(t, "gs://datasets/mnist/v7", env["TRAINYARD_DEP_PREP_OUTPUT_DATASET"])
	require.Equal(t, "60000", env["TRAINYARD_DEP_PREP_OUTPUT_ROWS"])
	env = podEnv(t, e, "publish")
	require.Equal(t, "gs://models/mnist/42", env["TRAINYARD_DEP_TRAIN_OUTPUT_MODEL"])
	require.Equal(t, "chief-0=0,worker-0=0,worker-1=0", env["TRAINYARD_DEP_TRAIN_EXIT_CODES"])

	out = tyctl(t, e.Env, "alice", "jobs", "get", "publish")
	require.Contains(t, out, "train (SUCCEEDED: was SUCCEEDED)")
}

// A failing step fails the rest of the chain with DependencyFailed, each
// naming the job it depended on; CANCEL cancels instead; a FINISHED
// dependent runs anyway and reads the failure (state, exit code).
func TestPipelineFailureFailsTheRest(t *testing.T) {
	e := startWorkers(t, 1)
	w := func(annotations map[string]string) []*pb.ReplicaSpec {
		return []*pb.ReplicaSpec{rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, annotations)}
	}
	dep := func(job string, c pb.DependencyCondition) []*pb.JobDependency {
		return []*pb.JobDependency{{Job: job, Condition: c}}
	}
	resp, err := e.jobs.BatchCreateJobs(ctxT(t), &pb.BatchCreateJobsRequest{Parent: harness.TenantName(workerTenant), Requests: []*pb.CreateJobRequest{
		{JobId: "prep", Job: &pb.Job{Spec: &pb.JobSpec{Replicas: w(annot(cluster.AnnotationRunFor, "2s", cluster.AnnotationExitCode, "3"))}}},
		{JobId: "train", Job: &pb.Job{Spec: &pb.JobSpec{Replicas: w(nil), DependsOn: dep("prep", 0)}}},
		{JobId: "publish", Job: &pb.Job{Spec: &pb.JobSpec{Replicas: w(nil), DependsOn: dep("train", 0)}}},
		{JobId: "notify", Job: &pb.Job{Spec: &pb.JobSpec{Replicas: w(nil), DependsOn: dep("train", pb.DependencyCondition_DEPENDENCY_CONDITION_STARTED),
			OnDependencyFailure: pb.OnDependencyFailure_ON_DEPENDENCY_FAILURE_CANCEL}}},
		{JobId: "report", Job: &pb.Job{Spec: &pb.JobSpec{Replicas: w(annot(cluster.AnnotationRunFor, "1s")), DependsOn: dep("prep", pb.DependencyCondition_DEPENDENCY_CONDITION_FINISHED)}}},
	}})
	require.NoError(t, err)
	require.Len(t, resp.GetJobs(), 5)
	done := []pb.JobState{pb.JobState_JOB_STATE_SUCCEEDED, pb.JobState_JOB_STATE_FAILED, pb.JobState_JOB_STATE_CANCELLED}
	name := func(id string) string { return harness.JobName(workerTenant, id) }

	for id, want := range map[string]struct {
		state pb.JobState
		dep   string
	}{
		"train":   {pb.JobState_JOB_STATE_FAILED, "prep"},
		"publish": {pb.JobState_JOB_STATE_FAILED, "train"},
		"notify":  {pb.JobState_JOB_STATE_CANCELLED, "train"},
	} {
		j := e.wait(t, name(id), 90*time.Second, done...)
		st := j.GetStatus()
		require.Equal(t, want.state, st.GetState(), "%s: %v", id, st)
		require.Equal(t, "DependencyFailed", st.GetReason(), id)
		require.Contains(t, st.GetMessage(), "dependency "+want.dep, id)
		require.Nil(t, st.GetStartTime(), "%s never started", id)
		require.Empty(t, e.pods(t, id), "%s never had pods", id)
	}
	require.Contains(t, e.get(t, name("train")).GetStatus().GetMessage(), "dependency prep ended FAILED")
	p := e.get(t, name("prep"))
	require.Equal(t, pb.JobState_JOB_STATE_FAILED, p.GetStatus().GetState())

	r := e.wait(t, name("report"), 90*time.Second, done...)
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, r.GetStatus().GetState(), "FINISHED is met by a failure: %v", r.GetStatus())
	env := podEnv(t, e, "report")
	require.Equal(t, "FAILED", env["TRAINYARD_DEP_PREP_STATE"])
	require.Equal(t, "3", env["TRAINYARD_DEP_PREP_EXIT_CODE"])
}

// STARTED lets an evaluator start beside its trainer: it is admitted once
// the trainer runs, and both run at once.
func TestPipelineStartedRunsBeside(t *testing.T) {
	e := startWorkers(t, 1)
	trainer := e.submit(t, "trainer", &pb.JobSpec{Replicas: []*pb.ReplicaSpec{
		rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 2, annot(cluster.AnnotationRunFor, "20s"))}})
	evaluator := e.submit(t, "evaluator", &pb.JobSpec{
		DependsOn: []*pb.JobDependency{{Job: "trainer", Condition: pb.DependencyCondition_DEPENDENCY_CONDITION_STARTED}},
		Replicas:  []*pb.ReplicaSpec{rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, annot(cluster.AnnotationRunForever, "true"))},
	})
	ev := e.wait(t, evaluator, 60*time.Second, pb.JobState_JOB_STATE_RUNNING, pb.JobState_JOB_STATE_FAILED, pb.JobState_JOB_STATE_CANCELLED)
	require.Equal(t, pb.JobState_JOB_STATE_RUNNING, ev.GetStatus().GetState(), "status: %v", ev.GetStatus())
	require.Equal(t, pb.JobState_JOB_STATE_RUNNING, e.get(t, trainer).GetStatus().GetState(), "the trainer still runs beside it")
	d := ev.GetStatus().GetDependencies()[0]
	require.Equal(t, pb.JobState_JOB_STATE_RUNNING, d.GetState(), "the trainer's state at the evaluator's admission")
	require.Equal(t, "RUNNING", podEnv(t, e, "evaluator")["TRAINYARD_DEP_TRAINER_STATE"])
	_, err := e.jobs.CancelJob(ctxT(t), &pb.CancelJobRequest{Name: evaluator})
	require.NoError(t, err)
}

// podEnv is the literal environment of a job's first pod's container.
func podEnv(t *testing.T, e *workerEnv, jobID string) map[string]string {
	t.Helper()
	var pods []corev1.Pod
	require.Eventually(t, func() bool { pods = e.pods(t, jobID); return len(pods) > 0 }, 30*time.Second, 100*time.Millisecond, "pods of %s", jobID)
	out := map[string]string{}
	for _, v := range pods[0].Spec.Containers[0].Env {
		out[v.Name] = v.Value
	}
	return out
}

func (e *workerEnv) get(t *testing.T, name string) *pb.Job {
	t.Helper()
	j, err := e.jobs.GetJob(ctxT(t), &pb.GetJobRequest{Name: name})
	require.NoError(t, err)
	return j
}
