package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
)

// CheckpointEvery is how often a running job checkpoints, counted from
// its (re)start: a preempted job resumes from its last checkpoint and
// the work since is lost (GPU-hours lost to preemption).
const CheckpointEvery = 30 * time.Minute

// HistoryHalfLife is the half life of the decayed usage PolicyCohortHistory
// counts in fair share.
const HistoryHalfLife = 24 * time.Hour

// SharingStats are the figures issue 42 asks of a policy.
type SharingStats struct {
	// Tenants: per tenant, the GPU-time it received against its
	// entitlement while it had demand.
	Tenants map[string]TenantShare
	// ShareFairness is Jain's index over the tenants' Ratio, each capped
	// at 1 (borrowing beyond the entitlement is no unfairness to others):
	// 1 when every tenant got all it was entitled to.
	ShareFairness float64
	// ToNominal are the spells during which a tenant was owed its nominal
	// quota: the head of its queue (its first job by priority and
	// submission: tenants' queues are STRICT_FIFO unless the trace says
	// otherwise) fit in its nominal quota beside what it held, from the
	// moment it did until it did not any more.
	ToNominal Stats
	// BusyGPUHours is the GPU-time jobs ran; LostGPUHours the work lost to
	// preemption (since the victims' last checkpoint).
	BusyGPUHours, LostGPUHours float64
	// WaitBySize is the queue wait (submission to first start) of the jobs
	// that started, by gang size (SizeClasses).
	WaitBySize map[string]Stats
	// LongestWait is the longest of those waits.
	LongestWait time.Duration
	// PeakBacklog is the most work that waited at one instant (the GPU
	// time its jobs still had to run) over the cluster's GPUs, at
	// PeakBacklogAt: how long the whole cluster would take to run the
	// jobs then waiting. Some of them wait about that long under any
	// order that keeps the GPUs busy, so it bounds how short the longest
	// wait can be.
	PeakBacklog, PeakBacklogAt time.Duration
}

// TenantShare is what a tenant received against its entitlement: while
// it had demand, min(its nominal quota, its demand) GPUs.
type TenantShare struct {
	Nominal            int64
	DemandHours        float64 // time during which it had demand
	Entitled, Received float64 // GPU-hours
	// Ratio is Received over Entitled.
	Ratio float64
}

// SizeClasses names the gang sizes, in GPUs, that waits are grouped by.
var SizeClasses = []string{"1 GPU", "2-8 GPUs", "9-32 GPUs", "33-64 GPUs", ">64 GPUs"}

func sizeClass(gpus int64) string {
	switch {
	case gpus <= 1:
		return SizeClasses[0]
	case gpus <= 8:
		return SizeClasses[1]
	case gpus <= 32:
		return SizeClasses[2]
	case gpus <= 64:
		return SizeClasses[3]
	}
	return SizeClasses[4]
}

// shareRun keeps the sharing figures during a run.
type shareRun struct {
	ids      []string
	usage    map[string]admission.Usage // decayed, for PolicyCohortHistory
	now      map[string]tenantNow       // as of the last observe
	entitled map[string]float64         // GPU-seconds
	received map[string]float64
	demandT  map[string]float64 // seconds
	owedFrom map[string]time.Duration
	owed     []time.Duration
	lostSec  float64 // GPU-seconds
	gpus     int64
	peak     time.Duration // SharingStats.PeakBacklog
	peakAt   time.Duration
}

type tenantNow struct {
	held, demand int64 // GPUs: of admitted jobs; of admitted and pending
	owed         bool
}

func newShareRun(r *run) *shareRun {
	s := &shareRun{usage: map[string]admission.Usage{}, now: map[string]tenantNow{}, entitled: map[string]float64{},
		received: map[string]float64{}, demandT: map[string]float64{}, owedFrom: map[string]time.Duration{}}
	for id := range r.tenants {
		s.ids = append(s.ids, id)
		s.owedFrom[id] = -1
	}
	for _, n := range r.nodes {
		s.gpus += n.Allocatable[job.GPU]
	}
	slices.Sort(s.ids)
	return s
}

