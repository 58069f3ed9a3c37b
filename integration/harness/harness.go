// Package harness runs Trainyard end to end for tests: the real `trainyard`
// binaries as separate processes, a fresh Postgres database per test, an
// OIDC issuer the test controls, and (when asked) the local Kubernetes
// control plane from integration/cluster, shared by all tests of a package.
//
//	func TestMain(m *testing.M) { harness.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		env := harness.Start(t, harness.Options{Cluster: true, Workers: 1})
//		env.CreateTenant(t, "acme", harness.Group("ml-team", pb.Role_ROLE_EDITOR))
//		jobs := env.Jobs(env.Token("alice", "ml-team"))
//		...
//	}
//
// Each test gets its own namespace prefix, so tests sharing the cluster never
// see each other's tenants. On the cluster, the API server and the workers
// run as deploy/'s ServiceAccounts, with deploy/'s RBAC and admission
// policies applied (integration/deploytest), unless Options.AdminKubeconfig
// asks for the cluster admin. Everything a test starts is stopped when it ends,
// pass or fail; Main stops the cluster and removes the built binary.
//
// Tests that break things (integration/chaos) run more API servers
// (StartServer, Dial), freeze processes (Process.Pause, Resume) and bring a
// Postgres of their own (Options.DatabaseURL).
package harness

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/deploytest"
	"github.com/trainyard/trainyard/internal/auth/oidctest"
	"github.com/trainyard/trainyard/internal/pgtest"
)

// AdminGroup is the OIDC group the harness makes platform admins.
const AdminGroup = "trainyard-admins"

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string

	clusterMu sync.Mutex
	shared    *cluster.Cluster
	second    *cluster.Cluster
)

// Main runs the package's tests, then stops the shared cluster (if a test
// started it) and removes the binary built for the run.
func Main(m *testing.M) {
	code := m.Run()
	clusterMu.Lock()
	for _, c := range []*cluster.Cluster{shared, second} {
		if c == nil {
			continue
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "harness: stopping the cluster:", err)
			code = 1
		}
	}
	clusterMu.Unlock()
	pgtest.StopOwnServer()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// Binary returns the path of the trainyard binary: $TRAINYARD_BIN when set
// (make test builds it once), else built from this checkout once per run.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("TRAINYARD_BIN"); p != "" {
			binPath, binErr = filepath.Abs(p)
			return
		}
		binDir, binErr = os.MkdirTemp("", "trainyard-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "trainyard")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/trainyard")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/trainyard: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatalf("trainyard binary: %v", binErr)
	}
	return binPath
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Cluster returns the package's shared cluster, starting it on first use.
// It fails the test when the cluster cannot start; it never skips.
func Cluster(t testing.TB) *cluster.Cluster {
	t.Helper()
	clusterMu.Lock()
	defer clusterMu.Unlock()
	if shared == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		c, err := cluster.Start(ctx, cluster.Options{Progress: testWriter{t}})
		if err != nil {
			t.Fatalf("starting the local cluster: %v", err)
		}
		shared = c
	}
	return shared
}

// SecondCluster returns a second local cluster, a control plane of its
// own (its own etcd, API server, kwok nodes and certificates), started on
// first use and shared by this package's tests like Cluster: the other
// cluster of the multi-cluster tests (issue 45). It is always local: a
// bound TRAINYARD_CLUSTER_KUBECONFIG names one cluster only.
func SecondCluster(t testing.TB) *cluster.Cluster {
	t.Helper()
	clusterMu.Lock()
	defer clusterMu.Unlock()
	if second == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		c, err := cluster.StartLocal(ctx, cluster.Options{Progress: testWriter{t}})
		if err != nil {
			t.Fatalf("starting the second local cluster: %v", err)
		}
		second = c
	}
	return second
}

