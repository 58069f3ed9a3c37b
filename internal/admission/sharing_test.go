package admission

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
)

func (t Tenant) cohort(name string) Tenant { t.Sharing.Cohort = name; return t }
func (t Tenant) borrowLimit(gpus int64) Tenant {
	t.Sharing.BorrowingLimit = &job.Vector{job.GPU: gpus}
	return t
}
func (t Tenant) lendLimit(gpus int64) Tenant {
	t.Sharing.LendingLimit = &job.Vector{job.GPU: gpus}
	return t
}
func (t Tenant) weight(w float64) Tenant            { t.Sharing.Weight = w; return t }
func (t Tenant) reclaim(p ReclaimPolicy) Tenant     { t.Sharing.Reclaim = p; return t }
func (t Tenant) fairSharePreemption() Tenant        { t.Sharing.FairSharePreemption = true; return t }
func (t Tenant) history(gpus float64) Tenant        { t.Sharing.Usage[job.GPU] = gpus; return t }
func (t Tenant) gpuTypes(m map[string]int64) Tenant { t.Sharing.GPUTypes = m; return t }
func (t Tenant) budget(b Budget) Tenant             { t.Sharing.Budget = b; return t }

func (b *jobB) NonPreemptible() *jobB  { b.j.NonPreemptible = true; return b }
func (b *jobB) GPUType(m string) *jobB { b.j.GPUType = m; return b }
func (b *jobB) CPUOnly() *jobB {
	return b.Group(NewGroup("cpu", 1, job.Vector{job.CPU: 1000, job.Pods: 1}, Placement{}))
}
func modelNode(name, model string, gpus int64) Node {
	n := gpuNode(name, gpus)
	n.Labels = map[string]string{DefaultGPUTypeLabel: model}
	return n
}

// sharingWant is what a sharing case expects: admitted jobs by name, the
// preemptions (victim → preemptor, and the rule), and waiting reasons.
type sharingWant struct {
	admit   []string
	preempt map[string]string // victim → "preemptor KIND"
	reasons map[string]job.WaitReason
	// messages: substrings of a waiting job's message or a victim's
	// preemption message, by job name.
	messages map[string][]string
}

func checkSharing(t *testing.T, s Snapshot, w sharingWant) Decision {
	t.Helper()
	d := Schedule(s)
	names := map[Key]string{}
	for _, j := range s.Jobs {
		names[j.Key] = j.Name
	}
	var admitted []string
	for _, k := range d.Admit {
		admitted = append(admitted, names[k])
	}
	slices.Sort(admitted)
	want := slices.Clone(w.admit)
	slices.Sort(want)
	require.Equal(t, want, admitted, "admitted")
	got := map[string]string{}
	msgs := map[string]string{}
	for _, p := range d.Preempt {
		got[p.VictimName] = p.ByName + " " + string(p.Kind)
		msgs[p.VictimName] = p.Message
		require.NotEmpty(t, p.Message, "every preemption is explained")
	}
	if w.preempt == nil {
		w.preempt = map[string]string{}
	}
	require.Equal(t, w.preempt, got, "preempted")
	for _, x := range d.Waiting {
		msgs[names[x.Key]] = x.Message
		if r, ok := w.reasons[names[x.Key]]; ok {
			require.Equal(t, r, x.Reason, "reason of %s: %s", names[x.Key], x.Message)
		}
	}
	for name, subs := range w.messages {
		for _, sub := range subs {
			require.Contains(t, msgs[name], sub, "message of %s", name)
		}
	}
	return d
}

