// Package sim runs scheduling policies on virtual time over a trace of job
// submissions, so that their fairness and utilization can be compared on
// the same workload without a cluster (`trainyard simulate`).
//
// Four policies run the same trace:
//
//   - "scheduler": Trainyard's scheduler, admission.Schedule itself, every time
//     something happens (a job arrives or ends). An admitted job's pods go
//     where the decision found room (Decision.Assigned); preempted jobs
//     stop at once and go back to the queue keeping their progress up to
//     their last checkpoint (every CheckpointEvery); the rest is lost.
//   - "quota-fifo": the admission Trainyard had before the scheduler: each
//     tenant's queue in (priority, submission) order, strictly, against
//     the tenant's quota only; admitted jobs' pods are then placed one by
//     one, first fit, by a kube-scheduler model that knows nothing of
//     gangs (the pods of jobs admitted together interleave, as they do in
//     its queue). A job runs once all of its pods are placed; pods placed
//     before that hold their room. Gangs can then hold parts of each
//     other's room for ever: the simulation reports jobs that never run as
//     stuck.
//   - "cohort": the scheduler with the trace's tenants in one cohort
//     (unless they name theirs), which owns the GPUs no tenant's quota
//     covers: each tenant's quota is its nominal share; it borrows what
//     the others leave idle and the cohort's own GPUs, and gets its share
//     back by reclaim; weighted fair share orders the borrowers.
//   - "cohort-history": "cohort" whose fair share also counts each
//     tenant's usage decayed with a half life of HistoryHalfLife.
//
// Besides utilisation and waits, every run keeps the figures of issue 42
// (SharingStats): each tenant's received GPU-time against its
// entitlement, how long tenants were owed their nominal quota, GPU-hours
// lost to preemption, waits by gang size. GenerateBursty makes the trace
// on which they matter.
//
// Time is virtual: a trace of weeks runs in seconds. Pods start the moment
// they are placed; a job's run time counts from when all of its pods run.
package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
)

// Trace is a workload: tenants, nodes and the jobs they submit.
type Trace struct {
	Tenants []admission.Tenant
	Nodes   []admission.Node
	Jobs    []Job
}

// Job is one submission of a trace.
type Job struct {
	Tenant   string
	Name     string
	Submit   time.Duration // since the trace's start
	Priority int32
	Groups   []admission.Group
	Run      time.Duration // how long it runs once all of its pods run
}

// Policy names.
const (
	PolicyScheduler = "scheduler"
	PolicyQuotaFIFO = "quota-fifo"
	// PolicyCohort is the scheduler with every tenant of the trace that
	// names no cohort in one cohort: borrowing, reclaim and weighted fair
	// share (sharing.go).
	PolicyCohort = "cohort"
	// PolicyCohortHistory is PolicyCohort with fair share that counts
	// each tenant's decayed usage (half life HistoryHalfLife).
	PolicyCohortHistory = "cohort-history"
)

// Policies lists every policy.
var Policies = []string{PolicyScheduler, PolicyQuotaFIFO, PolicyCohort, PolicyCohortHistory}

// Result is what a policy made of a trace.
type Result struct {
	Policy string
	// Finished and Stuck count the jobs that ran to the end, and those that
	// never did by the horizon.
	Finished, Stuck int
	// Makespan is when the last finished job ended.
	Makespan time.Duration
	// GPUUtilization is the GPU-time jobs ran, over the GPUs' time until
	// the makespan (GPUs held by pods of jobs that do not run yet count as
	// idle: they do no work).
	GPUUtilization float64
	// Held is the share of GPU-time held by pods of jobs that were not
	// running (partial gangs).
	Held float64
	// Wait is, per tenant, the time from submission to start.
	Wait map[string]Stats
	// Fairness is Jain's index over the tenants' mean slowdown (time from
	// submission to end, over run time): 1 when every tenant waits alike
	// relative to its work, 1/n when one tenant gets everything.
	Fairness    float64
	Preemptions int
	// Sharing are the figures of issue 42 (sharing.go).
	Sharing SharingStats
}

// Stats summarize durations.
type Stats struct {
	N                  int
	P50, P95, P99, Max time.Duration
}

// state of one job during a run.
type simJob struct {
	Job
	key        admission.Key
	seq        int64
	queuedAt   time.Duration
	admitted   bool
	started    time.Duration // when it (last) began running; -1: not running
	left       time.Duration // run time still to go
	firstStart time.Duration
	end        time.Duration
	done       bool
	placed     []placement       // pods on nodes
	pendingPod []admission.Group // quota-fifo: admitted pods not placed yet (Count 1 each)
	preempted  admission.Key     // scheduler: who preempted it, while it waits
	qpos       int               // scheduler: its place in its tenant's queue (strictQueues)
	// scheduler: the snapshot's view of an admitted job, built once.
	onNodes      map[string]job.Vector
	placedGroups []admission.Group
}

type placement struct {
	node string
	req  job.Vector
}

// Run plays the trace under a policy until every job ended or the horizon.
func Run(tr Trace, policy string, horizon time.Duration) (Result, error) {
	return RunWith(tr, policy, Options{Horizon: horizon})
}

// Options are a run's settings beside the trace and the policy.
type Options struct {
	// Horizon: the run stops at this virtual time.
	Horizon time.Duration
	// BorrowAging is the scheduler's admission.Config.BorrowAging (zero:
	// off, the scheduler's default).
	BorrowAging time.Duration
}

