//go:build integration || chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/kube"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Config is one chaos run.
type Config struct {
	// Tenants submit jobs, each one every SubmitEvery, one at a time (a
	// submit retries until acknowledged before the tenant's next): a
	// steady load that an outage delays but never piles up.
	Tenants     int
	SubmitEvery time.Duration
	// Baseline is how many times convergence is measured with no fault,
	// before the first: the floor the faults' times compare with.
	Baseline int
	// Faults are injected in this order, one at a time: each is injected,
	// recovered from (restart, SIGCONT) and converged before the next.
	Faults []faultKind
	// Gap is the most the schedule waits (at random) between a fault's
	// convergence and the next fault.
	Gap time.Duration
	// Down is how long a killed process stays dead before its restart.
	Down time.Duration
	// LeaseTTL is the workers' job lease and scheduler lease; a paused
	// worker stays paused LeaseTTL + 2s.
	LeaseTTL time.Duration
}

const (
	// convergeTimeout bounds the wait for the system to be whole again
	// after one fault; settleTimeout the wait for every job to end after
	// the load stops.
	convergeTimeout = 2 * time.Minute
	settleTimeout   = 3 * time.Minute
)

// suite is a running chaos run: Trainyard's processes on the suite's own
// Postgres and the package's local cluster, the load, the pod recorder
// and the faults injected so far.
type suite struct {
	t   *testing.T
	cfg Config
	env *harness.Env
	pg  *postgres
	// primaryDied is when the last fail-over's primary was dead.
	primaryDied time.Time
	db          *pgxpool.Pool // the suite's own view of Postgres, for the checks
	rng         *rand.Rand

	mu      sync.Mutex // guards servers and workers: faults replace them
	servers []*apiServer
	workers []*workerProc

	load   *load
	pods   *podRecorder
	faults []faultRun

	// exited counts control plane components that exited by themselves
	// and were started again (superviseControlPlane), by name.
	exited map[string]int
}

// apiServer is one of the two API servers. A restart keeps its addresses,
// so the clients' connections find it again.
type apiServer struct {
	proc     *harness.Process
	grpcAddr string
	httpURL  string
}

// workerProc is one of the two workers. A restart is a new worker (a new
// id): the old one's jobs are taken over when their leases expire.
type workerProc struct {
	slot, gen  int
	id         string
	proc       *harness.Process
	metricsURL string
}

var metricsLine = regexp.MustCompile(`msg="worker metrics listening" addr=(\S+)`)

func setup(t *testing.T, cfg Config) *suite {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("chaos: seed %d", seed)
	s := &suite{t: t, cfg: cfg, rng: rand.New(rand.NewPCG(seed, seed>>1))}
	s.pg = startPostgres(t)
	// The API servers restart on their ports: ports below the ephemeral
	// range, which no outgoing connection takes meanwhile.
	ports, err := cluster.FreePorts(4)
	require.NoError(t, err)
	addrs := func(grpcPort, httpPort int) []string {
		return []string{"--grpc-addr", fmt.Sprintf("127.0.0.1:%d", grpcPort), "--http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort)}
	}
	s.env = harness.Start(t, harness.Options{Cluster: true, DatabaseURL: s.pg.URL(), RestartsAPIServer: true,
		ServeArgs: addrs(ports[0], ports[1])})
	t.Cleanup(s.keepLogs)
	s.db, err = pgxpool.New(context.Background(), s.pg.URL())
	require.NoError(t, err)
	t.Cleanup(s.db.Close)

	s.servers = []*apiServer{{proc: s.env.Server, grpcAddr: s.env.GRPCAddr, httpURL: s.env.HTTPURL}}
	p, grpcAddr, httpURL := s.env.StartServer(t, addrs(ports[2], ports[3])...)
	s.servers = append(s.servers, &apiServer{proc: p, grpcAddr: grpcAddr, httpURL: httpURL})
	for slot := range 2 {
		s.workers = append(s.workers, s.startWorker(slot, 0))
	}
	s.pods = recordPods(t, s.env.Cluster.Client(), s.env.NamespacePrefix)
	s.superviseControlPlane()

	// The clients reconnect quickly after a restart (gRPC's default
	// backoff grows to two minutes).
	params := grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
		MinConnectTimeout: 2 * time.Second,
	})
	token := s.env.Token("loader")
	var clients []pb.JobServiceClient
	for _, a := range s.servers {
		clients = append(clients, pb.NewJobServiceClient(harness.Dial(t, a.grpcAddr, token, params)))
	}
	tenants := make([]string, cfg.Tenants)
	for i := range tenants {
		tenants[i] = fmt.Sprintf("team-%c", 'a'+i)
		s.env.CreateTenant(t, tenants[i], harness.Subject("loader", pb.Role_ROLE_EDITOR))
	}
	for _, id := range tenants {
		s.waitNamespace(id)
	}
	s.load = newLoad(clients, tenants, cfg.SubmitEvery)
	return s
}