func TestCohorts(t *testing.T) {
	two8 := []Node{gpuNode("n1", 8), gpuNode("n2", 8)}
	a, b := tenantOf("a").quota(8).cohort("c"), tenantOf("b").quota(8).cohort("c")
	early, late := t0.Add(-2*time.Hour), t0.Add(-time.Hour)
	cases := map[string]struct {
		snap Snapshot
		want sharingWant
	}{
		"without a cohort the quota is a wall: the second 8-GPU job waits for quota while 8 GPUs sit idle": {
			snap: snapshot([]Tenant{tenantOf("a").quota(8), tenantOf("b").quota(8)}, two8,
				makeJob("a", "a1", 1).Workers(1, 8).Obj(), makeJob("a", "a2", 2).Workers(1, 8).Obj()),
			want: sharingWant{admit: []string{"a1"}, reasons: map[string]job.WaitReason{"a2": job.WaitQuota}},
		},
		"borrowing: in a cohort, a borrows b's idle 8 GPUs": {
			snap: snapshot([]Tenant{a, b}, two8,
				makeJob("a", "a1", 1).Workers(1, 8).Obj(), makeJob("a", "a2", 2).Workers(1, 8).Obj()),
			want: sharingWant{admit: []string{"a1", "a2"}},
		},
		"borrowing limit: a may borrow 4, so its second 8-GPU job waits for quota": {
			snap: snapshot([]Tenant{a.borrowLimit(4), b}, two8,
				makeJob("a", "a1", 1).Workers(1, 8).Obj(), makeJob("a", "a2", 2).Workers(1, 8).Obj(),
				makeJob("a", "a3", 3).Workers(1, 4).Obj()),
			want: sharingWant{admit: []string{"a1"}, reasons: map[string]job.WaitReason{"a2": job.WaitQuota, "a3": job.WaitOrder},
				messages: map[string][]string{"a2": {"borrowing limit"}}},
		},
		"lending limit: b lends at most 4 of its 8 GPUs; a gets 12, not 16": {
			snap: func() Snapshot {
				s := snapshot([]Tenant{a.bestEffort(), b.lendLimit(4)}, two8,
					makeJob("a", "a1", 1).Workers(1, 8).Obj(), makeJob("a", "a2", 2).Workers(1, 8).Obj(),
					makeJob("a", "a3", 3).Workers(1, 4).Obj())
				s.Config.StarvationAge = 0 // a2 does not hold a's line
				return s
			}(),
			want: sharingWant{admit: []string{"a1", "a3"}, reasons: map[string]job.WaitReason{"a2": job.WaitQuota},
				messages: map[string][]string{"a2": {"cohort c lends 12"}}},
		},
		"a cohort's own pool: tenants of 4 GPUs each borrow the cohort's 8": {
			snap: func() Snapshot {
				s := snapshot([]Tenant{tenantOf("a").quota(4).cohort("c"), tenantOf("b").quota(4).cohort("c")}, two8,
					makeJob("a", "a1", 1).Workers(1, 8).Obj(), makeJob("b", "b1", 2).Workers(1, 8).Obj())
				s.Cohorts = []Cohort{{Name: "c", Nominal: job.Vector{job.GPU: 8}}}
				return s
			}(),
			want: sharingWant{admit: []string{"a1", "b1"}},
		},
		"never more than nominal plus borrowing limit: a 24-GPU job of a (8 nominal, borrows up to 8) can never start": {
			snap: snapshot([]Tenant{a.borrowLimit(8), b}, []Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8)},
				makeJob("a", "huge", 1).Workers(3, 8).Obj()),
			want: sharingWant{reasons: map[string]job.WaitReason{"huge": job.WaitQuota},
				messages: map[string][]string{"huge": {"may ever use", "at most 16"}}},
		},
		"reclaim: b asks for its nominal 8 GPUs, lent to a; a's most recently started job is preempted": {
			snap: snapshot([]Tenant{a, b}, two8,
				makeJob("a", "old", 1).Workers(1, 8).Running(early).On("n1").Obj(),
				makeJob("a", "new", 2).Workers(1, 8).Running(late).On("n2").Obj(),
				makeJob("b", "b1", 3).Workers(1, 8).Obj()),
			want: sharingWant{preempt: map[string]string{"new": "b1 RECLAIM"}, reasons: map[string]job.WaitReason{"b1": job.WaitQuota},
				messages: map[string][]string{
					"new": {"reclaim in cohort c", `job "b1" of tenant b`, "16 GPUs in use, 8 nominal"},
					// b sees no name of a's jobs.
					"b1": {"1 job(s) of other tenants of cohort c give back what they borrowed"},
				}},
		},
		"reclaim: lowest priority before most recently started": {
			snap: snapshot([]Tenant{a, b}, two8,
				makeJob("a", "old", 1).Workers(1, 8).Priority(-1).Running(early).On("n1").Obj(),
				makeJob("a", "new", 2).Workers(1, 8).Running(late).On("n2").Obj(),
				makeJob("b", "b1", 3).Workers(1, 8).Obj()),
			want: sharingWant{preempt: map[string]string{"old": "b1 RECLAIM"}},
		},
		"reclaim: the tenant furthest over its entitlement first": {
			snap: snapshot([]Tenant{tenantOf("a").quota(4).cohort("c"), tenantOf("b").quota(8).cohort("c"), tenantOf("d").quota(12).cohort("c")},
				[]Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8)},
				// a: 12 of 4 (over by 8); d: 12 of 12... b borrows nothing; d is within nominal.
				makeJob("a", "a1", 1).Workers(1, 8).Running(early).On("n1").Obj(),
				makeJob("a", "a2", 2).Workers(1, 4).Running(early).On("n2").Obj(),
				makeJob("d", "d1", 3).Workers(1, 4).Running(late).On("n2").Obj(),
				makeJob("d", "d2", 4).Workers(1, 8).Running(late).On("n3").Obj(),
				makeJob("b", "b1", 5).Workers(1, 4).Obj()),
			want: sharingWant{preempt: map[string]string{"a2": "b1 RECLAIM"}},
		},
		"a tenant within its nominal quota is never preempted by another: only the borrower's job goes": {
			snap: snapshot([]Tenant{a, b, tenantOf("d").quota(8).cohort("c")}, []Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8)},
				// d's job started last, but d uses only its nominal 8.
				makeJob("a", "a-in", 1).Workers(1, 8).Running(early).On("n1").Obj(),
				makeJob("a", "a-borrowed", 2).Workers(1, 8).Running(late).On("n2").Obj(),
				makeJob("d", "d-in", 3).Workers(1, 8).Running(t0).On("n3").Obj(),
				makeJob("b", "b1", 4).Workers(1, 8).Obj()),
			want: sharingWant{preempt: map[string]string{"a-borrowed": "b1 RECLAIM"}},
		},
		"reclaim LOWER_PRIORITY: b may not take back from a job of equal priority": {
			snap: snapshot([]Tenant{a, b.reclaim(ReclaimLowerPriority)}, two8,
				makeJob("a", "old", 1).Workers(1, 8).Running(early).On("n1").Obj(),
				makeJob("a", "new", 2).Workers(1, 8).Running(late).On("n2").Obj(),
				makeJob("b", "b1", 3).Workers(1, 8).Obj()),
			want: sharingWant{reasons: map[string]job.WaitReason{"b1": job.WaitQuota}},
		},
		"reclaim LOWER_PRIORITY: it may from one of lower priority": {
			snap: snapshot([]Tenant{a, b.reclaim(ReclaimLowerPriority)}, two8,
				makeJob("a", "old", 1).Workers(1, 8).Running(early).On("n1").Obj(),
				makeJob("a", "new", 2).Workers(1, 8).Running(late).On("n2").Obj(),
				makeJob("b", "b1", 3).Workers(1, 8).Priority(10).Obj()),
			want: sharingWant{preempt: map[string]string{"new": "b1 RECLAIM"}},
		},
		"reclaim NEVER: b waits for a's borrowers to end": {
			snap: snapshot([]Tenant{a, b.reclaim(ReclaimNever)}, two8,
				makeJob("a", "old", 1).Workers(1, 8).Running(early).On("n1").Obj(),
				makeJob("a", "new", 2).Workers(1, 8).Running(late).On("n2").Obj(),
				makeJob("b", "b1", 3).Workers(1, 8).Priority(10).Obj()),
			want: sharingWant{reasons: map[string]job.WaitReason{"b1": job.WaitQuota}},
		},
		"jobs already stopping for b's job count first: no new victim": {
			snap: snapshot([]Tenant{a, b}, two8,
				makeJob("a", "old", 1).Workers(1, 8).Running(early).On("n1").Obj(),
				makeJob("a", "new", 2).Workers(1, 8).Running(late).On("n2").PreemptingFor(key("b", "b1")).Obj(),
				makeJob("b", "b1", 3).Workers(1, 8).Obj()),
			want: sharingWant{reasons: map[string]job.WaitReason{"b1": job.WaitQuota}},
		},
		"non-preemptible: it never borrows": {
			snap: snapshot([]Tenant{a, b}, two8,
				makeJob("a", "a1", 1).Workers(1, 8).Obj(), makeJob("a", "a2", 2).Workers(1, 8).NonPreemptible().Obj()),
			want: sharingWant{admit: []string{"a1"}, reasons: map[string]job.WaitReason{"a2": job.WaitQuota},
				messages: map[string][]string{"a2": {"non-preemptible"}}},
		},
		"non-preemptible: never a victim of reclaim, the other borrower goes": {
			snap: snapshot([]Tenant{a, b}, two8,
				makeJob("a", "old", 1).Workers(1, 8).Running(early).On("n1").Obj(),
				makeJob("a", "new", 2).Workers(1, 8).Running(late).On("n2").NonPreemptible().Obj(),
				makeJob("b", "b1", 3).Workers(1, 8).Obj()),
			want: sharingWant{preempt: map[string]string{"old": "b1 RECLAIM"}},
		},
		"non-preemptible: never a victim of its own tenant's priority preemption": {
			snap: snapshot([]Tenant{tenantOf("a").quota(8).preempting()}, two8,
				makeJob("a", "low", 1).Workers(1, 8).Running(early).On("n1").NonPreemptible().Obj(),
				makeJob("a", "high", 2).Workers(1, 8).Priority(10).Obj()),
			want: sharingWant{reasons: map[string]job.WaitReason{"high": job.WaitQuota}},
		},
		"weighted fair share: of two borrowers, the one of weight 2 gets the free 8 GPUs": {
			snap: fairShareSnap(tenantOf("a").quota(4).cohort("c"), tenantOf("d").quota(4).cohort("c").weight(2)),
			want: sharingWant{admit: []string{"d-next"}},
		},
		"fair share with equal weights: ties go by tenant id": {
			snap: fairShareSnap(tenantOf("a").quota(4).cohort("c"), tenantOf("d").quota(4).cohort("c")),
			want: sharingWant{admit: []string{"a-next"}},
		},
		"fair share that remembers: a used 16 GPUs lately, d did not; d goes first": {
			snap: fairShareSnap(tenantOf("a").quota(4).cohort("c").history(16), tenantOf("d").quota(4).cohort("c")),
			want: sharingWant{admit: []string{"d-next"}},
		},
		"fair-share preemption: d borrows nothing yet; a borrows 12; d takes a's newest borrowed job": {
			snap: snapshot([]Tenant{tenantOf("a").quota(4).cohort("c"), tenantOf("d").quota(4).cohort("c").fairSharePreemption(), tenantOf("b").quota(16).cohort("c")},
				[]Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8)},
				makeJob("a", "a1", 1).Workers(1, 8).Running(early).On("n1").Obj(),
				makeJob("a", "a2", 2).Workers(1, 8).Running(late).On("n2").Obj(),
				makeJob("b", "b1", 3).Workers(1, 8).Running(early).On("n3").Obj(),
				makeJob("d", "d1", 4).Workers(1, 8).Obj()),
			want: sharingWant{preempt: map[string]string{"a2": "d1 FAIR_SHARE"},
				messages: map[string][]string{"a2": {"fair share in cohort c", "weighted share to 0.167", "tenant a's 0.167 without this job (0.500 with it)"}}},
		},
		"fair-share preemption stops at the final share: d would end above a, so nothing": {
			snap: snapshot([]Tenant{tenantOf("a").quota(4).cohort("c"), tenantOf("d").quota(4).cohort("c").fairSharePreemption(), tenantOf("b").quota(16).cohort("c")},
				[]Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8)},
				makeJob("a", "a1", 1).Workers(1, 8).Running(early).On("n1").Obj(),
				makeJob("d", "d0", 2).Workers(1, 8).Running(late).On("n2").Obj(),
				makeJob("b", "b1", 3).Workers(1, 8).Running(early).On("n3").Obj(),
				makeJob("d", "d1", 4).Workers(1, 8).Obj()),
			want: sharingWant{reasons: map[string]job.WaitReason{"d1": job.WaitQuota}},
		},
		"budget used up: GPU jobs wait with reason BUDGET until the reset, CPU jobs start": {
			snap: snapshot([]Tenant{tenantOf("a").quota(8).budget(Budget{GPUHours: 100, UsedGPUHours: 100, ResetAt: t0.Add(48 * time.Hour)})}, two8,
				makeJob("a", "gpu", 1).Workers(1, 1).Obj(), makeJob("a", "cpu", 2).CPUOnly().Obj()),
			want: sharingWant{admit: []string{"cpu"}, reasons: map[string]job.WaitReason{"gpu": job.WaitBudget},
				messages: map[string][]string{"gpu": {"100.0 of 100.0 GPU-hours", "resets at 2026-12-03T12:00:00Z"}}},
		},
		"budget used up, BORROW_ONLY: a runs on b's idle GPUs": {
			snap: snapshot([]Tenant{a.budget(Budget{GPUHours: 10, UsedGPUHours: 11, OverBudget: OverBudgetBorrowOnly}), b}, two8,
				makeJob("a", "a1", 1).Workers(1, 8).Obj()),
			want: sharingWant{admit: []string{"a1"}},
		},
		"budget used up, BORROW_ONLY: a's jobs are borrowed, and go first when b reclaims": {
			snap: snapshot([]Tenant{a.budget(Budget{GPUHours: 10, UsedGPUHours: 11, OverBudget: OverBudgetBorrowOnly}), b}, two8,
				makeJob("a", "a1", 1).Workers(1, 8).Running(early).On("n1").Obj(),
				makeJob("a", "a2", 2).Workers(1, 4).Running(late).On("n2").Obj(),
				makeJob("b", "b-in", 3).Workers(1, 4).Running(early).On("n2").Obj(),
				makeJob("b", "b1", 4).Workers(1, 4).Obj()),
			want: sharingWant{preempt: map[string]string{"a2": "b1 BUDGET"},
				messages: map[string][]string{"a2": {"over its GPU-hour budget (11.0 of 10.0 GPU-hours)"}}},
		},
		"without aging a stream of small borrowers passes a big one: d's 4 GPUs borrow what a's 16-GPU gang lacks": {
			snap: agingSnap(0),
			want: sharingWant{admit: []string{"d-small"}, reasons: map[string]job.WaitReason{"a-big": job.WaitQuota}},
		},
		"aging: a's gang has waited past BorrowAging; d's later borrower leaves the pool to it": {
			snap: agingSnap(30 * time.Minute),
			want: sharingWant{reasons: map[string]job.WaitReason{"a-big": job.WaitQuota, "d-small": job.WaitQuota},
				messages: map[string][]string{"d-small": {"held for a job that has waited longer to borrow"}}},
		},
		"aging holds only the pool: d's job within its nominal quota still starts": {
			// b uses 12 of its 16; the pool (28) has 8 left for a's gang.
			snap: func() Snapshot {
				s := snapshot([]Tenant{tenantOf("a").quota(4).cohort("c"), tenantOf("d").quota(8).cohort("c"), tenantOf("b").quota(16).cohort("c")},
					[]Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8), gpuNode("n4", 8), gpuNode("n5", 8), gpuNode("n6", 8)},
					makeJob("a", "a-run", 1).Workers(1, 4).Running(t0).On("n1").Obj(),
					makeJob("d", "d-run", 2).Workers(1, 4).Running(t0).On("n2").Obj(),
					makeJob("b", "b-run1", 3).Workers(1, 8).Running(t0).On("n3").Obj(),
					makeJob("b", "b-run2", 4).Workers(1, 4).Running(t0).On("n4").Obj(),
					makeJob("a", "a-big", 5).Workers(2, 8).Obj(),
					makeJob("d", "d-small", 6).Workers(1, 4).QueuedAt(t0.Add(59*time.Minute)).Obj())
				s.Config.BorrowAging = 30 * time.Minute
				return s
			}(),
			want: sharingWant{admit: []string{"d-small"}, reasons: map[string]job.WaitReason{"a-big": job.WaitQuota}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { checkSharing(t, tc.snap, tc.want) })
	}
}

