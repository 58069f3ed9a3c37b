//go:build integration

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// End-to-end tests of sharing across tenants (issue 42) on the local
// cluster's two 8-GPU nodes.

// sharingTenant creates a tenant of alice's with the given quota and
// sharing, and waits for its namespace.
func sharingTenant(t *testing.T, e *workerEnv, id string, quota *pb.Quota, sh *pb.Sharing) *schedEnv {
	t.Helper()
	e.CreateTenantWith(t, id, &pb.Tenant{
		Members: []*pb.Member{harness.Subject("alice", pb.Role_ROLE_EDITOR)},
		Quota:   quota, Sharing: sh,
	})
	e.waitNS(t, e.Namespace(id))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.Cluster.Client().CoreV1().Namespaces().Delete(ctx, e.Namespace(id), metav1.DeleteOptions{})
	})
	return &schedEnv{workerEnv: e, tenant: id}
}

// preemptedCondition is a job's Preempted condition's message ("" when
// it has none).
func preemptedCondition(j *pb.Job) string {
	for _, c := range j.GetStatus().GetConditions() {
		if c.GetType() == "Preempted" {
			return c.GetMessage()
		}
	}
	return ""
}

// Tenants A and B share a cohort, 8 GPUs nominal each. A borrows all 16;
// B submits an 8-GPU job; within a cycle A's most recently started job
// (the borrower) is stopped and goes back to the queue with a Preempted
// condition naming B's job; B's job runs; A's runs again after it, its
// restarts unchanged. A's other job, inside its nominal quota, is never
// touched.
func TestSharingReclaimAcrossTenants(t *testing.T) {
	waitGPUsFree(t)
	e := startWorkers(t, 1)
	nominal := &pb.Quota{Gpu: 8}
	a := sharingTenant(t, e, "share-a", nominal, &pb.Sharing{Cohort: "lab"})
	b := sharingTenant(t, e, "share-b", nominal, &pb.Sharing{Cohort: "lab"})

	a1 := a.submitTo(t, "a1", gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "40s")))
	a.wait(t, a1, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	spec := gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "6s"))
	spec.TerminationGracePeriodSeconds = new(int64(2))
	a2 := a.submitTo(t, "a2", spec)
	a.wait(t, a2, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)

	submitted := time.Now()
	b1 := b.submitTo(t, "b1", gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "4s")))

	victim := harness.WaitJob(t, a.jobs, a2, 30*time.Second, func(j *pb.Job) bool { return j.GetStatus().GetRequeues() >= 1 })
	cond := preemptedCondition(victim)
	t.Logf("a2's Preempted condition: %s", cond)
	require.Contains(t, cond, `job "b1" of tenant share-b`, "the condition names B's job")
	require.Contains(t, cond, "reclaim in cohort lab")
	require.EqualValues(t, 0, victim.GetStatus().GetRestarts(), "a preemption is not a restart")

	bj := b.wait(t, b1, 60*time.Second, pb.JobState_JOB_STATE_RUNNING, pb.JobState_JOB_STATE_SUCCEEDED)
	startedIn := bj.GetStatus().GetStartTime().AsTime().Sub(submitted)
	t.Logf("B's job started %s after it was submitted", startedIn)
	require.Less(t, startedIn, 20*time.Second, "a cycle, and the victim's grace period")

	j := a.get(t, a1)
	require.Equal(t, pb.JobState_JOB_STATE_RUNNING, j.GetStatus().GetState(), "A's job within its nominal quota runs on")
	require.EqualValues(t, 0, j.GetStatus().GetRequeues())

	bDone := b.wait(t, b1, 60*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	v := a.wait(t, a2, 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	require.EqualValues(t, 0, v.GetStatus().GetRestarts(), "its restart count is unchanged")
	require.EqualValues(t, 1, v.GetStatus().GetRequeues())
	require.False(t, v.GetStatus().GetStartTime().AsTime().Before(bDone.GetStatus().GetCompletionTime().AsTime().Add(-time.Second)),
		"it ran again once B's job had ended")
	require.Equal(t, pb.JobState_JOB_STATE_RUNNING, a.get(t, a1).GetStatus().GetState(), "A's nominal job was never stopped")
}

// A tenant's GPU-hour budget runs out: its next GPU job waits with reason
// BUDGET and the period's reset as its estimated start, though the nodes
// are free, and GetTenant shows the budget used up.
func TestSharingBudgetHoldsTheNextJob(t *testing.T) {
	waitGPUsFree(t)
	e := startWorkers(t, 1)
	// 0.002 GPU-hours: 7.2 GPU-seconds, a second of 8 GPUs.
	s := sharingTenant(t, e, "budget", nil, &pb.Sharing{Budget: &pb.Budget{GpuHours: 0.002}})
	first := s.submitTo(t, "first", gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "3s")))
	s.wait(t, first, 60*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)

	next := s.submitTo(t, "next", gpuJob(1, 1, 0, nil))
	j := harness.WaitJob(t, s.jobs, next, 30*time.Second, func(j *pb.Job) bool {
		return j.GetStatus().GetQueue().GetReason() == pb.WaitReason_WAIT_REASON_BUDGET
	})
	q := j.GetStatus().GetQueue()
	require.Equal(t, pb.JobState_JOB_STATE_QUEUED, j.GetStatus().GetState())
	require.Contains(t, q.GetMessage(), "GPU-hour budget is used up")
	require.NotNil(t, q.GetEstimatedStartTime(), "the period's reset")
	require.True(t, q.GetEstimatedStartTime().AsTime().After(time.Now()))

	tenants := e.Tenants(t, e.AdminToken())
	require.Eventually(t, func() bool {
		tn, err := tenants.GetTenant(ctxT(t), &pb.GetTenantRequest{Name: harness.TenantName("budget")})
		require.NoError(t, err)
		st := tn.GetSharingStatus()
		return st.GetBudgetUsedGpuHours() >= 0.002 && st.GetBudgetRemainingGpuHours() == 0 && st.GetBudgetResetTime() != nil
	}, 30*time.Second, 200*time.Millisecond, "the ledger is written every few seconds")
}
