package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

// File is a trace as written by people: what `trainyard simulate --trace`
// reads (JSON).
type File struct {
	Tenants []FileTenant `json:"tenants"`
	Nodes   []FileNodes  `json:"nodes"`
	Jobs    []FileJob    `json:"jobs"`
}

// FileTenant is a tenant: its quota and scheduling policies.
type FileTenant struct {
	ID         string                  `json:"id"`
	Quota      FileResources           `json:"quota"`
	Preemption tenant.PreemptionPolicy `json:"preemption,omitempty"`
	Queueing   tenant.QueueingStrategy `json:"queueing,omitempty"`
}

// FileNodes is Count identical nodes.
type FileNodes struct {
	Name   string            `json:"name"`
	Count  int               `json:"count"`
	CPU    string            `json:"cpu"`
	Memory string            `json:"memory"`
	GPUs   int64             `json:"gpus"`
	Pods   int64             `json:"pods"`
	Labels map[string]string `json:"labels,omitempty"`
}

// FileResources is a quota; empty amounts do not limit.
type FileResources struct {
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
	GPUs   int64  `json:"gpus,omitempty"`
	Pods   int64  `json:"pods,omitempty"`
}

// FileJob is one submission.
type FileJob struct {
	Tenant   string        `json:"tenant"`
	Name     string        `json:"name"`
	Submit   string        `json:"submit"` // a Go duration since the trace's start: "90m"
	Run      string        `json:"run"`    // how long it runs: "2h"
	Priority int32         `json:"priority,omitempty"`
	Replicas []FileReplica `json:"replicas"`
}