func (s *shareRun) nominal(r *run, id string) int64 {
	if q := r.tenants[id].Quota[job.GPU]; q > 0 {
		return q
	}
	var gpus int64
	for _, n := range r.nodes {
		gpus += n.Allocatable[job.GPU]
	}
	return gpus
}

// account adds dt of the state seen at the last observe.
func (s *shareRun) account(r *run, dt float64) {
	for _, id := range s.ids {
		n := s.now[id]
		if n.demand > 0 {
			s.demandT[id] += dt
			s.entitled[id] += float64(min(s.nominal(r, id), n.demand)) * dt
			s.received[id] += float64(n.held) * dt
		}
		if r.policy == PolicyCohortHistory {
			s.usage[id] = admission.DecayUsage(s.usage[id], job.Vector{job.GPU: n.held}, time.Duration(dt*float64(time.Second)), HistoryHalfLife)
		}
	}
}

// observe takes the state after a scheduling step: what each tenant
// holds and asks for, and whether it is owed its nominal quota.
func (s *shareRun) observe(r *run) {
	held, demand := map[string]int64{}, map[string]int64{}
	head := map[string]*simJob{}
	var backlog float64 // GPU-seconds
	for _, j := range r.live {
		g := demand1(j)
		demand[j.Tenant] += g
		if !j.admitted {
			backlog += float64(g) * j.left.Seconds()
		}
		if j.admitted {
			held[j.Tenant] += g
		} else if h := head[j.Tenant]; h == nil || j.Priority > h.Priority || (j.Priority == h.Priority && j.seq < h.seq) {
			head[j.Tenant] = j
		}
	}
	if s.gpus > 0 {
		if b := time.Duration(backlog / float64(s.gpus) * float64(time.Second)); b > s.peak {
			s.peak, s.peakAt = b, r.now
		}
	}
	for _, id := range s.ids {
		h := head[id]
		owed := h != nil && demand1(h) > 0 && held[id]+demand1(h) <= s.nominal(r, id)
		s.now[id] = tenantNow{held: held[id], demand: demand[id], owed: owed}
		switch from := s.owedFrom[id]; {
		case owed && from < 0:
			s.owedFrom[id] = r.now
		case !owed && from >= 0:
			s.owed = append(s.owed, r.now-from)
			s.owedFrom[id] = -1
		}
	}
}

func demand1(j *simJob) int64 { return demand(j.Groups)[job.GPU] }

func (s *shareRun) lost(v *simJob, d time.Duration) {
	s.lostSec += float64(demand1(v)) * d.Seconds()
}

func (s *shareRun) result(r *run) SharingStats {
	out := SharingStats{Tenants: map[string]TenantShare{}, WaitBySize: map[string]Stats{},
		BusyGPUHours: r.busyGPU / 3600, LostGPUHours: s.lostSec / 3600, PeakBacklog: s.peak, PeakBacklogAt: s.peakAt}
	var ratios []float64
	for _, id := range s.ids {
		ts := TenantShare{Nominal: s.nominal(r, id), DemandHours: s.demandT[id] / 3600,
			Entitled: s.entitled[id] / 3600, Received: s.received[id] / 3600}
		if ts.Entitled > 0 {
			ts.Ratio = ts.Received / ts.Entitled
			ratios = append(ratios, min(ts.Ratio, 1))
		}
		out.Tenants[id] = ts
		if from := s.owedFrom[id]; from >= 0 {
			s.owed = append(s.owed, r.now-from) // still owed at the end
		}
	}
	out.ShareFairness = jainOf(ratios)
	if len(s.owed) > 0 {
		out.ToNominal = statsOf(slices.Clone(s.owed))
	}
	waits := map[string][]time.Duration{}
	for _, j := range r.jobs {
		if j.firstStart < 0 {
			continue
		}
		w := j.firstStart - j.Submit
		waits[sizeClass(demand1(j))] = append(waits[sizeClass(demand1(j))], w)
		out.LongestWait = max(out.LongestWait, w)
	}
	for c, ws := range waits {
		out.WaitBySize[c] = statsOf(ws)
	}
	return out
}

