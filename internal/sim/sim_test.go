package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
)

func gpuNodes(n int) []admission.Node {
	var nodes []admission.Node
	for i := range n {
		nodes = append(nodes, admission.Node{Name: string(rune('a' + i)),
			Allocatable: job.Vector{job.CPU: 64000, job.Memory: 512 << 30, job.GPU: 8, job.Pods: 110}})
	}
	return nodes
}

func gang(tenantID, name string, submit, run time.Duration, workers int32, gpus int64) Job {
	return Job{Tenant: tenantID, Name: name, Submit: submit, Run: run, Groups: []admission.Group{
		admission.NewGroup("worker", workers, job.Vector{job.CPU: 1000, job.Memory: 1 << 30, job.GPU: gpus, job.Pods: 1}, admission.Placement{}),
	}}
}

// Two gangs of 3 × 4 GPUs on two nodes of 8: together they need 24 GPUs of
// 16. Submitted together without gang admission, their pods interleave, each holds half the
// room the other needs, and neither ever runs; the scheduler admits one,
// then the other.
func TestGangsDeadlockOnlyWithoutGangAdmission(t *testing.T) {
	tr := Trace{
		Tenants: []admission.Tenant{{ID: "t"}},
		Nodes:   gpuNodes(2),
		Jobs: []Job{
			gang("t", "a", 0, time.Hour, 3, 4),
			gang("t", "b", 0, time.Hour, 3, 4),
		},
	}
	fifo, err := Run(tr, PolicyQuotaFIFO, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if fifo.Finished != 0 || fifo.Stuck != 2 || fifo.Held == 0 || fifo.GPUUtilization != 0 {
		t.Errorf("quota-fifo: %+v, want both stuck holding GPUs", fifo)
	}
	s, err := Run(tr, PolicyScheduler, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if s.Finished != 2 || s.Stuck != 0 || s.Held != 0 || s.Makespan != 2*time.Hour {
		t.Errorf("scheduler: %+v, want both finished one after the other in 2h, nothing held", s)
	}
	// 12 of 16 GPUs busy all along.
	if s.GPUUtilization < 0.749 || s.GPUUtilization > 0.751 {
		t.Errorf("scheduler utilization %.3f, want 0.75", s.GPUUtilization)
	}
	if w := s.Wait["t"]; w.N != 2 || w.Max != time.Hour {
		t.Errorf("waits %+v, want b waiting for a's hour", w)
	}
}

// An urgent job of a tenant that preempts its lower priority preempts a
// running job, which then resumes where it left off (it checkpointed).
func TestPreemptedJobResumesWithItsProgress(t *testing.T) {
	urgent := gang("r", "urgent", 30*time.Minute, 20*time.Minute, 2, 8)
	urgent.Priority = 100
	tr := Trace{
		Tenants: []admission.Tenant{{ID: "r", Scheduling: tenant.Scheduling{Preemption: tenant.PreemptLowerPriority}}},
		Nodes:   gpuNodes(2),
		Jobs:    []Job{gang("r", "long", 0, time.Hour, 2, 8), urgent},
	}
	res, err := Run(tr, PolicyScheduler, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.Preemptions != 1 || res.Finished != 2 {
		t.Fatalf("%+v, want one preemption and both finished", res)
	}
	// long: 30 min, preempted for 20 min, then its last 30 min.
	if res.Makespan != 80*time.Minute {
		t.Errorf("makespan %v, want 1h20m", res.Makespan)
	}
	if w := res.Wait["r"]; w.Max != 0 {
		t.Errorf("waits %+v, want the urgent job started on arrival", w)
	}
	// Without preemption the urgent job waits for the long one.
	tr.Tenants[0].Scheduling.Preemption = tenant.PreemptNever
	res, err = Run(tr, PolicyScheduler, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.Preemptions != 0 || res.Wait["r"].Max != 30*time.Minute {
		t.Errorf("%+v, want no preemption and the urgent job waiting 30 min", res)
	}
}

// On a generated day of a shared cluster the scheduler runs everything,
// never holds GPUs for partial gangs, and the same seed gives the same
// result.
func TestGeneratedTrace(t *testing.T) {
	tr := Generate(1, 8, 300, 0.9)
	if len(tr.Jobs) != 300 || len(tr.Nodes) != 8 || tr.check() != nil {
		t.Fatalf("generated %d jobs on %d nodes: %v", len(tr.Jobs), len(tr.Nodes), tr.check())
	}
	horizon := 60 * 24 * time.Hour
	s, err := Run(tr, PolicyScheduler, horizon)
	if err != nil {
		t.Fatal(err)
	}
	if s.Finished != 300 || s.Held != 0 || s.GPUUtilization <= 0 || s.GPUUtilization > 1 {
		t.Errorf("scheduler: %+v", s)
	}
	if s.Fairness <= 0 || s.Fairness > 1 || len(s.Wait) != 3 {
		t.Errorf("scheduler fairness %.3f over %d tenants", s.Fairness, len(s.Wait))
	}
	again, _ := Run(Generate(1, 8, 300, 0.9), PolicyScheduler, horizon)
	if again.Makespan != s.Makespan || again.Preemptions != s.Preemptions {
		t.Errorf("same seed, different runs: %v/%d vs %v/%d", s.Makespan, s.Preemptions, again.Makespan, again.Preemptions)
	}
	fifo, err := Run(tr, PolicyQuotaFIFO, horizon)
	if err != nil {
		t.Fatal(err)
	}
	if fifo.Finished+fifo.Stuck != 300 || fifo.Held <= 0 {
		t.Errorf("quota-fifo: %+v, want partial gangs holding GPUs", fifo)
	}
	t.Logf("scheduler:  %+v", s)
	t.Logf("quota-fifo: %+v", fifo)
}

func TestReadTrace(t *testing.T) {
	good := `{"tenants":[{"id":"a","quota":{"gpus":8}}],
	  "nodes":[{"name":"gpu","count":2,"cpu":"32","memory":"256Gi","gpus":8}],
	  "jobs":[{"tenant":"a","name":"x","submit":"0s","run":"1h","replicas":[{"name":"worker","count":2,"gpus":4,"cpu":"4"}]}]}`
	tr, err := ReadTrace(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Nodes) != 2 || tr.Nodes[1].Name != "gpu-1" || tr.Nodes[0].Allocatable[job.Pods] != 110 ||
		tr.Tenants[0].Quota[job.GPU] != 8 || tr.Jobs[0].Groups[0].Request[job.CPU] != 4000 || tr.Jobs[0].Run != time.Hour {
		t.Errorf("parsed %+v", tr)
	}
	for _, c := range []struct{ edit, want string }{
		{`"submit":"0s"`, `"submit":"soon"` + "\x00jobs[0].submit"},
		{`"tenant":"a","name"`, `"tenant":"b","name"` + "\x00jobs[0].tenant"},
		{`"count":2,"gpus":4`, `"count":0,"gpus":4` + "\x00jobs[0].replicas[0].count"},
		{`"cpu":"32"`, `"cpu":"lots"` + "\x00nodes[0].cpu"},
		{`"quota":{"gpus":8}`, `"quota":{"gpus":8,"tpus":1}` + "\x00unknown field"},
	} {
		repl, want, _ := strings.Cut(c.want, "\x00")
		_, err := ReadTrace(strings.NewReader(strings.Replace(good, c.edit, repl, 1)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %s", repl, err, want)
		}
	}
	if _, err := Run(tr, "lottery", time.Hour); err == nil {
		t.Error("an unknown policy ran")
	}
}