// agingSnap: b (16 nominal GPUs) is idle; a (4) runs 4 and has a 16-GPU
// gang waiting since t0, an hour; d (4) borrows 12 and submits a 4-GPU
// job now. The pool (24) has 12 left: not enough for the gang, enough
// for d's job. The nodes have room for both.
func agingSnap(aging time.Duration) Snapshot {
	s := snapshot([]Tenant{tenantOf("a").quota(4).cohort("c"), tenantOf("d").quota(4).cohort("c"), tenantOf("b").quota(16).cohort("c")},
		[]Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8), gpuNode("n4", 8), gpuNode("n5", 8), gpuNode("n6", 8)},
		makeJob("a", "a-run", 1).Workers(1, 4).Running(t0).On("n1").Obj(),
		makeJob("d", "d-run1", 2).Workers(1, 8).Running(t0).On("n2").Obj(),
		makeJob("d", "d-run2", 3).Workers(1, 8).Running(t0).On("n3").Obj(),
		makeJob("a", "a-big", 4).Workers(2, 8).Obj(),
		makeJob("d", "d-small", 5).Workers(1, 4).QueuedAt(t0.Add(59*time.Minute)).Obj())
	s.Config.BorrowAging = aging
	return s
}

// fairShareSnap: two tenants of 4 nominal GPUs each borrow 4 of b's idle
// 16; 8 GPUs are free; each has an 8-GPU job waiting, only one fits.
func fairShareSnap(a, d Tenant) Snapshot {
	return snapshot([]Tenant{a.bestEffort(), d.bestEffort(), tenantOf("b").quota(16).cohort("c")},
		[]Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8)},
		makeJob(a.ID, a.ID+"-run", 1).Workers(1, 8).Running(t0).On("n1").Obj(),
		makeJob(d.ID, d.ID+"-run", 2).Workers(1, 8).Running(t0).On("n2").Obj(),
		makeJob(a.ID, a.ID+"-next", 3).Workers(1, 8).Obj(),
		makeJob(d.ID, d.ID+"-next", 4).Workers(1, 8).Obj())
}