// startWorker starts the worker of a slot, generation gen, and waits until
// it is ready.
func (s *suite) startWorker(slot, gen int) *workerProc {
	t := s.t
	t.Helper()
	w := &workerProc{slot: slot, gen: gen, id: fmt.Sprintf("w%d-%d", slot+1, gen)}
	ttl := s.cfg.LeaseTTL.String()
	w.proc = s.env.StartWorker(t, "--worker-id", w.id, "--lease-ttl", ttl, "--scheduler-lease-ttl", ttl)
	m := w.proc.WaitFor(t, metricsLine, time.Minute)
	w.metricsURL = "http://" + m[1]
	require.Eventually(t, func() bool { return httpOK(w.metricsURL + "/readyz") }, time.Minute, 50*time.Millisecond,
		"worker %s not ready", w.id)
	return w
}

// waitNamespace waits until the tenant reconciler provisioned a tenant's
// namespace (its job ServiceAccount exists).
func (s *suite) waitNamespace(tenantID string) {
	s.t.Helper()
	c := s.env.Cluster.Client()
	require.Eventually(s.t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.CoreV1().ServiceAccounts(s.env.Namespace(tenantID)).Get(ctx, kube.DefaultJobServiceAccount, metav1.GetOptions{})
		return err == nil
	}, time.Minute, 100*time.Millisecond, "namespace of tenant %s not provisioned", tenantID)
}

// run is the whole chaos run: load, baselines, faults one after another,
// then the load stops, every job ends, and the checks run. It returns the
// report; the caller prints and asserts it.
func run(t *testing.T, cfg Config) *report {
	s := setup(t, cfg)
	began := time.Now()
	ctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	loadDone := s.load.run(ctx)
	for range cfg.Baseline {
		s.faults = append(s.faults, s.measure(faultNone))
	}
	for i, k := range cfg.Faults {
		f := s.measure(k)
		s.faults = append(s.faults, f)
		t.Logf("chaos: %s fault %d/%d %s: down %s, converged %s (%s)", f.at.Format("15:04:05.000"), i+1, len(cfg.Faults), k,
			f.down.Round(time.Millisecond), f.converge.Round(time.Millisecond), f.detail)
		if !f.converged {
			break // the report says which; going on would blur it
		}
		// The schedule's own timer: a random pause before the next fault.
		time.Sleep(time.Duration(s.rng.Int64N(int64(cfg.Gap) + 1)))
	}
	stopLoad()
	<-loadDone
	loadTime := time.Since(began)
	s.settle()
	rep := s.check()
	rep.duration = loadTime
	return rep
}

// settle waits until every acknowledged job is final (or settleTimeout).
func (s *suite) settle() {
	deadline := time.Now().Add(settleTimeout)
	for time.Now().Before(deadline) {
		var open int
		err := s.db.QueryRow(context.Background(),
			`SELECT count(*) FROM jobs WHERE state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`).Scan(&open)
		if err == nil && open == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// live returns the current processes.
func (s *suite) live() ([]*apiServer, []*workerProc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*apiServer(nil), s.servers...), append([]*workerProc(nil), s.workers...)
}

var probeClient = &http.Client{Timeout: 2 * time.Second}

func httpOK(url string) bool {
	resp, err := probeClient.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// ids lists worker ids, for messages.
func ids(ws []*workerProc) string {
	var out []string
	for _, w := range ws {
		out = append(out, w.id)
	}
	return strings.Join(out, ",")
}

// keepLogs copies every process's log and the control plane's into a
// directory that outlives a failed run (the test's own go with it), and
// says where.
func (s *suite) keepLogs() {
	if !s.t.Failed() {
		return
	}
	dir, err := os.MkdirTemp("", "trainyard-chaos-logs-")
	if err != nil {
		s.t.Log(err)
		return
	}
	logs := map[string]string{}
	for _, p := range append(slices.Clone(s.env.Servers), s.env.Workers...) {
		logs[p.Name+".log"] = p.LogPath
	}
	cl, _ := filepath.Glob(filepath.Join(s.env.Cluster.StateDir, "logs", "*.log"))
	for _, path := range cl {
		logs["cluster-"+filepath.Base(path)] = path
	}
	for name, path := range logs {
		if data, err := os.ReadFile(path); err == nil {
			_ = os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
	}
	s.t.Logf("chaos: the processes' and the control plane's logs are kept in %s", dir)
}

// superviseControlPlane starts again any control plane component that
// exits by itself, as a kubelet restarts static pods, until the test ends.
// kube-scheduler does exit when etcd and the API server crashed under it
// left its cache inconsistent; it counts on a supervisor. The report
// lists what was restarted.
func (s *suite) superviseControlPlane() {
	s.exited = map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			names, err := s.env.Cluster.RestartExited(ctx)
			if err != nil && ctx.Err() == nil {
				s.t.Errorf("restarting control plane components that exited: %v", err)
				return
			}
			s.mu.Lock()
			for _, n := range names {
				s.exited[n]++
			}
			s.mu.Unlock()
			if len(names) > 0 {
				s.t.Logf("chaos: %s %v exited by itself; started again", time.Now().Format("15:04:05.000"), names)
			}
		}
	}()
	s.t.Cleanup(func() { cancel(); <-done })
}
