//go:build integration

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// tyctl runs bin/tyctl (beside the trainyard binary; make build builds
// both) against env's server as user, and returns what it printed once it
// exited 0.
func tyctl(t *testing.T, env *harness.Env, user string, args ...string) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(harness.Binary(t)), "tyctl")
	_, err := os.Stat(bin)
	require.NoError(t, err, "tyctl is built beside trainyard: make build")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"TYCTL_SERVER="+env.GRPCAddr, "TYCTL_INSECURE=true", "TYCTL_TENANT="+workerTenant, "TYCTL_TOKEN="+env.Token(user),
		"TYCTL_CONFIG="+filepath.Join(t.TempDir(), "config.yaml"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "tyctl %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// A running job suspended by REST stops its pods and is held SUSPENDED,
// its restart count unchanged; resumed by tyctl, it is queued, admitted
// and runs again to SUCCEEDED. Suspending it once finished is
// FAILED_PRECONDITION naming its state.
func TestSuspendResume(t *testing.T) {
	e := startWorkers(t, 1)
	name := e.submit(t, "pausable", &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 2, annot(cluster.AnnotationRunFor, "12s"))},
	})
	e.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	require.Len(t, e.pods(t, "pausable"), 2)

	rest := e.REST(e.Token("alice"))
	resp := rest.Do(t, "POST", "/v1/"+name+":suspend", map[string]any{})
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	j := e.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_SUSPENDED,
		pb.JobState_JOB_STATE_SUCCEEDED, pb.JobState_JOB_STATE_FAILED, pb.JobState_JOB_STATE_CANCELLED)
	st := j.GetStatus()
	require.Equal(t, pb.JobState_JOB_STATE_SUSPENDED, st.GetState(), "status: %v", st)
	require.Equal(t, "Suspended", st.GetReason())
	require.Zero(t, st.GetRestarts(), "a suspension is not a restart")
	require.Empty(t, e.pods(t, "pausable"), "its pods are gone")

	// Again: nothing changes.
	resp = rest.Do(t, "POST", "/v1/"+name+":suspend", map[string]any{})
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), "JOB_STATE_SUSPENDED")

	out := tyctl(t, e.Env, "alice", "jobs", "resume", "pausable")
	require.Contains(t, out, "job pausable: QUEUED")
	j = e.wait(t, name, 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED, pb.JobState_JOB_STATE_FAILED, pb.JobState_JOB_STATE_CANCELLED)
	st = j.GetStatus()
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, st.GetState(), "status: %v", st)
	require.Zero(t, st.GetRestarts(), "restart count unchanged by suspend and resume")

	resp = rest.Do(t, "POST", "/v1/"+name+":suspend", map[string]any{})
	require.Equal(t, 400, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), "SUCCEEDED")
}

// A suspended job releases what it held: a gang waiting for the GPUs a
// running one holds is admitted once that one is suspended (by gRPC), and
// the suspended one, resumed, waits its turn and then runs to SUCCEEDED.
func TestSuspendReleasesCapacity(t *testing.T) {
	e := startScheduling(t, "pause", nil)
	big := e.submitTo(t, "big", gpuJob(2, 8, 0, annot(cluster.AnnotationRunFor, "8s")))
	e.wait(t, big, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	next := e.submitTo(t, "next", gpuJob(2, 8, 0, annot(cluster.AnnotationRunFor, "3s")))
	j := harness.WaitJob(t, e.jobs, next, 30*time.Second, func(j *pb.Job) bool { return j.GetStatus().GetQueue() != nil })
	require.Equal(t, pb.WaitReason_WAIT_REASON_CAPACITY, j.GetStatus().GetQueue().GetReason())

	_, err := e.jobs.SuspendJob(ctxT(t), &pb.SuspendJobRequest{Name: big})
	require.NoError(t, err)
	b := e.wait(t, big, 60*time.Second, pb.JobState_JOB_STATE_SUSPENDED, pb.JobState_JOB_STATE_SUCCEEDED)
	require.Equal(t, pb.JobState_JOB_STATE_SUSPENDED, b.GetStatus().GetState())
	e.wait(t, next, 60*time.Second, pb.JobState_JOB_STATE_RUNNING, pb.JobState_JOB_STATE_SUCCEEDED)
	require.Equal(t, pb.JobState_JOB_STATE_SUSPENDED, e.get(t, big).GetStatus().GetState(), "not admitted while suspended")

	r, err := e.jobs.ResumeJob(ctxT(t), &pb.ResumeJobRequest{Name: big})
	require.NoError(t, err)
	require.NotEqual(t, pb.JobState_JOB_STATE_SUSPENDED, r.GetStatus().GetState())
	n := e.wait(t, next, 60*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	b = e.wait(t, big, 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED, pb.JobState_JOB_STATE_FAILED)
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, b.GetStatus().GetState(), "status: %v", b.GetStatus())
	require.Zero(t, b.GetStatus().GetRestarts())
	require.False(t, b.GetStatus().GetStartTime().AsTime().Before(n.GetStatus().GetCompletionTime().AsTime().Add(-time.Second)),
		"resumed, it waited for the GPUs the other held")
}
