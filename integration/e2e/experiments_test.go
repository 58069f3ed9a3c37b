//go:build integration

package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// An experiment over simulated trials whose loss curve is picked by a
// parameter (sim.trainyard.dev/metrics-curve: "${trial.q}"; curve q's loss
// grows with q): the worker reads the trials' metric lines from their
// pods' logs, successive halving stops the trials that lag, at most
// parallelism trials run at once, the tenant's quota (2 pods) holds the
// third back as it would any job, and the experiment ends with the
// curve-0 trial best and its final loss the curve's last point.
func TestExperimentFindsTheBestTrialAndStopsTheWorst(t *testing.T) {
	e := startWorkers(t, 1, "--trial-metrics-interval=1s", "--experiment-period=1s")
	exps := pb.NewExperimentServiceClient(e.Conn(t, e.Token("alice")))
	const parallelism, quotaPods = 3, 2
	_, err := e.Tenants(t, e.AdminToken()).UpdateTenant(ctxT(t), &pb.UpdateTenantRequest{
		Tenant:     &pb.Tenant{Name: harness.TenantName(workerTenant), Quota: &pb.Quota{Pods: quotaPods}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"quota.pods"}},
	})
	require.NoError(t, err)
	created, err := exps.CreateExperiment(ctxT(t), &pb.CreateExperimentRequest{
		Parent: harness.TenantName(workerTenant), ExperimentId: "curves",
		Experiment: &pb.Experiment{Spec: &pb.ExperimentSpec{
			Template: &pb.JobTemplate{Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{
				rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, annot(cluster.AnnotationRunFor, "8s", cluster.AnnotationMetricsCurve, "${trial.q}")),
			}}},
			Parameters:    []*pb.Parameter{{Name: "q", Kind: "int", Min: 0, Max: cluster.MetricsCurves - 1}},
			Objective:     &pb.Objective{Metric: "loss", Direction: "minimize"},
			Algorithm:     &pb.Algorithm{Name: "grid"},
			Parallelism:   parallelism,
			MaxTrials:     cluster.MetricsCurves,
			EarlyStopping: &pb.EarlyStopping{Rule: "asha", Asha: &pb.AshaSettings{MinResource: 1, Eta: 3}},
		}},
	})
	require.NoError(t, err)

	var (
		exp        *pb.Experiment
		mostActive int
	)
	require.Eventually(t, func() bool {
		jobs, err := e.jobs.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: harness.TenantName(workerTenant), PageSize: 100})
		require.NoError(t, err)
		active := 0
		for _, j := range jobs.GetJobs() {
			switch j.GetStatus().GetState() {
			case pb.JobState_JOB_STATE_STARTING, pb.JobState_JOB_STATE_RUNNING, pb.JobState_JOB_STATE_RESTARTING:
				active++
			}
		}
		mostActive = max(mostActive, active)
		require.LessOrEqual(t, active, quotaPods, "the tenant's quota holds for trials too")
		trials, err := exps.ListTrials(ctxT(t), &pb.ListTrialsRequest{Parent: created.GetName()})
		require.NoError(t, err)
		running := 0
		for _, tr := range trials.GetTrials() {
			if tr.GetState() == pb.TrialState_TRIAL_STATE_RUNNING {
				running++
			}
		}
		require.LessOrEqual(t, running, parallelism, "parallelism")
		exp, err = exps.GetExperiment(ctxT(t), &pb.GetExperimentRequest{Name: created.GetName()})
		require.NoError(t, err)
		return exp.GetState() != pb.ExperimentState_EXPERIMENT_STATE_RUNNING
	}, 4*time.Minute, 250*time.Millisecond)
	require.Equal(t, pb.ExperimentState_EXPERIMENT_STATE_SUCCEEDED, exp.GetState(), exp.GetStateReason())
	// A trial waited for the quota: its Waiting event says so (a QUEUED
	// state lasts too short a while to be sure to be seen by polling).
	quotaHeld := false
	all, err := e.jobs.ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: harness.TenantName(workerTenant), PageSize: 100})
	require.NoError(t, err)
	for _, j := range all.GetJobs() {
		events, err := e.jobs.ListJobEvents(ctxT(t), &pb.ListJobEventsRequest{Parent: j.GetName(), PageSize: 200})
		require.NoError(t, err)
		for _, ev := range events.GetEvents() {
			quotaHeld = quotaHeld || (ev.GetReason() == "Waiting" && strings.HasPrefix(ev.GetMessage(), "QUOTA"))
		}
	}
	require.True(t, quotaHeld, "a trial waited for the tenant's quota")
	require.Equal(t, quotaPods, mostActive, "as many trials ran at once as the quota allows")

	best := exp.GetBestTrial()
	require.Equal(t, "0", best.GetParameters()["q"], "the best curve wins")
	require.InDelta(t, cluster.MetricsCurveLoss(0, cluster.MetricsSteps), best.GetObjective(), 1e-12, "the last reported point")

	trials, err := exps.ListTrials(ctxT(t), &pb.ListTrialsRequest{Parent: created.GetName()})
	require.NoError(t, err)
	require.Len(t, trials.GetTrials(), cluster.MetricsCurves)
	stopped := 0
	for _, tr := range trials.GetTrials() {
		q, _ := strconv.Atoi(tr.GetParameters()["q"])
		switch tr.GetState() {
		case pb.TrialState_TRIAL_STATE_EARLY_STOPPED:
			stopped++
			require.NotZero(t, q, "the best trial is never stopped")
			require.Contains(t, tr.GetStateReason(), "successive halving")
		case pb.TrialState_TRIAL_STATE_SUCCEEDED:
		default:
			t.Errorf("trial %d (q=%d): %s %s", tr.GetIndex(), q, tr.GetState(), tr.GetStateReason())
		}
		j, err := e.jobs.GetJob(ctxT(t), &pb.GetJobRequest{Name: tr.GetJob()})
		require.NoError(t, err)
		require.Equal(t, "curves", j.GetLabels()["trainyard.dev/experiment"])
	}
	require.GreaterOrEqual(t, stopped, cluster.MetricsCurves/2, "most of the worse trials are stopped early")

	// The REST paths the console reads.
	rest := e.REST(e.Token("alice"))
	resp := rest.Do(t, "GET", "/v1/"+created.GetName()+"/trials", nil)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), `"TRIAL_STATE_EARLY_STOPPED"`)
	resp = rest.Do(t, "GET", "/v1/"+best.GetName()+"/metrics?metric=loss", nil)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), `"metric":"loss"`)

	metrics, err := exps.GetTrialMetrics(ctxT(t), &pb.GetTrialMetricsRequest{Name: best.GetName()})
	require.NoError(t, err)
	require.Len(t, metrics.GetSeries(), 1)
	require.Len(t, metrics.GetSeries()[0].GetPoints(), cluster.MetricsSteps, "every point, each once")
}