// DiscardCluster stops the shared cluster when this process started it
// locally, so that the next Cluster call starts a new, empty one, and
// reports whether it did. A cluster bound with TRAINYARD_CLUSTER_KUBECONFIG
// or a k3s container is kept (false): the caller cleans up instead.
// Benchmarks use it between measurements: a fresh control plane takes
// seconds, where deleting 15,000 pods from one takes minutes and leaves
// work behind in kwok and the pod garbage collector. Nothing may still use
// the old cluster: stop the processes bound to it first.
func DiscardCluster(t testing.TB) bool {
	t.Helper()
	clusterMu.Lock()
	defer clusterMu.Unlock()
	if shared == nil {
		return true
	}
	if !Owns(shared) {
		return false
	}
	if err := shared.Stop(); err != nil {
		t.Errorf("stopping the local cluster: %v", err)
	}
	shared = nil
	return true
}

// DiscardSecondCluster stops the second cluster (SecondCluster) if one
// runs, so that it costs the machine nothing from then on and the next
// SecondCluster call starts a new, empty one: a benchmark section that
// needed two clusters leaves the sections after it one. Nothing may still
// use it: stop the processes bound to it first.
func DiscardSecondCluster(t testing.TB) {
	t.Helper()
	clusterMu.Lock()
	defer clusterMu.Unlock()
	if second == nil {
		return
	}
	if err := second.Stop(); err != nil {
		t.Errorf("stopping the second local cluster: %v", err)
	}
	second = nil
}

// Owns reports whether this process started c (the local cluster), so
// that DiscardCluster replaces it rather than leaving it to the caller: a
// cluster bound with TRAINYARD_CLUSTER_KUBECONFIG or a k3s container has
// no State.
func Owns(c *cluster.Cluster) bool { return c.State() != nil }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Options say what a test needs.
type Options struct {
	// Cluster starts (or reuses) the shared cluster and points the server
	// and workers at it.
	Cluster bool
	// Workers is how many `trainyard worker` processes to start.
	Workers int
	// ServeArgs and WorkerArgs are extra flags.
	ServeArgs  []string
	WorkerArgs []string
	// WorkerKubeconfig, when set, is the kubeconfig the workers use. By
	// default (Cluster without AdminKubeconfig) it is a token of deploy/'s
	// trainyard-worker ServiceAccount (deploytest.WorkerKubeconfig).
	WorkerKubeconfig string
	// AdminKubeconfig runs the API server, and the workers unless
	// WorkerKubeconfig says otherwise, as the cluster admin instead of
	// deploy/'s least-privilege identities. By default every process runs
	// as deploy/ would run it: the worker with a token of
	// trainyard-worker, the API server with one of trainyard-api, each
	// bound by deploy/'s RBAC and held by its admission policies — so the
	// whole suite proves the manifests grant enough. Set it only for a test
	// that needs what Trainyard itself must never have, and say why.
	AdminKubeconfig bool
	// DatabaseProxy puts a DBProxy between the processes and Postgres
	// (Env.DBProxy), for tests of a database outage.
	DatabaseProxy bool
	// RestartsAPIServer says the test restarts kube-apiserver, which
	// refuses requests by RBAC for a moment after it starts (its caches
	// are empty): the processes' RBAC refusals are then logged, not
	// failed. The other tests keep pinning deploy/'s rights.
	RestartsAPIServer bool
	// DatabaseURL, when set, is the database to migrate and run on (the
	// chaos suite's own Postgres, which it restarts) instead of a fresh
	// one on DATABASE_URL's server.
	DatabaseURL string
}

// Env is one test's running Trainyard.
type Env struct {
	Cluster         *cluster.Cluster // nil without Options.Cluster
	DatabaseURL     string
	Issuer          *oidctest.Issuer
	NamespacePrefix string
	HTTPURL         string // http://127.0.0.1:port
	GRPCAddr        string // 127.0.0.1:port
	Server          *Process
	// Servers are every API server started (Server first, StartServer's after).
	Servers []*Process
	Workers []*Process
	// DBProxy is set with Options.DatabaseProxy; DatabaseURL then points at it.
	DBProxy *DBProxy
	// ServeKubeconfig and WorkerKubeconfig are the identities the API
	// server and the workers run as ("" without a cluster).
	ServeKubeconfig  string
	WorkerKubeconfig string

	opts Options
	bin  string
	n    int
}

