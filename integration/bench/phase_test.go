//go:build bench || integration

package bench

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"
)

// submitFunc starts set name: it calls started with the time the set's
// latency counts from, then called with the duration and error of its API
// call(s).
type submitFunc func(name string, started func(time.Time), called func(time.Duration, error))

// path is one side of the dispatch comparison, accumulated over its
// blocks.
type path struct {
	name, prefix string
	submit       submitFunc

	next      int // index of the next set
	submitFor time.Duration
	quietFor  time.Duration // spent in quiet after the blocks
	cpu       cpuTotals
	loads     []string

	mu       sync.Mutex
	starts   map[string]time.Time
	calls    []time.Duration
	failed   int
	firstErr error
}

func newPath(name, prefix string, submit submitFunc) *path {
	return &path{name: name, prefix: prefix, submit: submit, starts: map[string]time.Time{}, cpu: newCPUTotals()}
}

// runBlock submits n sets of each of paths at cfg.rate per second in all,
// open loop (a slow answer never delays the next submit), the paths taking
// turns set by set, so that each meets the machine at the same moments;
// then waits up to cfg.drain for all their pods and calls quiet (which
// waits for the cluster and Trainyard to finish the block's work). CPU is
// counted from the first submit to quiet's end; it and the submit and
// quiet times go to the first path, the block's owner.
func runBlock(cfg config, n int, watch *podWatch, procs []*proc, quiet func(), paths ...*path) {
	owner := paths[0]
	interval := time.Duration(float64(time.Second) / cfg.rate)
	load := loadavg()
	for _, p := range paths {
		p.loads = append(p.loads, load)
	}
	before := sampleCPU(procs)
	names := make([][]string, len(paths))
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range n * len(paths) {
		time.Sleep(time.Until(begin.Add(time.Duration(i) * interval)))
		k := i % len(paths)
		p := paths[k]
		name := fmt.Sprintf("%s-%05d", p.prefix, p.next)
		p.next++
		names[k] = append(names[k], name)
		wg.Go(func() {
			p.submit(name, func(t time.Time) { p.started(name, t) }, func(d time.Duration, err error) { p.called(name, d, err) })
		})
	}
	wg.Wait()
	owner.submitFor += time.Since(begin)
	var accepted []string
	for k, p := range paths {
		p.mu.Lock()
		accepted = append(accepted, slices.DeleteFunc(names[k], func(name string) bool { _, ok := p.starts[name]; return !ok })...)
		p.mu.Unlock()
	}
	watch.waitFull(accepted, podsPerJob, cfg.drain)
	q := time.Now()
	quiet()
	owner.quietFor += time.Since(q)
	owner.cpu.add(before, sampleCPU(procs))
}

func (p *path) started(name string, t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts[name] = t
}

func (p *path) called(name string, d time.Duration, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failed++
		if p.firstErr == nil {
			p.firstErr = fmt.Errorf("%s: %w", name, err)
		}
		delete(p.starts, name)
		return
	}
	p.calls = append(p.calls, d)
}

// result summarizes every set of the path from the bench's pod informer.
func (p *path) result(b testing.TB, watch *podWatch) dispatchResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := dispatchResult{path: p.name, sets: p.next, failed: p.failed, firstErr: p.firstErr,
		submitFor: p.submitFor, quietFor: p.quietFor, cpu: p.cpu.uses(), loads: p.loads, podBytes: watch.podBytes(p.prefix)}
	var lat, toFirst, spread []time.Duration
	for name, t0 := range p.starts {
		first, full, ok := watch.times(name, podsPerJob)
		if !ok {
			r.missing++
			continue
		}
		d := full.Sub(t0)
		if d < 0 {
			r.early++
			d = 0
		}
		lat = append(lat, d)
		toFirst = append(toFirst, max(first.Sub(t0), 0))
		spread = append(spread, full.Sub(first))
	}
	r.lat, r.call = summarize(lat), summarize(p.calls)
	r.toFirst, r.spread = summarize(toFirst), summarize(spread)
	if r.failed > 0 {
		b.Errorf("%s: %d of %d sets failed; first: %v", p.name, r.failed, r.sets, r.firstErr)
	}
	if r.missing > 0 {
		b.Errorf("%s: %d of %d sets did not have all %d pods in time", p.name, r.missing, r.sets, podsPerJob)
	}
	return r
}

// startTimes is a copy of the start time of every set that was accepted.
func (p *path) startTimes() map[string]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.starts)
}
