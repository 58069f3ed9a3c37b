//go:build integration

package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Small, seconds-long versions of the issue 8 and 11 benchmarks, run by
// make test so that none of them rots: the same code as make bench, at
// sizes where only "it works and counts right" is checked, not the figures.

func TestAdmissionSmoke(t *testing.T) {
	r := measureAdmission(t, 300, 3, true)
	t.Logf("admission of %d jobs over %d tenants: %.0f jobs/s (raw %.0f pods/s), admitted after %s, pods after %s",
		r.jobs, r.tenants, r.rate(), r.rawRate(), r.admittedAt, r.podsAt)
	require.Zero(t, r.lost, "every job got its pod")
	require.EqualValues(t, r.jobs, r.podCreates, "one create per pod")
	require.Positive(t, r.rate())
	require.Positive(t, r.rawRate())
	require.True(t, r.rawSettled && r.settled, "every pod of both phases ran to its end")
}

func TestDispatchSmoke(t *testing.T) {
	cfg := config{dispatchFor: 2 * time.Second, blocks: 1, rate: 5, drain: time.Minute, seeded: []int{0, 100}}
	rep := newReport(cfg)
	runDispatch(t, cfg, rep)
	require.Len(t, rep.levels, 2)
	for _, l := range rep.levels {
		for _, r := range []dispatchResult{l.raw, l.trainyard} {
			t.Logf("%d finished pods, %s: %d sets, p50 %.1f ms", l.seeded, r.path, r.sets, ms(r.lat.p50))
			require.Positive(t, r.sets, r.path)
			require.Zero(t, r.failed+r.missing, "%s: every set got its pods", r.path)
		}
		creates := 0.0
		for k, v := range l.workerMetrics {
			if strings.HasPrefix(k, "trainyard_worker_kube_requests_total{") {
				switch labelValues(k) {
				case "create pods":
					creates = v
				case "list pods", "list services", "get pods", "get services":
					t.Errorf("%d finished pods: the worker made %s %s calls", l.seeded, labelValues(k), k)
				}
			}
		}
		// At the seeded level the Trainyard blocks hold the empty
		// namespace's sets too (runBlock interleaves them).
		require.EqualValues(t, (l.trainyard.sets+l.empty.sets)*podsPerJob, creates, "one create per pod")
	}
	require.GreaterOrEqual(t, rep.levels[1].seeded, 100)
	require.Zero(t, rep.levels[0].empty.sets, "no empty-namespace path at 0")
	require.Positive(t, rep.levels[1].empty.sets, "the seeded level measures Trainyard on an empty namespace beside it")
	require.Equal(t, rep.levels[1].trainyard.sets, rep.levels[1].empty.sets, "the two namespaces' sets interleave, as many of each")
	require.Zero(t, rep.levels[1].empty.failed+rep.levels[1].empty.missing, "every set of the empty namespace got its pods")
	// One pair a level: its pods go with the next level's trim.
	prev := rep.levels[0]
	require.Zero(t, prev.trimmedBlocks, "a level's last pair is not trimmed")
	require.GreaterOrEqual(t, rep.levels[1].trimmed, (prev.raw.sets+prev.trainyard.sets+prev.empty.sets)*podsPerJob,
		"the next level starts without the earlier level's pods")
	var out strings.Builder
	rep.print(&out)
	require.Contains(t, out.String(), "finished pods")
	require.Contains(t, out.String(), "vs empty ns")
}

func TestNoisySmoke(t *testing.T) {
	r := measureNoisy(t, time.Second, 8, 5, nil)
	t.Logf("B alone p99 %.1f ms, with A %.1f ms; A alone %.0f/s, with B %.0f/s", ms(r.bAlone.p99), ms(r.bWithA.p99), r.aAlone, r.aWithB)
	require.Positive(t, r.bAlone.n)
	require.Positive(t, r.bWithA.n)
	require.Positive(t, r.aAlone)
	require.Positive(t, r.aWithB)
	require.Zero(t, r.bErrors+r.bRefused, "tenant B is never refused for A's load")
	var out strings.Builder
	r.print(&out)
	require.Contains(t, out.String(), "Noisy neighbour")
}