func TestGPUTypes(t *testing.T) {
	nodes := []Node{modelNode("a100", "A100", 8), modelNode("h100", "H100", 8)}
	only := tenantOf("t").gpuTypes(map[string]int64{"A100": 8})
	cases := map[string]struct {
		snap      Snapshot
		want      sharingWant
		placement map[string]string // job → node of its first pod
		model     map[string]string // job → Decision.GPUTypes
	}{
		"a job that asks for a model goes to its nodes": {
			snap:      snapshot([]Tenant{only}, nodes, makeJob("t", "x", 1).Workers(1, 8).GPUType("A100").Obj()),
			want:      sharingWant{admit: []string{"x"}},
			placement: map[string]string{"x": "a100"},
		},
		"no quota of a model: the job waits for quota": {
			snap: snapshot([]Tenant{only}, nodes, makeJob("t", "x", 1).Workers(1, 8).GPUType("H100").Obj()),
			want: sharingWant{reasons: map[string]job.WaitReason{"x": job.WaitQuota}, messages: map[string][]string{"x": {"H100 GPUs"}}},
		},
		"a job of any model is counted against a model it has quota of, and pinned to it": {
			snap:      snapshot([]Tenant{only}, nodes, makeJob("t", "x", 1).Workers(1, 4).Obj()),
			want:      sharingWant{admit: []string{"x"}},
			placement: map[string]string{"x": "a100"},
			model:     map[string]string{"x": "A100"},
		},
		"quota per model: the A100 quota is used up by a running job, an any-model job waits": {
			snap: snapshot([]Tenant{only}, nodes,
				makeJob("t", "run", 1).Workers(1, 8).Running(t0).On("a100").Obj(),
				makeJob("t", "x", 2).Workers(1, 4).Obj()),
			want: sharingWant{reasons: map[string]job.WaitReason{"x": job.WaitQuota}},
		},
		"borrowing per model: a borrows b's idle H100s, and b reclaims them": {
			snap: snapshot([]Tenant{
				tenantOf("a").cohort("c").gpuTypes(map[string]int64{"A100": 8}),
				tenantOf("b").cohort("c").gpuTypes(map[string]int64{"H100": 8}),
			}, nodes,
				makeJob("a", "a-h100", 1).Workers(1, 8).GPUType("H100").Running(t0).On("h100").Obj(),
				makeJob("b", "b1", 2).Workers(1, 8).GPUType("H100").Obj(),
				makeJob("a", "a2", 3).Workers(1, 8).GPUType("A100").Obj()),
			want:      sharingWant{admit: []string{"a2"}, preempt: map[string]string{"a-h100": "b1 RECLAIM"}, messages: map[string][]string{"a-h100": {"8 H100 GPUs in use, 0 nominal"}}},
			placement: map[string]string{"a2": "a100"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := checkSharing(t, tc.snap, tc.want)
			for name, node := range tc.placement {
				require.Equal(t, node, d.Assigned[key(tc.snap.Jobs[0].Key.Tenant, name)][0], "node of %s", name)
			}
			for name, m := range tc.model {
				require.Equal(t, m, d.GPUTypes[key("t", name)])
			}
		})
	}
}