// RunWith is Run with more settings.
func RunWith(tr Trace, policy string, o Options) (Result, error) {
	horizon := o.Horizon
	if !slices.Contains(Policies, policy) {
		return Result{}, fmt.Errorf("sim: unknown policy %q (one of %v)", policy, Policies)
	}
	r := newRun(tr, policy)
	r.aging = o.BorrowAging
	if len(r.jobs) > 0 {
		r.now = r.jobs[0].Submit
	}
	r.lastAcct = r.now
	for {
		r.arrive()
		r.finishDue()
		if policy == PolicyQuotaFIFO {
			r.stepQuotaFIFO()
		} else {
			r.stepScheduler()
		}
		r.share.observe(r)
		t, ok := r.nextEvent()
		if !ok || t > horizon {
			break
		}
		r.now = t
	}
	if r.unfinished() {
		// Nothing more happens: what is held stays held until the horizon.
		r.now = max(r.now, horizon)
		r.account()
	}
	return r.result(horizon), nil
}

type run struct {
	policy  string
	now     time.Duration
	jobs    []*simJob
	tenants map[string]admission.Tenant
	nodes   []admission.Node
	used    map[string]job.Vector // by node
	res     Result
	// held accumulates GPU-seconds held by pods of jobs not running.
	heldGPU, busyGPU float64
	lastAcct         time.Duration
	preemptions      int
	share            *shareRun
	buf              snapBuffers
	aging            time.Duration   // admission.Config.BorrowAging
	prefixLast       []admission.Key // decide's cut queues' last jobs shown
	cohorts          []admission.Cohort
	// live are the jobs that arrived and are not done, in submission
	// order; r.jobs[arrivals:] have not arrived yet. Every step looks at
	// these only, not at the whole trace.
	live     []*simJob
	arrivals int
	names    map[admission.Key]string
}

func newRun(tr Trace, policy string) *run {
	r := &run{policy: policy, tenants: map[string]admission.Tenant{}, nodes: tr.Nodes, used: map[string]job.Vector{}}
	r.res.Policy = policy
	var gpus, nominal int64
	for _, n := range tr.Nodes {
		gpus += n.Allocatable[job.GPU]
	}
	for _, t := range tr.Tenants {
		if policy == PolicyCohort || policy == PolicyCohortHistory {
			if t.Sharing.Cohort == "" {
				t.Sharing.Cohort = "all"
				nominal += t.Quota[job.GPU]
			}
		}
		r.tenants[t.ID] = t
	}
	if nominal > 0 && gpus > nominal {
		// The GPUs nobody is guaranteed are the cohort's own pool.
		r.cohorts = []admission.Cohort{{Name: "all", Nominal: job.Vector{job.GPU: gpus - nominal}}}
	}
	r.share = newShareRun(r)
	jobs := slices.Clone(tr.Jobs)
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp.Compare(a.Submit, b.Submit) })
	r.names = make(map[admission.Key]string, len(jobs))
	for i, j := range jobs {
		sj := &simJob{
			Job: j, key: admission.Key{Tenant: j.Tenant, UID: fmt.Sprintf("%s/%s", j.Tenant, j.Name)},
			seq: int64(i + 1), queuedAt: j.Submit, started: -1, firstStart: -1, left: j.Run,
		}
		r.jobs = append(r.jobs, sj)
		r.names[sj.key] = j.Name
	}
	return r
}

// snapBuffers are the scheduler policies' snapshot, kept across cycles.
type snapBuffers struct {
	tenants []admission.Tenant
	jobs    []admission.Job
	nodes   []admission.Node
	byKey   map[admission.Key]*simJob
}

// arrive adds the jobs submitted by now to the live ones.
func (r *run) arrive() {
	for r.arrivals < len(r.jobs) && r.jobs[r.arrivals].Submit <= r.now {
		r.live = append(r.live, r.jobs[r.arrivals])
		r.arrivals++
	}
}

// nextEvent is the next arrival or end after now.
func (r *run) nextEvent() (time.Duration, bool) {
	best, ok := time.Duration(0), false
	if r.arrivals < len(r.jobs) {
		best, ok = r.jobs[r.arrivals].Submit, true
	}
	for _, j := range r.live {
		if j.started < 0 {
			continue
		}
		if t := j.started + j.left; !ok || t < best {
			best, ok = t, true
		}
	}
	return best, ok
}

// finishDue ends the jobs whose run time is over, and accounts GPU time.
func (r *run) finishDue() {
	r.account()
	live := r.live[:0]
	for _, j := range r.live {
		if j.started >= 0 && !j.done && j.started+j.left <= r.now {
			j.done, j.end, j.left = true, r.now, 0
			r.free(j)
		}
		if !j.done {
			live = append(live, j)
		}
	}
	clear(r.live[len(live):])
	r.live = live
}

// account adds the GPU time since the last event: running jobs' GPUs are
// busy, GPUs held by pods of jobs not running are held.
func (r *run) account() {
	dt := (r.now - r.lastAcct).Seconds()
	r.lastAcct = r.now
	if dt <= 0 {
		return
	}
	for _, j := range r.live {
		var gpus int64
		for _, p := range j.placed {
			gpus += p.req[job.GPU]
		}
		if j.started >= 0 {
			r.busyGPU += float64(gpus) * dt
		} else {
			r.heldGPU += float64(gpus) * dt
		}
	}
	r.share.account(r, dt)
}

func (r *run) free(j *simJob) {
	for _, p := range j.placed {
		r.used[p.node] = r.used[p.node].Sub(p.req)
	}
	j.placed, j.pendingPod, j.admitted = nil, nil, false
	j.onNodes, j.placedGroups = nil, nil
}

func (r *run) unfinished() bool {
	return r.arrivals < len(r.jobs) || len(r.live) > 0
}

func (r *run) start(j *simJob) {
	j.started = r.now
	if j.firstStart < 0 {
		j.firstStart = r.now
	}
}
