package job_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// Only a distributed job (more than one replica in total) gets the headless
// Service its replicas resolve each other through.
func TestPlanCreatesTheServiceOnlyForADistributedJob(t *testing.T) {
	kinds := func(r job.PlanResult) []job.ActionKind {
		var out []job.ActionKind
		for _, a := range r.Actions {
			out = append(out, a.Kind)
		}
		return out
	}
	single := job.Plan(newJob(replicaSpec(job.Worker, 1, job.RestartNever)).noService().obj())
	require.Equal(t, []job.ActionKind{job.ActCreatePod}, kinds(single), "one replica: the pod alone")
	require.False(t, newJob(replicaSpec(job.Chief, 1, job.RestartNever)).obj().Job.Spec.Distributed())

	two := job.Plan(newJob(replicaSpec(job.Worker, 2, job.RestartNever)).noService().obj())
	require.Equal(t, []job.ActionKind{job.ActCreateService, job.ActCreatePod, job.ActCreatePod}, kinds(two))
	require.True(t, newJob(replicaSpec(job.Chief, 1, job.RestartNever), replicaSpec(job.PS, 1, job.RestartNever)).obj().Job.Spec.Distributed())
}
