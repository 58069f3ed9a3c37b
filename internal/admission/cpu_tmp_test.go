package admission

import (
	"syscall"
	"testing"
	"time"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestCPUTmp(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Snapshot
	}{{"plain", largeSnapshot(10_000, 1_000, 100, 1_000)}, {"cohorts", cohortSnapshot(10_000, 1_000, 100, 1_000)}} {
		Schedule(c.s)
		from := cpuNow()
		n := 40
		for range n {
			Schedule(c.s)
		}
		t.Logf("%s: %.1f ms CPU per cycle", c.name, float64(cpuNow()-from)/float64(n)/1e6)
	}
}
