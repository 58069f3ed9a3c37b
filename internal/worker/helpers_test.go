package worker

import (
	"sync"
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/job"
)

// Helpers of both the unit tests (workertest's in-memory store) and the
// Postgres ones (build tag integration).

// clock is a settable time source for plans.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

func replica(t job.ReplicaType, n int32, rp job.RestartPolicy) job.ReplicaSpec {
	return job.ReplicaSpec{Type: t, Count: n, Image: "tf:2", RestartPolicy: rp}
}

func spec(reps ...job.ReplicaSpec) job.Spec {
	return job.Spec{Replicas: reps, RunPolicy: job.RunPolicy{BackoffLimit: job.DefaultBackoffLimit}}
}