func jainOf(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if len(xs) == 0 || sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// BurstyTenants are GenerateBursty's tenants and their nominal quotas, in
// percent of the cluster's GPUs: 70 % in all.
var BurstyTenants = []struct {
	ID      string
	Percent int64
}{{"vision", 20}, {"nlp", 15}, {"speech", 12}, {"research", 10}, {"robotics", 8}, {"ads", 5}}

// GenerateBursty makes the trace on which sharing matters (issue 42):
// nodes of 8 GPUs; the BurstyTenants, whose nominal quotas add up to 70 %
// of the GPUs; each idle for hours (exponential, mean 8 h), then a burst
// (mean 3 h) in which it submits its jobs; gangs of 1 to 64 GPUs (pods
// of at most 8, never more than the tenant's nominal quota, so that every
// job can run under every policy); heavy-tailed run times (Pareto, 10
// minutes and up, α 1.3, at most 2 days). load is the demand over the
// cluster's capacity across the trace's span. The same seed gives the
// same trace.
func GenerateBursty(seed uint64, nodes, jobs int, load float64) Trace {
	rng := rand.New(rand.NewPCG(seed, seed^0xb0b5))
	var tr Trace
	for i := range nodes {
		tr.Nodes = append(tr.Nodes, admission.Node{Name: fmt.Sprintf("gpu-%03d", i),
			Allocatable: job.Vector{job.CPU: 96000, job.Memory: 768 << 30, job.GPU: 8, job.Pods: 110}})
	}
	gpus := int64(8 * nodes)
	var weights []float64
	for _, t := range BurstyTenants {
		tr.Tenants = append(tr.Tenants, admission.Tenant{ID: t.ID, Quota: job.Vector{job.GPU: max(1, (gpus*t.Percent+50)/100)}})
		weights = append(weights, float64(t.Percent))
	}
	sizes := []struct {
		gpus int64
		p    float64
	}{{1, .30}, {2, .15}, {4, .15}, {8, .15}, {16, .10}, {32, .10}, {64, .05}}
	perTenant := make([][]int, len(tr.Tenants))
	var gpuSeconds float64
	for i := range jobs {
		ti := pick(rng, weights)
		t := tr.Tenants[ti]
		x, g := rng.Float64(), int64(64)
		for _, s := range sizes {
			if x < s.p {
				g = s.gpus
				break
			}
			x -= s.p
		}
		for g > t.Quota[job.GPU] {
			g /= 2
		}
		g = max(g, 1)
		run := time.Duration(min(48*3600, 600/math.Pow(1-rng.Float64(), 1/1.3)) * float64(time.Second)).Round(time.Second)
		pods, per := int32(1), g
		if g > 8 {
			pods, per = int32(g/8), 8
		}
		j := Job{Tenant: t.ID, Name: fmt.Sprintf("job-%05d", i), Run: run, Groups: []admission.Group{
			admission.NewGroup("worker", pods, job.Vector{job.CPU: 8000 * per, job.Memory: (64 << 30) * per, job.GPU: per, job.Pods: 1}, admission.Placement{}),
		}}
		gpuSeconds += float64(g) * run.Seconds()
		perTenant[ti] = append(perTenant[ti], len(tr.Jobs))
		tr.Jobs = append(tr.Jobs, j)
	}
	span := gpuSeconds / (float64(gpus) * max(load, 0.01))
	for ti, idx := range perTenant {
		// Alternate idle spells and bursts across the span; the tenant's
		// jobs arrive uniformly within its bursts.
		type window struct{ from, len float64 }
		var bursts []window
		var total float64
		at := rng.ExpFloat64() * 8 * 3600 * float64(ti%3) / 2
		for at < span || len(bursts) == 0 {
			l := max(1800, rng.ExpFloat64()*3*3600)
			bursts = append(bursts, window{at, l})
			total += l
			at += l + rng.ExpFloat64()*8*3600
		}
		for _, k := range idx {
			x := rng.Float64() * total
			for _, b := range bursts {
				if x < b.len {
					tr.Jobs[k].Submit = time.Duration((b.from + x) * float64(time.Second)).Round(time.Second)
					break
				}
				x -= b.len
			}
		}
	}
	return tr
}

func pick(rng *rand.Rand, weights []float64) int {
	var sum float64
	for _, w := range weights {
		sum += w
	}
	x := rng.Float64() * sum
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}