// TestFairShareNoOscillation applies decisions on a fixed set of jobs
// (nothing arrives, nothing ends, victims stop at once) cycle after cycle:
// fair-share and reclaim preemptions must come to rest, and no job may be
// preempted back for a job that preempted it.
func TestFairShareNoOscillation(t *testing.T) {
	total := 0
	for seed := range 20 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			var tenants []Tenant
			for i := range 4 {
				tn := tenantOf(fmt.Sprintf("t%d", i)).quota(int64(4 * (i + 1))).cohort("c").fairSharePreemption().bestEffort()
				tn.Sharing.Weight = float64(1 + (seed+i)%3)
				tenants = append(tenants, tn)
			}
			nodes := []Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8), gpuNode("n4", 8), gpuNode("n5", 8)}
			// t2 and t3 start alone and borrow; t0's and t1's jobs arrive
			// at the third cycle and reclaim or take by fair share.
			var jobs, arriving []Job
			for i := range 24 {
				tn := tenants[(i*7+seed)%4]
				j := makeJob(tn.ID, fmt.Sprintf("j%02d", i), int64(i+1)).Workers(1, int64(1+(i+seed)%8)).Obj()
				if tn.ID == "t0" || tn.ID == "t1" {
					arriving = append(arriving, j)
				} else {
					jobs = append(jobs, j)
				}
			}
			preemptedBy := map[Key]Key{}
			quiet := 0
			for cycle := 0; cycle < 200 && quiet < 3; cycle++ {
				if cycle == 3 {
					jobs = append(jobs, arriving...)
				}
				s := snapshot(tenants, nodes, jobs...)
				s.Now = t0.Add(time.Duration(cycle) * time.Minute)
				d := Schedule(s)
				byKey := map[Key]int{}
				for i, j := range jobs {
					byKey[j.Key] = i
				}
				used := map[string]int64{}
				for _, j := range jobs {
					if j.Admitted {
						used[j.Key.Tenant] += demandOf(j.Groups)[job.GPU]
					}
				}
				nominal := map[string]int64{}
				for _, tn := range tenants {
					nominal[tn.ID] = tn.Quota[job.GPU]
				}
				for _, p := range d.Preempt {
					require.Greater(t, used[p.Victim.Tenant], nominal[p.Victim.Tenant], "a tenant within its nominal quota is never preempted by another: %s", p.Message)
					require.NotEqual(t, p.Victim, preemptedBy[p.By], "cycle %d: %s preempts back the job that preempted it (%s)", cycle, p.ByName, p.Message)
					preemptedBy[p.Victim] = p.By
					total++
					v := &jobs[byKey[p.Victim]]
					v.Admitted, v.OnNodes, v.PreemptingFor, v.PreemptedBy = false, nil, Key{}, p.By
					for g := range v.Groups {
						v.Groups[g].Placed = 0
					}
				}
				for _, k := range d.Admit {
					j := &jobs[byKey[k]]
					j.Admitted, j.StartTime, j.PreemptedBy = true, s.Now, Key{}
					j.OnNodes = map[string]job.Vector{}
					for g := range j.Groups {
						j.Groups[g].Placed = j.Groups[g].Count
					}
					at := 0
					for _, g := range j.Groups {
						for range g.Count {
							n := d.Assigned[k][at]
							j.OnNodes[n] = j.OnNodes[n].Add(g.Request)
							at++
						}
					}
				}
				if len(d.Preempt)+len(d.Admit) == 0 && cycle >= 3 {
					quiet++
				} else {
					quiet = 0
				}
			}
			require.Equal(t, 3, quiet, "decisions came to rest")
		})
	}
	t.Logf("%d preemptions in all", total)
	require.NotZero(t, total, "the cases preempt at all")
}