// FileReplica is a replica type of a job.
type FileReplica struct {
	Name         string            `json:"name"`
	Count        int32             `json:"count"`
	CPU          string            `json:"cpu,omitempty"`
	Memory       string            `json:"memory,omitempty"`
	GPUs         int32             `json:"gpus,omitempty"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// ReadTrace parses a JSON trace; errors name the field.
func ReadTrace(r io.Reader) (Trace, error) {
	var f File
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Trace{}, fmt.Errorf("trace: %w", err)
	}
	return f.Trace()
}

// Trace converts the file into a Trace.
func (f File) Trace() (Trace, error) {
	var tr Trace
	for i, t := range f.Tenants {
		q, err := t.Quota.vector()
		if err != nil {
			return Trace{}, fmt.Errorf("tenants[%d].quota.%w", i, err)
		}
		tr.Tenants = append(tr.Tenants, admission.Tenant{ID: t.ID, Quota: q,
			Scheduling: tenant.Scheduling{Preemption: t.Preemption, Queueing: t.Queueing}})
	}
	for i, n := range f.Nodes {
		alloc, err := FileResources{CPU: n.CPU, Memory: n.Memory, GPUs: n.GPUs, Pods: n.Pods}.vector()
		if err != nil {
			return Trace{}, fmt.Errorf("nodes[%d].%w", i, err)
		}
		if alloc[job.Pods] == 0 {
			alloc[job.Pods] = 110 // the kubelet's default
		}
		for k := range max(n.Count, 1) {
			tr.Nodes = append(tr.Nodes, admission.Node{Name: fmt.Sprintf("%s-%d", n.Name, k), Labels: n.Labels, Allocatable: alloc})
		}
	}
	for i, j := range f.Jobs {
		sj := Job{Tenant: j.Tenant, Name: j.Name, Priority: j.Priority}
		var err error
		if sj.Submit, err = time.ParseDuration(j.Submit); err != nil {
			return Trace{}, fmt.Errorf("jobs[%d].submit: %w", i, err)
		}
		if sj.Run, err = time.ParseDuration(j.Run); err != nil {
			return Trace{}, fmt.Errorf("jobs[%d].run: %w", i, err)
		}
		if len(j.Replicas) == 0 {
			return Trace{}, fmt.Errorf("jobs[%d].replicas: at least one is required", i)
		}
		for k, r := range j.Replicas {
			req, err := job.Resources{CPU: r.CPU, Memory: r.Memory, GPU: r.GPUs}.PodRequests()
			if err != nil {
				return Trace{}, fmt.Errorf("jobs[%d].replicas[%d].%w", i, k, err)
			}
			if r.Count < 1 {
				return Trace{}, fmt.Errorf("jobs[%d].replicas[%d].count: must be at least 1", i, k)
			}
			sj.Groups = append(sj.Groups, admission.NewGroup(r.Name, r.Count, req, admission.Placement{NodeSelector: r.NodeSelector}))
		}
		tr.Jobs = append(tr.Jobs, sj)
	}
	return tr, tr.check()
}

func (f FileResources) vector() (job.Vector, error) {
	var v job.Vector
	for _, q := range []struct {
		res job.Resource
		s   string
	}{{job.CPU, f.CPU}, {job.Memory, f.Memory}} {
		if q.s == "" {
			continue
		}
		parsed, err := resource.ParseQuantity(q.s)
		if err != nil {
			return v, fmt.Errorf("%s: %w", q.res.Name(), err)
		}
		if v[q.res], err = q.res.Amount(parsed); err != nil {
			return v, fmt.Errorf("%s: %w", q.res.Name(), err)
		}
	}
	v[job.GPU], v[job.Pods] = f.GPUs, f.Pods
	return v, nil
}

// check refuses what a run could not make sense of.
func (tr Trace) check() error {
	tenants := map[string]bool{}
	for i, t := range tr.Tenants {
		if t.ID == "" || tenants[t.ID] {
			return fmt.Errorf("tenants[%d].id: empty or repeated", i)
		}
		tenants[t.ID] = true
	}
	names := map[string]bool{}
	for i, j := range tr.Jobs {
		switch {
		case !tenants[j.Tenant]:
			return fmt.Errorf("jobs[%d].tenant: %q is not among the trace's tenants", i, j.Tenant)
		case j.Name == "" || names[j.Tenant+"/"+j.Name]:
			return fmt.Errorf("jobs[%d].name: empty or repeated within its tenant", i)
		case j.Submit < 0 || j.Run <= 0:
			return fmt.Errorf("jobs[%d]: submit must be at least 0 and run more than 0", i)
		}
		names[j.Tenant+"/"+j.Name] = true
	}
	if len(tr.Nodes) == 0 {
		return fmt.Errorf("nodes: at least one is required")
	}
	return nil
}

// Generate makes a synthetic trace of a shared GPU cluster: nodes of 8
// GPUs and three tenants whose quotas add up to twice the cluster (each
// may borrow what the others leave idle):
//
//   - "vision" submits distributed jobs: gangs of 2 to 4 workers of 4 or
//     8 GPUs plus a CPU-only parameter server, running 1 to 6 hours;
//   - "nlp" submits many single-GPU fine-tunes of 10 to 90 minutes;
//   - "research" submits 1 to 2 workers of 2 GPUs, some of them urgent
//     (priority 100) and preempting its own lower-priority jobs.
//
// Arrivals are a Poisson process whose rate keeps the cluster about
// loaded (load 1: demand equal to capacity) over the trace's span. The
// same seed gives the same trace.
func Generate(seed uint64, nodes, jobs int, load float64) Trace {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	cpu := func(cores int64) int64 { return cores * 1000 }
	gi := func(n int64) int64 { return n << 30 }
	var tr Trace
	for i := range nodes {
		tr.Nodes = append(tr.Nodes, admission.Node{Name: fmt.Sprintf("gpu-%d", i),
			Allocatable: job.Vector{job.CPU: cpu(96), job.Memory: gi(768), job.GPU: 8, job.Pods: 110}})
	}
	gpus := int64(8 * nodes)
	quota := func(share int64) job.Vector { return job.Vector{job.GPU: max(8, gpus*share/100)} }
	tr.Tenants = []admission.Tenant{
		{ID: "vision", Quota: quota(100)},
		{ID: "nlp", Quota: quota(50)},
		{ID: "research", Quota: quota(50), Scheduling: tenant.Scheduling{Preemption: tenant.PreemptLowerPriority}},
	}
	pod := func(cores, mem int64, g int64) job.Vector {
		return job.Vector{job.CPU: cpu(cores), job.Memory: gi(mem), job.GPU: g, job.Pods: 1}
	}
	var gpuSeconds float64
	for i := range jobs {
		j := Job{Name: fmt.Sprintf("job-%d", i)}
		uniform := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
		switch x := rng.Float64(); {
		case x < 0.25:
			per := int64(4 << rng.IntN(2))
			j.Tenant, j.Run = "vision", uniform(time.Hour, 6*time.Hour)
			j.Groups = []admission.Group{
				admission.NewGroup("worker", int32(2+rng.IntN(3)), pod(8*per, 64*per, per), admission.Placement{}),
				admission.NewGroup("ps", 1, pod(8, 32, 0), admission.Placement{}),
			}
		case x < 0.85:
			j.Tenant, j.Run = "nlp", uniform(10*time.Minute, 90*time.Minute)
			j.Groups = []admission.Group{admission.NewGroup("chief", 1, pod(8, 64, 1), admission.Placement{})}
		default:
			j.Tenant, j.Run = "research", uniform(30*time.Minute, 3*time.Hour)
			if rng.IntN(4) == 0 {
				j.Priority = 100
			}
			j.Groups = []admission.Group{admission.NewGroup("worker", int32(1+rng.IntN(2)), pod(16, 128, 2), admission.Placement{})}
		}
		gpuSeconds += float64(demand(j.Groups)[job.GPU]) * j.Run.Seconds()
		tr.Jobs = append(tr.Jobs, j)
	}
	// Spread the arrivals so that the demand over the span is load × capacity.
	span := gpuSeconds / (float64(gpus) * max(load, 0.01))
	mean := span / float64(max(jobs, 1))
	var at float64
	for i := range tr.Jobs {
		tr.Jobs[i].Submit = time.Duration(at * float64(time.Second)).Round(time.Second)
		at += rng.ExpFloat64() * mean
	}
	return tr
}
