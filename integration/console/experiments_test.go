//go:build integration

package console

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/experiment"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tune"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// TestConsoleExperiments opens the Experiments page of a finished
// experiment seeded through the store: 16 trials of a learning-rate and
// width sweep with a loss curve each (10 steps; the loss is least near
// lr 0.01 and grows with width's distance from 128), the worst stopped
// early at step 3. The page shows the best trial, the trials table in
// order of loss, the scatter of the parameter against the loss, and a
// trial's curve (the screenshot experiments.png).
func TestConsoleExperiments(t *testing.T) {
	// Dev auth turns the console's token field on (see startConsole).
	devTokens := filepath.Join(t.TempDir(), "tokens.yaml")
	require.NoError(t, os.WriteFile(devTokens, []byte("tokens:\n  - {token: carol-local-token, subject: carol}\n"), 0o600))
	env := harness.Start(t, harness.Options{ServeArgs: []string{"--dev-auth", devTokens}})
	env.CreateTenantWith(t, "vision", &pb.Tenant{
		DisplayName: "Vision team",
		Members:     []*pb.Member{harness.Subject("alice", pb.Role_ROLE_EDITOR)},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, env.DatabaseURL)
	require.NoError(t, err)
	defer st.Close()

	spec := experiment.Spec{
		Template: experiment.Template{Spec: job.Spec{Replicas: []job.ReplicaSpec{{
			Type: job.Worker, Count: 1, Image: "tensorflow/tensorflow:2.16.1",
			Command: []string{"python", "train.py", "--lr=${trial.lr}", "--width=${trial.width}"},
		}}}},
		Parameters: []experiment.Parameter{
			{Name: "lr", Kind: tune.KindDouble, Scale: tune.ScaleLog, Min: 1e-4, Max: 1e-1},
			{Name: "width", Kind: tune.KindInt, Min: 16, Max: 256},
		},
		Objective:     experiment.Objective{Metric: "loss", Direction: tune.Minimize},
		Algorithm:     experiment.Algorithm{Name: experiment.AlgorithmTPE},
		EarlyStopping: &experiment.EarlyStopping{Rule: experiment.RuleMedian, MedianStop: &experiment.MedianSettings{MinTrials: 3}},
		Parallelism:   4, MaxTrials: 16, Seed: 7,
	}
	e := experiment.Experiment{Tenant: "vision", Name: "lr-width", Creator: "alice", Spec: spec.Defaulted()}
	require.Empty(t, experiment.Validate(&e))
	e, err = st.ExperimentCreate(ctx, e)
	require.NoError(t, err)

	// The trials: lr over the log range, width over its range, both
	// spread by index; loss(step) = final × 1.1^(10 − step); those of a final loss over 0.17 stop at step 3.
	const trials, steps, stoppedAt = 16, 10, 3
	best, bestLoss := -1, math.Inf(1)
	finals := make([]float64, trials)
	for i := range trials {
		lr := math.Pow(10, -4+3*float64((i*7)%trials)/float64(trials-1))
		width := 16 + (i*5)%trials*16
		final := 0.05 + 0.08*math.Abs(math.Log10(lr)+2) + 0.0004*math.Abs(float64(width-128))
		finals[i] = final
		uid := uuid.Must(uuid.NewV7()).String()
		tr := experiment.Trial{ExperimentUID: e.UID, Index: i, Tenant: "vision", JobUID: uid, JobName: experiment.JobName(e.Name, i),
			Assignment: tune.Assignment{"lr": strconv.FormatFloat(lr, 'g', 3, 64), "width": strconv.Itoa(width)}, State: experiment.TrialRunning}
		ok, err := st.TrialCreate(ctx, tr)
		require.NoError(t, err)
		require.True(t, ok)
		stopped := final > 0.17
		n := steps
		if stopped {
			n = stoppedAt
		}
		var ps []experiment.MetricPoint
		for s := 1; s <= n; s++ {
			ps = append(ps, experiment.MetricPoint{Name: "loss", Step: int64(s), Value: final * math.Pow(1.1, float64(steps-s)),
				Time: time.Now().Add(time.Duration(s-steps) * time.Minute)})
		}
		_, err = st.TrialMetricsAdd(ctx, uid, ps)
		require.NoError(t, err)
		last := ps[len(ps)-1].Value
		state, reason := experiment.TrialSucceeded, ""
		if stopped {
			state, reason = experiment.TrialEarlyStopped, fmt.Sprintf("median stopping: loss %.3g at step %d is worse than the median of the other trials", last, stoppedAt)
		} else if last < bestLoss {
			best, bestLoss = i, last
		}
		ok, err = st.TrialFinish(ctx, e.UID, i, state, reason, &last)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.GreaterOrEqual(t, best, 0)
	_, ended, err := st.ExperimentSetBest(ctx, e.UID, best, experiment.Succeeded,
		fmt.Sprintf("all %d trials ended; the best is trial %d with loss %.4g", trials, best, bestLoss))
	require.NoError(t, err)
	require.True(t, ended)
	succeeded := 0
	for _, f := range finals {
		if f <= 0.17 {
			succeeded++
		}
	}
	require.Positive(t, succeeded)
	require.Less(t, succeeded, trials, "some trials are stopped early")

	b := newBrowser(t)
	alice := b.tab(t, env.HTTPURL)
	alice.signIn(env.Token("alice"))
	alice.click(`header nav a[href="/tenants/vision/experiments"]`)
	alice.waitText("main table.experiments", "lr-width", 20*time.Second)
	alice.open("/tenants/vision/experiments/lr-width")
	alice.waitJS(`document.querySelectorAll('table.trials tbody tr').length === `+strconv.Itoa(trials), 20*time.Second)
	require.Contains(t, alice.text("main h2"), "SUCCEEDED")
	require.Contains(t, alice.pageText(), fmt.Sprintf("Best: trial %d", best))

	// The table: the best first, the succeeded by loss, then the stopped.
	rows := eval[[]string](alice, `[...document.querySelectorAll('table.trials tbody tr')].map(r => r.querySelector('th').innerText + " " + r.querySelectorAll('td')[0].innerText.split("\n")[0])`)
	require.Equal(t, fmt.Sprintf("%d SUCCEEDED", best), rows[0])
	for i, r := range rows {
		if i < succeeded {
			require.Contains(t, r, "SUCCEEDED")
		} else {
			require.Contains(t, r, "EARLY_STOPPED")
		}
	}
	// The scatter: a dot per trial (each has a loss), the best filled.
	require.Equal(t, trials, eval[int](alice, `document.querySelectorAll('svg.scatter circle').length`))
	require.Equal(t, 1, eval[int](alice, `[...document.querySelectorAll('svg.scatter circle')].filter(c => c.getAttribute('fill') === 'currentColor').length`))

	// The best trial's curve: its ten points.
	alice.click(`table.trials tbody tr:first-child button`)
	alice.waitJS(`!!document.querySelector('svg.curve polyline') && document.querySelector('svg.curve polyline').getAttribute('points').trim().split(/\s+/).length === `+strconv.Itoa(steps), 20*time.Second)
	require.Contains(t, alice.pageText(), fmt.Sprintf("loss of trial %d by step (%d points)", best, steps))
	alice.screenshot("experiments.png", false)
}