func TestDecayUsage(t *testing.T) {
	day := 24 * time.Hour
	u := DecayUsage(Usage{}, job.Vector{job.GPU: 8}, 100*day, day)
	require.InDelta(t, 8, u[job.GPU], 1e-9, "used 8 all along: 8")
	u = DecayUsage(u, job.Vector{}, day, day)
	require.InDelta(t, 4, u[job.GPU], 1e-9, "stopped a half life ago: half")
	require.Equal(t, Usage{}, DecayUsage(u, job.Vector{}, day, 0), "no half life: no history")
	require.Equal(t, u, DecayUsage(u, job.Vector{job.GPU: 8}, 0, day))
	require.False(t, math.IsNaN(u[job.CPU]))
}

// TestZeroSharingIsToday: a snapshot whose tenants' Sharing is zero gives
// the same decision as before sharing existed (the property snapshots).
func TestZeroSharingIsToday(t *testing.T) {
	s := largeSnapshot(2000, 200, 20, 100)
	d := Schedule(s)
	require.NotEmpty(t, d.Admit)
	for _, p := range d.Preempt {
		require.Equal(t, PreemptPriority, p.Kind)
		require.Equal(t, p.Victim.Tenant, p.By.Tenant, "preemption never crosses tenants without cohorts")
		require.True(t, strings.HasPrefix(p.Message, "preempted by job"))
	}
	require.Empty(t, d.GPUTypes)
}
