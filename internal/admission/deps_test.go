package admission

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

// DependsOn adds a dependency of the job on the job name of the same
// tenant, seen in state st (started: it has been admitted).
func (b *jobB) DependsOn(name string, cond job.DependencyCondition, st job.State, started bool) *jobB {
	b.j.Dependencies = append(b.j.Dependencies, Dependency{
		Key: key(b.j.Key.Tenant, name), Name: name, Condition: cond,
		Observed: job.DependencyObserved{State: st, Started: started},
	})
	return b
}

func TestScheduleDependencies(t *testing.T) {
	nodes := []Node{gpuNode("n1", 8)}
	ten := []Tenant{tenantOf("a").quota(8), tenantOf("b").quota(8)}
	type want struct {
		admit   []string
		waiting map[string]string // name → BlockedBy, for DEPENDENCY waits
		failed  map[string]string // name → dependency
	}
	cases := map[string]struct {
		jobs []Job
		want want
	}{
		"met: admitted like any job": {
			jobs: []Job{makeJob("a", "train", 2).Workers(1, 4).DependsOn("prep", job.DependsSucceeded, job.Succeeded, true).Obj()},
			want: want{admit: []string{"train"}},
		},
		"unmet: waits, and holds nobody's place under STRICT_FIFO": {
			jobs: []Job{
				makeJob("a", "train", 2).Workers(1, 8).Priority(10).DependsOn("prep", job.DependsSucceeded, job.Running, true).Obj(),
				makeJob("a", "other", 3).Workers(1, 8).Obj(),
			},
			want: want{admit: []string{"other"}, waiting: map[string]string{"train": "prep"}},
		},
		"blocked by the first unmet dependency": {
			jobs: []Job{makeJob("a", "publish", 4).Workers(1, 1).
				DependsOn("prep", job.DependsSucceeded, job.Succeeded, true).
				DependsOn("train", job.DependsSucceeded, job.Queued, false).
				DependsOn("eval", job.DependsFinished, job.Running, true).Obj()},
			want: want{waiting: map[string]string{"publish": "train"}},
		},
		"a failed dependency fails it, even behind an unmet one": {
			jobs: []Job{makeJob("a", "publish", 4).Workers(1, 1).
				DependsOn("train", job.DependsSucceeded, job.Running, true).
				DependsOn("eval", job.DependsSucceeded, job.Failed, true).Obj()},
			want: want{failed: map[string]string{"publish": "eval"}},
		},
		"a chain fails at once": {
			jobs: []Job{
				makeJob("a", "train", 2).Workers(1, 1).DependsOn("prep", job.DependsSucceeded, job.Failed, true).Obj(),
				makeJob("a", "publish", 3).Workers(1, 1).DependsOn("train", job.DependsSucceeded, job.Queued, false).Obj(),
				makeJob("a", "notify", 4).Workers(1, 1).DependsOn("train", job.DependsStarted, job.Queued, false).Obj(),
				makeJob("a", "cleanup", 5).Workers(1, 1).DependsOn("train", job.DependsFinished, job.Queued, false).Obj(),
			},
			want: want{
				failed:  map[string]string{"train": "prep", "publish": "train", "notify": "train"},
				waiting: map[string]string{"cleanup": "train"},
			},
		},
		"STARTED: an evaluator starts beside its trainer": {
			jobs: []Job{
				makeJob("a", "train", 1).Workers(1, 4).Running(t0).On("n1").Obj(),
				makeJob("a", "eval", 2).Workers(1, 2).DependsOn("train", job.DependsStarted, job.Running, true).Obj(),
			},
			want: want{admit: []string{"eval"}},
		},
		"STARTED: not while its trainer starts": {
			jobs: []Job{makeJob("a", "eval", 2).Workers(1, 2).DependsOn("train", job.DependsStarted, job.Starting, true).Obj()},
			want: want{waiting: map[string]string{"eval": "train"}},
		},
		"an admitted job's dependencies are not looked at": {
			jobs: []Job{makeJob("a", "train", 2).Workers(1, 1).Running(t0).On("n1").DependsOn("prep", job.DependsSucceeded, job.Failed, true).Obj()},
			want: want{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := snapshot(ten, nodes, tc.jobs...)
			before := len(s.Jobs)
			d := Schedule(s)
			require.Len(t, s.Jobs, before, "the snapshot is not modified")
			names := map[Key]string{}
			for _, j := range tc.jobs {
				names[j.Key] = j.Name
			}
			var admitted []string
			for _, k := range d.Admit {
				admitted = append(admitted, names[k])
			}
			require.Equal(t, tc.want.admit, admitted)
			waiting := map[string]string{}
			for _, w := range d.Waiting {
				if w.Reason == job.WaitDependency {
					waiting[names[w.Key]] = w.BlockedBy
					require.Zero(t, w.TenantPosition)
					require.Zero(t, w.ClusterPosition)
					require.Contains(t, w.Message, "waits for job "+w.BlockedBy+" to")
				}
			}
			require.Equal(t, len(tc.want.waiting), len(waiting))
			if len(waiting) > 0 {
				require.Equal(t, tc.want.waiting, waiting)
			}
			failed := map[string]string{}
			for _, f := range d.DependencyFailed {
				failed[names[f.Key]] = f.Dependency
				require.Contains(t, f.Message, "dependency "+f.Dependency)
			}
			require.Equal(t, len(tc.want.failed), len(failed))
			if len(failed) > 0 {
				require.Equal(t, tc.want.failed, failed)
			}
		})
	}
}

// A gated job takes no position: the next job of its tenant is first.
func TestScheduleDependencyHoldsNoPlace(t *testing.T) {
	s := snapshot([]Tenant{tenantOf("a").quota(4)}, []Node{gpuNode("n1", 8)},
		makeJob("a", "running", 1).Workers(1, 4).Running(t0).On("n1").Obj(),
		makeJob("a", "gated", 2).Workers(1, 4).DependsOn("running", job.DependsSucceeded, job.Running, true).Obj(),
		makeJob("a", "next", 3).Workers(1, 4).Obj(),
	)
	d := Schedule(s)
	w, ok := waitingOf(d, key("a", "next"))
	require.True(t, ok)
	require.Equal(t, job.WaitQuota, w.Reason)
	require.Equal(t, 1, w.TenantPosition)
	g, ok := waitingOf(d, key("a", "gated"))
	require.True(t, ok)
	require.Equal(t, job.WaitDependency, g.Reason)
	require.Nil(t, g.EstimatedStart)
}

func TestScheduleDependencyCancel(t *testing.T) {
	j := makeJob("a", "train", 2).Workers(1, 1).DependsOn("prep", job.DependsSucceeded, job.Cancelled, false).Obj()
	j.CancelOnDependencyFailure = true
	d := Schedule(snapshot([]Tenant{tenantOf("a")}, []Node{gpuNode("n1", 8)}, j))
	require.Equal(t, []DependencyFailure{{Key: j.Key, Dependency: "prep", Cancel: true,
		Message: "dependency prep ended CANCELLED; it can no longer succeed"}}, d.DependencyFailed)
}
