//go:build integration || chaos

package chaos

import (
	"context"
	"fmt"
	"time"
)

// faultKind is a kind of fault the suite injects.
type faultKind string

const (
	faultNone        faultKind = "none (baseline)"
	faultKillAPI     faultKind = "kill -9 API server"
	faultKillWorker  faultKind = "kill -9 worker"
	faultPauseWorker faultKind = "SIGSTOP worker past its lease"
	faultPostgres    faultKind = "Postgres crash + restart"
	faultFailover    faultKind = "Postgres fail-over"
	faultKube        faultKind = "etcd + kube-apiserver crash + restart"
)

// faultKinds is the order of the report's rows.
var faultKinds = []faultKind{faultKillAPI, faultKillWorker, faultPauseWorker, faultPostgres, faultFailover, faultKube, faultNone}

// faultRun is one injected fault and how the system came back from it.
type faultRun struct {
	kind      faultKind
	at        time.Time
	down      time.Duration // the component was dead or frozen this long
	converge  time.Duration // from injection until healthy (see healthy)
	converged bool
	detail    string
	// firstSubmit is, for a fail-over, the time from the kill of the
	// primary until the first CreateJob sent after it was acknowledged;
	// -1 when none was before convergence.
	firstSubmit time.Duration
}

// measure injects a fault, recovers from it (restart, SIGCONT) and waits
// until the system is whole again. A probe job is submitted at the moment
// of injection, as a client would go on submitting.
func (s *suite) measure(kind faultKind) faultRun {
	s.t.Helper()
	f := faultRun{kind: kind, at: time.Now()}
	probe := s.load.probe(len(s.faults))
	f.down, f.detail = s.inject(kind)
	deadline := f.at.Add(convergeTimeout)
	var why string
	for time.Now().Before(deadline) {
		if why = s.unhealthy(probe); why == "" {
			f.converged = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.converge = time.Since(f.at)
	if !f.converged {
		f.detail += "; never converged: " + why
	}
	if kind == faultFailover {
		f.firstSubmit = s.load.firstAck(s.primaryDied)
	}
	return f
}

// inject causes one fault and undoes it: it returns once the dead
// component was started again (or the frozen one resumed), with how long
// it was out.
func (s *suite) inject(kind faultKind) (time.Duration, string) {
	t := s.t
	t.Helper()
	began := time.Now()
	switch kind {
	case faultNone:
		return 0, "no fault"
	case faultKillAPI:
		i := s.rng.IntN(len(s.servers))
		old := s.servers[i]
		old.proc.Kill()
		time.Sleep(s.cfg.Down)
		// The same addresses: the clients' connections find it again.
		p, _, _ := s.env.StartServer(t, "--grpc-addr", old.grpcAddr, "--http-addr", old.httpURL[len("http://"):])
		s.mu.Lock()
		s.servers[i] = &apiServer{proc: p, grpcAddr: old.grpcAddr, httpURL: old.httpURL}
		s.mu.Unlock()
		return time.Since(began), fmt.Sprintf("API server %d", i+1)
	case faultKillWorker:
		old := s.pickWorker()
		old.proc.Kill()
		time.Sleep(s.cfg.Down)
		w := s.startWorker(old.slot, old.gen+1)
		s.mu.Lock()
		s.workers[old.slot] = w
		s.mu.Unlock()
		return time.Since(began), fmt.Sprintf("worker %s%s, replaced by %s", old.id, s.leaderMark(old), w.id)
	case faultPauseWorker:
		w := s.pickWorker()
		mark := s.leaderMark(w)
		w.proc.Pause()
		time.Sleep(s.cfg.LeaseTTL + 2*time.Second)
		w.proc.Resume()
		return time.Since(began), fmt.Sprintf("worker %s%s for %s", w.id, mark, time.Since(began).Round(time.Millisecond))
	case faultPostgres:
		if err := s.pg.restart(); err != nil {
			t.Fatalf("restarting Postgres: %v", err)
		}
		return time.Since(began), "immediate shutdown, WAL replayed"
	case faultFailover:
		killed, promoted, died, err := s.pg.failover()
		s.primaryDied = died
		if err != nil {
			t.Fatalf("Postgres fail-over: %v", err)
		}
		out := time.Since(began)
		// The old primary comes back later, as a fail-over manager brings
		// a failed node back once it is repaired.
		time.Sleep(s.cfg.Down)
		if err := s.pg.rejoin(); err != nil {
			t.Fatalf("Postgres fail-over: rejoining %s as a standby: %v", killed, err)
		}
		return out, fmt.Sprintf("%s killed, %s promoted in %s; %s rewound and streaming synchronously after %s",
			killed, promoted, out.Round(time.Millisecond), killed, time.Since(began).Round(time.Millisecond))
	case faultKube:
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := s.env.Cluster.Restart(ctx, "etcd", "kube-apiserver"); err != nil {
			t.Fatalf("restarting the control plane: %v", err)
		}
		return time.Since(began), "etcd then kube-apiserver"
	}
	t.Fatalf("unknown fault %q", kind)
	return 0, ""
}

// pickWorker picks the worker to kill or pause: the scheduler's leader
// every other time, so that both the scheduler's failover and the job
// leases' are exercised, else either at random.
func (s *suite) pickWorker() *workerProc {
	_, ws := s.live()
	if s.rng.IntN(2) == 0 {
		if leader := s.leader(); leader != "" {
			for _, w := range ws {
				if w.id == leader {
					return w
				}
			}
		}
	}
	return ws[s.rng.IntN(len(ws))]
}

func (s *suite) leaderMark(w *workerProc) string {
	if s.leader() == w.id {
		return " (scheduler leader)"
	}
	return ""
}

// leader is the worker holding a live scheduler lease, or "".
func (s *suite) leader() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var holder string
	if err := s.db.QueryRow(ctx, `SELECT coalesce(holder, '') FROM scheduler_lease WHERE expires_at > now()`).Scan(&holder); err != nil {
		return ""
	}
	return holder
}

// unhealthy says what is not whole yet, or "" when everything is: the
// probe job submitted at the fault SUCCEEDED, every API server and worker
// answers /readyz and has its notification listener connected to the
// primary, a live worker leads the scheduler, and no active job is
// held by a dead worker or under an expired lease (a dead or frozen
// worker's jobs were taken over). A process that exited without being killed fails the test.
func (s *suite) unhealthy(probe <-chan struct{}) string {
	servers, workers := s.live()
	for i, a := range servers {
		if a.proc.Exited() {
			s.t.Fatalf("API server %d exited by itself:\n%s", i+1, a.proc.Tail(40))
		}
	}
	for _, w := range workers {
		if w.proc.Exited() {
			s.t.Fatalf("worker %s exited by itself:\n%s", w.id, w.proc.Tail(40))
		}
	}
	select {
	case <-probe:
	default:
		return "the probe job has not SUCCEEDED"
	}
	for i, a := range servers {
		if !httpOK(a.httpURL + "/readyz") {
			return fmt.Sprintf("API server %d not ready", i+1)
		}
	}
	for _, w := range workers {
		if !httpOK(w.metricsURL + "/readyz") {
			return fmt.Sprintf("worker %s not ready", w.id)
		}
	}
	leader := s.leader()
	found := false
	for _, w := range workers {
		found = found || w.id == leader
	}
	if !found {
		return fmt.Sprintf("scheduler lease held by %q, not one of %s", leader, ids(workers))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	live := make([]string, len(workers))
	for i, w := range workers {
		live[i] = w.id
	}
	var orphaned int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM jobs j
		WHERE active AND worker_id IS NOT NULL AND (worker_id <> ALL($1)
		      OR NOT EXISTS (SELECT FROM worker_leases l WHERE l.worker_id = j.worker_id AND l.expires_at > now()))`,
		live).Scan(&orphaned); err != nil {
		return "Postgres: " + err.Error()
	}
	if orphaned > 0 {
		return fmt.Sprintf("%d jobs held by a dead worker or under an expired lease", orphaned)
	}
	// Every process's notification listener is connected to the primary
	// (after a fail-over, to the new one): it reconnects by itself. A
	// killed process's connection ends with it; a frozen one's may linger
	// (hence at least, not exactly).
	var listeners int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'trainyard-listener'`).
		Scan(&listeners); err != nil {
		return "Postgres: " + err.Error()
	}
	if want := len(servers) + len(workers); listeners < want {
		return fmt.Sprintf("%d notification listeners connected to the primary, want %d (one per process)", listeners, want)
	}
	return ""
}
