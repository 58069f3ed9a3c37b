package admission

import (
	"cmp"
	"slices"

	"github.com/trainyard/trainyard/internal/job"
)

// Dependencies (job.Spec.DependsOn) gate a pending job before anything
// else looks at it:
//
//	every dependency met ─────────────── the job goes on, like any other
//	one can never be met ─────────────── DependencyFailed: the job ends
//	                                     (FAILED, or CANCELLED), naming it
//	else ─────────────────────────────── wait DEPENDENCY, BlockedBy the
//	                                     first unmet one, positions 0
//
// A gated job is left out of the cycle altogether: it holds no quota, no
// place in its tenant's line and nobody's capacity, and gets no estimate.
// A dependency that is itself a pending job failing in this cycle fails
// its dependents (SUCCEEDED, STARTED) in the same cycle, so a chain ends
// at once; a FINISHED dependent waits for the next cycle, when the end is
// committed and its result can be read.

// Dependency is one of a pending job's dependencies and what the loop saw
// of it.
type Dependency struct {
	Key       Key
	Name      string
	Condition job.DependencyCondition
	Observed  job.DependencyObserved
}

// DependencyFailure is a pending job that ends because Dependency can
// never be met.
type DependencyFailure struct {
	Key        Key
	Dependency string
	// Cancel: end it CANCELLED (onDependencyFailure CANCEL), not FAILED.
	Cancel  bool
	Message string
}

type gate struct {
	waiting []Waiting
	failed  []DependencyFailure
}

// gateDependencies returns s without its gated pending jobs, and what
// becomes of those. s is not modified: the jobs are copied when any is
// gated.
func gateDependencies(s Snapshot) (Snapshot, gate) {
	var idx []int
	for i := range s.Jobs {
		if !s.Jobs[i].Admitted && len(s.Jobs[i].Dependencies) > 0 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return s, gate{}
	}
	// A dependency is always submitted before its dependent: in
	// submission order, a failure is known before its dependents look.
	slices.SortFunc(idx, func(a, b int) int {
		ja, jb := &s.Jobs[a], &s.Jobs[b]
		return cmp.Or(cmp.Compare(ja.Seq, jb.Seq), cmp.Compare(ja.Key.Tenant, jb.Key.Tenant), cmp.Compare(ja.Key.UID, jb.Key.UID))
	})
	var (
		g     gate
		out   = make(map[int]bool, len(idx))
		fails = map[Key]bool{}
	)
	for _, i := range idx {
		j := &s.Jobs[i]
		var (
			blocked *Dependency
			never   *Dependency
			msg     string
		)
		for k := range j.Dependencies {
			d := &j.Dependencies[k]
			spec := job.Dependency{Job: d.Name, Condition: d.Condition}
			verdict := spec.Check(d.Observed)
			if fails[d.Key] {
				// It ends in this cycle, before it ever starts.
				verdict = job.DependencyNever
				if spec.Cond() == job.DependsFinished {
					verdict = job.DependencyPending
				}
			}
			switch verdict {
			case job.DependencyNever:
				never, msg = d, spec.NeverMessage(d.Observed)
				if fails[d.Key] {
					msg = spec.NeverMessage(job.DependencyObserved{})
				}
			case job.DependencyPending:
				if blocked == nil {
					blocked = d
				}
			}
			if never != nil {
				break
			}
		}
		switch {
		case never != nil:
			fails[j.Key] = true
			out[i] = true
			g.failed = append(g.failed, DependencyFailure{Key: j.Key, Dependency: never.Name, Cancel: j.CancelOnDependencyFailure, Message: msg})
		case blocked != nil:
			out[i] = true
			spec := job.Dependency{Job: blocked.Name, Condition: blocked.Condition}
			g.waiting = append(g.waiting, Waiting{Key: j.Key, QueueInfo: job.QueueInfo{
				Reason: job.WaitDependency, Message: "waits for " + spec.Describe(), BlockedBy: blocked.Name,
			}})
		}
	}
	if len(out) == 0 {
		return s, g
	}
	jobs := make([]Job, 0, len(s.Jobs)-len(out))
	for i := range s.Jobs {
		if !out[i] {
			jobs = append(jobs, s.Jobs[i])
		}
	}
	s.Jobs = jobs
	return s, g
}