var servingLine = regexp.MustCompile(`msg=serving grpc=(\S+) http=(\S+)`)

// Start runs a migrated database, the API server and the requested workers.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	e := &Env{opts: opts, bin: Binary(t)}
	if opts.Cluster {
		e.Cluster = Cluster(t)
		e.ServeKubeconfig, e.WorkerKubeconfig = e.Cluster.Kubeconfig, e.Cluster.Kubeconfig
		if !opts.AdminKubeconfig {
			e.ServeKubeconfig = deploytest.APIKubeconfig(t, e.Cluster)
			if opts.WorkerKubeconfig == "" {
				e.WorkerKubeconfig = deploytest.WorkerKubeconfig(t, e.Cluster)
			}
			// Registered before the processes start, so it runs after they
			// are stopped, over their whole logs.
			t.Cleanup(func() { e.checkNoRefusals(t) })
		}
		if opts.WorkerKubeconfig != "" {
			e.WorkerKubeconfig = opts.WorkerKubeconfig
		}
	}
	e.DatabaseURL = opts.DatabaseURL
	if e.DatabaseURL == "" {
		e.DatabaseURL = pgtest.NewDatabase(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := run(ctx, e.bin, "migrate", "up", "--database-url", e.DatabaseURL); err != nil {
		t.Fatal(err)
	}
	if opts.DatabaseProxy {
		e.DBProxy, e.DatabaseURL = newDBProxy(t, e.DatabaseURL)
	}
	e.Issuer = oidctest.NewIssuer(t)
	e.NamespacePrefix = "ty" + strings.ToLower(randomID(5)) + "-"

	e.Server, e.GRPCAddr, e.HTTPURL = e.StartServer(t)
	for i := 0; i < opts.Workers; i++ {
		e.StartWorker(t)
	}
	return e
}

// ServeArgs are the flags StartServer passes (before extra ones): loopback
// ports the kernel picks, the test's issuer and namespace prefix.
func (e *Env) ServeArgs() []string {
	args := []string{"serve",
		"--database-url", e.DatabaseURL,
		"--http-addr", "127.0.0.1:0",
		"--grpc-addr", "127.0.0.1:0",
		"--oidc-issuer", e.Issuer.URL(),
		"--oidc-audience", oidctest.DefaultAudience,
		"--admin-group", AdminGroup,
		"--namespace-prefix", e.NamespacePrefix,
	}
	if e.ServeKubeconfig != "" {
		args = append(args, "--kubeconfig", e.ServeKubeconfig)
	}
	return append(args, e.opts.ServeArgs...)
}

// StartServer starts one more `trainyard serve` with ServeArgs plus extra
// (a later flag wins: "--grpc-addr", "127.0.0.1:9191" fixes a port), waits
// until it answers /readyz, and returns it with its gRPC address and HTTP URL.
func (e *Env) StartServer(t testing.TB, extra ...string) (p *Process, grpcAddr, httpURL string) {
	t.Helper()
	name := "serve"
	if len(e.Servers) > 0 {
		name = fmt.Sprintf("serve-%d", len(e.Servers)+1)
	}
	p = StartProcess(t, name, e.bin, append(e.ServeArgs(), extra...)...)
	e.Servers = append(e.Servers, p)
	m := p.WaitFor(t, servingLine, time.Minute)
	grpcAddr, httpURL = m[1], "http://"+m[2]
	waitReady(t, httpURL)
	return p, grpcAddr, httpURL
}

func waitReady(t testing.TB, httpURL string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(httpURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready after a minute (last: %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rbacRefusal is how the API server words an RBAC denial ("User
// \"system:serviceaccount:trainyard:trainyard-worker\" cannot get resource
// \"services\" ..."); admissionRefusal one by deploy/'s admission policies.
var (
	rbacRefusal      = regexp.MustCompile(`cannot [a-z]+ resource "`)
	admissionRefusal = regexp.MustCompile(`ValidatingAdmissionPolicy '[^']+' with binding`)
)

// checkNoRefusals fails the test when the API server or a worker, running
// as deploy/'s identities, was refused something by RBAC: the manifests
// lack a right the code uses (or the code does something it should not).
// Refusals by deploy/'s admission policies are logged, not failed: a
// policy the API server has not loaded yet can refuse once, at the start
// of a package's first test, and the processes retry.
func (e *Env) checkNoRefusals(t testing.TB) {
	t.Helper()
	procs := append(slices.Clone(e.Servers), e.Workers...)
	for _, p := range procs {
		if p == nil {
			continue
		}
		var rbac, admission []string
		for _, line := range strings.Split(p.Logs(), "\n") {
			switch {
			case rbacRefusal.MatchString(line):
				rbac = append(rbac, line)
			case admissionRefusal.MatchString(line):
				admission = append(admission, line)
			}
		}
		if len(rbac) > 0 {
			report := t.Errorf
			if e.opts.RestartsAPIServer {
				report = t.Logf
			}
			report("%s, running as deploy/'s ServiceAccount, was refused by RBAC %d times: deploy/ lacks a right the code uses, or the code calls what it should not. First:\n%s",
				p.Name, len(rbac), strings.Join(rbac[:min(5, len(rbac))], "\n"))
		}
		if len(admission) > 0 {
			t.Logf("%s was refused by deploy/'s admission policies %d times; first:\n%s",
				p.Name, len(admission), strings.Join(admission[:min(5, len(admission))], "\n"))
		}
	}
}

// WorkerArgs are the flags StartWorker passes (before extra ones).
func (e *Env) WorkerArgs() []string {
	kubeconfig := e.WorkerKubeconfig
	if kubeconfig == "" {
		kubeconfig = e.opts.WorkerKubeconfig
	}
	args := []string{"worker",
		"--database-url", e.DatabaseURL,
		"--namespace-prefix", e.NamespacePrefix,
		"--metrics-addr", "127.0.0.1:0",
	}
	if kubeconfig != "" {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	return append(args, e.opts.WorkerArgs...)
}

// StartWorker starts one more `trainyard worker` with WorkerArgs plus extra.
func (e *Env) StartWorker(t testing.TB, extra ...string) *Process {
	t.Helper()
	e.n++
	p := StartProcess(t, fmt.Sprintf("worker-%d", e.n), e.bin, append(e.WorkerArgs(), extra...)...)
	e.Workers = append(e.Workers, p)
	return p
}

// Namespace is the Kubernetes namespace of a tenant in this test.
func (e *Env) Namespace(tenantID string) string { return e.NamespacePrefix + tenantID }

// Token returns a valid ID token for subject in groups.
func (e *Env) Token(subject string, groups ...string) string {
	return e.Issuer.TokenFor(subject, groups...)
}

// AdminToken returns a platform admin's token.
func (e *Env) AdminToken() string { return e.Issuer.TokenFor("platform-admin", AdminGroup) }

// StartRemoteAgent starts `trainyard worker` as a remote cluster's agent
// (issue 45): --cluster name with credentials for kubeconfig's cluster
// only, reaching this Env's API server with the ServiceAccount token in
// tokenFile, and without DATABASE_URL (nor any other PG variable) in its
// environment or arguments.
func (e *Env) StartRemoteAgent(t testing.TB, name, kubeconfig, tokenFile string, extra ...string) *Process {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "TRAINYARD_DATABASE") {
			env = append(env, kv)
		}
	}
	args := append([]string{"worker", "--cluster", name, "--kubeconfig", kubeconfig,
		"--control-plane", e.GRPCAddr, "--control-plane-plaintext", "--agent-token-file", tokenFile,
		"--namespace-prefix", e.NamespacePrefix, "--metrics-addr", "127.0.0.1:0"}, extra...)
	e.n++
	p := StartProcessEnv(t, fmt.Sprintf("agent-%s-%d", name, e.n), env, e.bin, args...)
	e.Workers = append(e.Workers, p)
	return p
}