func TestBatchSmoke(t *testing.T) {
	r := measureBatch(t, 100, 1, time.Second, nil)
	for _, row := range r.rows {
		t.Logf("%s: %.0f jobs/s", row.path, row.jobsSec)
		require.Positive(t, row.jobsSec, row.path)
	}
}

func TestMillionSmoke(t *testing.T) {
	r := measureMillion(t, 20000, 5)
	for _, row := range r.rows {
		t.Logf("%s: p99 %.2f ms", row.what, ms(row.lat.p99))
	}
	require.Len(t, r.rows, 15)
	require.EqualValues(t, 10000, r.ret.deleted, "the events seeded a month back")
}

func TestFanoutSmoke(t *testing.T) {
	r := measureFanout(t, 20, 5)
	t.Logf("20 streams: p99 %.1f ms (1 stream %.1f ms), %.1f KiB heap per stream", ms(r.all.p99), ms(r.one.p99), r.heapPerStream)
	require.Zero(t, r.missed)
	require.Equal(t, 5, r.all.n, "every event reached every stream")
}

func TestMemorySmoke(t *testing.T) {
	r := measureMemory(t, 20)
	t.Logf("worker with %d running jobs: %.0f MiB resident, %.0f MiB heap (idle %.0f, %.0f)", r.jobs, r.busyRSS, r.busyHeap, r.idleRSS, r.idleHeap)
	require.Positive(t, r.busyRSS)
	require.Positive(t, r.idleHeap)
}

func TestReplicasSmoke(t *testing.T) {
	r := measureReplicas(t, 200, time.Second)
	for _, run := range r.runs {
		t.Logf("%d+%d: submit %.0f/s, dispatch %.0f jobs/s", run.servers, run.workers, run.submitPerSec, run.dispatchPerSec)
		require.EqualValues(t, r.jobs, run.podCreates, "one create per pod, whichever worker claimed the job")
		require.Len(t, run.perWorker, run.workers)
	}
}

// The dispatch sections' nodes hold twice the pods a level may leave
// unfinished: at 100 jobs/s (10,000 pods a level) four nodes filled and
// Trainyard's jobs waited for capacity that raw's creates did not need.
func TestBenchNodesHoldTwiceThePods(t *testing.T) {
	for _, tc := range []struct{ pods, want int }{
		{0, 4},        // at least the four the dispatch section always had
		{1500, 4},     // issue 13's levels: 50 sets × 3 blocks × 2 paths × 5 pods
		{5000, 5},     // 50 jobs/s for 10 s
		{10000, 10},   // 100 jobs/s for 10 s
		{1000000, 16}, // no more than the pod CIDRs allow
	} {
		if got := benchNodes(tc.pods); got != tc.want {
			t.Errorf("benchNodes(%d) = %d, want %d", tc.pods, got, tc.want)
		}
		if tc.want < 16 && benchNodes(tc.pods)*podsPerBenchNode < 2*tc.pods {
			t.Errorf("benchNodes(%d): %d nodes hold fewer than twice the pods", tc.pods, benchNodes(tc.pods))
		}
	}
}

func TestWebhooksSmoke(t *testing.T) {
	r := measureWebhooks(t, 4, 2*time.Second, 50, 2*time.Second)
	t.Logf("submits %.0f/s off, %.0f/s on; end→2xx p50 %.0f ms p99 %.0f ms", r.off, r.on, ms(r.endToReceiver.p50), ms(r.endToReceiver.p99))
	require.Equal(t, r.ended, r.endToReceiver.n, "every end reached the receiver")
	require.Positive(t, r.on)
}

func TestExperimentsSmoke(t *testing.T) {
	r := measureExperiments(t, 6, 3, time.Second)
	t.Logf("%d trials at parallelism %d: experiment %.1f s, by hand %.1f s", r.trials, r.parallelism, r.exp.Seconds(), r.byHand.Seconds())
	require.Equal(t, pb.ExperimentState_EXPERIMENT_STATE_SUCCEEDED, r.state, r.reason)
	require.Equal(t, 6, r.succeeded, "every trial succeeded")
	require.Equal(t, 6, r.handDone, "every job by hand ended")
	require.NotEmpty(t, r.best)
	require.Positive(t, r.byHand)
	var out strings.Builder
	r.print(&out)
	require.Contains(t, out.String(), "vs by hand")
}
