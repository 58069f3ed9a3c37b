//go:build bench || integration

package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trainyard/trainyard/internal/job"
)

// probeEvery is the pace of the probe: one pod create per tick. Its pods
// are named probePrefix<n>-chief-0.
const (
	probeEvery  = 250 * time.Millisecond
	probePrefix = "probe-"
)

// probe creates one pod every probeEvery in a namespace while a phase
// runs, and files each create under the phase running when it started: a
// yardstick of the API server's own responsiveness, measured the same way
// in every phase whoever else is creating pods.
type probe struct {
	watch  *podWatch
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	phase string
	shots []probeShot
}

type probeShot struct {
	phase, name string
	start       time.Time
	call        time.Duration
	err         error
}

// probeResult is one phase's probe creates: the create call, and the
// start → informer delivery of the pod.
type probeResult struct {
	phase        string
	call, arrive latencies
	failed       int
}

func startProbe(ctx context.Context, b testing.TB, kc kubernetes.Interface, ns string, spec job.Spec, watch *podWatch) *probe {
	ctx, cancel := context.WithCancel(ctx)
	p := &probe{watch: watch, cancel: cancel}
	p.wg.Go(func() {
		tick := time.NewTicker(probeEvery)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			p.mu.Lock()
			phase := p.phase
			p.mu.Unlock()
			if phase == "" {
				// Between phases (seeding, quiet): its pods would only add to
				// the cluster's finished pods, which the pod garbage
				// collector trims beyond 12,500, oldest first.
				continue
			}
			name := fmt.Sprintf("%s%05d", probePrefix, i)
			pods, err := renderSet(name, ns, spec)
			if err != nil {
				b.Errorf("probe: %v", err)
				return
			}
			p.wg.Go(func() {
				// Not ctx: a create in flight when the probe stops completes.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				start := time.Now()
				_, err := kc.CoreV1().Pods(ns).Create(ctx, pods[0], metav1.CreateOptions{})
				shot := probeShot{phase: phase, name: name, start: start, call: time.Since(start), err: err}
				p.mu.Lock()
				p.shots = append(p.shots, shot)
				p.mu.Unlock()
			})
		}
	})
	return p
}

func (p *probe) setPhase(phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase = phase
}

// stop ends the probe.
func (p *probe) stop() {
	p.cancel()
	p.wg.Wait()
}

// results summarizes the probe's creates so far in each phase.
func (p *probe) results(b testing.TB, phases ...string) []probeResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []probeResult
	for _, phase := range phases {
		r := probeResult{phase: phase}
		var calls, arrive []time.Duration
		for _, s := range p.shots {
			if s.phase != phase {
				continue
			}
			if s.err != nil {
				r.failed++
				continue
			}
			calls = append(calls, s.call)
			if first, _, ok := p.watch.times(s.name, 1); ok {
				arrive = append(arrive, max(first.Sub(s.start), 0))
			}
		}
		r.call, r.arrive = summarize(calls), summarize(arrive)
		if r.failed > 0 {
			b.Errorf("probe: %d creates failed in the %s phase", r.failed, phase)
		}
		out = append(out, r)
	}
	return out
}
