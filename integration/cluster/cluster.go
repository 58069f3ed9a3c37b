package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Environment variables that choose the cluster Start returns.
const (
	// EnvKubeconfig, when set, makes Start bind to the running cluster that
	// kubeconfig points at (for example the one `make cluster-up` printed);
	// Stop then leaves that cluster alone.
	EnvKubeconfig = "TRAINYARD_CLUSTER_KUBECONFIG"
	// EnvKind selects the implementation: unset or "local" for the local
	// control plane with kwok, "k3s" for a k3s container (needs Docker).
	EnvKind = "TRAINYARD_CLUSTER"
	// EnvProfiling, when set to 1, turns on /debug/pprof in the local
	// control plane's kube-apiserver, controller manager and scheduler
	// (off otherwise, as hardened clusters run them): for finding where a
	// bench's cluster time goes. The admin kubeconfig may read them. The
	// API server then also writes an audit log of the writes to pods,
	// Services and EndpointSlices (logs/audit.log): each request's client
	// and its time in the API server.
	EnvProfiling = "TRAINYARD_CLUSTER_PROFILING"
)

// Options configure Start. The zero value starts the default cluster.
type Options struct {
	// StateDir holds the certificates, kubeconfigs, etcd data, component logs
	// and state.json. Defaults to a new directory under os.TempDir().
	StateDir string
	// Nodes are the simulated nodes. Defaults to DefaultNodes().
	Nodes []Node
	// KeepState leaves StateDir on disk after Stop. Defaults to false. A
	// failed Start always keeps it, so the logs can be read.
	KeepState bool
	// Detach lets the components outlive this process (localcluster up).
	// Defaults to false: the kernel kills them if this process dies.
	Detach bool
	// BinDir holds the binaries to run. Defaults to what build.sh prints
	// (build.sh builds them first if they are missing).
	BinDir string
	// Progress receives build output and start-up progress. Defaults to discarding it.
	Progress io.Writer
	// ReadyTimeout bounds the wait for the control plane and nodes once the
	// binaries exist. Defaults to 3 minutes.
	ReadyTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if len(o.Nodes) == 0 {
		o.Nodes = DefaultNodes()
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 3 * time.Minute
	}
	return o
}

// Cluster is a running Kubernetes cluster for tests and the demo.
type Cluster struct {
	// Kubeconfig is the path of a cluster-admin kubeconfig (usable by kubectl and client-go).
	Kubeconfig string
	// BinDir holds kubectl (and, for the local cluster, the control plane binaries).
	BinDir string
	// StateDir holds the kubeconfig and, for the local cluster, the
	// certificates, component logs and state.json ("" after Attach).
	StateDir string
	// Kind is "local", "reused" or "k3s".
	Kind string

	restConfig *rest.Config
	client     kubernetes.Interface
	state      *State   // local clusters started by this process
	scratch    string   // files this Cluster wrote (service-account kubeconfigs) when StateDir is not ours
	stopExtra  []func() // k3s: terminate the container
	keepState  bool
	stopOnce   sync.Once
	stopErr    error
	restartMu  sync.Mutex // one Restart at a time: each rewrites state.json
	stopped    bool       // under restartMu: RestartExited starts nothing once Stop began
}

// Start returns a ready cluster. By default it starts the local control plane
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok with
// simulated nodes). With TRAINYARD_CLUSTER_KUBECONFIG set it binds to that
// cluster instead; with TRAINYARD_CLUSTER=k3s it starts a k3s container.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if kc := os.Getenv(EnvKubeconfig); kc != "" {
		return Attach(ctx, kc)
	}
	switch kind := os.Getenv(EnvKind); kind {
	case "", "local":
		return StartLocal(ctx, opts)
	case "k3s":
		return startK3s(ctx, opts)
	default:
		return nil, fmt.Errorf("%s=%q: want local or k3s", EnvKind, kind)
	}
}

// Attach binds to a running cluster through kubeconfig. Stop on the result
// leaves the cluster running. When kubeconfig lies in a `localcluster up`
// state directory, BinDir comes from its state; otherwise build.sh finds
// kubectl.
func Attach(ctx context.Context, kubeconfig string) (*Cluster, error) {
	kubeconfig, err := filepath.Abs(kubeconfig)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Kubeconfig: kubeconfig, Kind: "reused"}
	if s, err := ReadState(filepath.Dir(kubeconfig)); err == nil && s.Kubeconfig == kubeconfig {
		c.BinDir = s.BinDir
	} else if c.BinDir, err = EnsureBinaries(ctx, nil); err != nil {
		return nil, err
	}
	if err := c.connect(); err != nil {
		return nil, err
	}
	if err := waitReadyz(ctx, c.client, 30*time.Second, nil); err != nil {
		return nil, fmt.Errorf("cluster at %s: %w", kubeconfig, err)
	}
	return c, nil
}

func (c *Cluster) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200 // tests create objects in bursts; the default 5 QPS throttles them
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c.restConfig, c.client = cfg, client
	return nil
}

// RESTConfig returns a copy of the cluster-admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Client returns a cluster-admin clientset.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Kubectl runs kubectl (from BinDir, else from PATH) with the admin
// kubeconfig and returns its combined output.
func (c *Cluster) Kubectl(args ...string) (string, error) {
	bin := "kubectl"
	if c.BinDir != "" {
		bin = filepath.Join(c.BinDir, "kubectl")
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// ServiceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount namespace/name with a token from the TokenRequest API (valid
// 24 hours), and returns its path. The ServiceAccount must exist. Use it to
// run a process with exactly the rights RBAC grants that account.
func (c *Cluster) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	expiry := int64(24 * 60 * 60)
	tr, err := c.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}},
		metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for serviceaccount %s/%s: %w", namespace, name, err)
	}
	dir, err := c.scratchDir()
	if err != nil {
		return "", err
	}
	ca := c.restConfig.CAData
	if len(ca) == 0 && c.restConfig.CAFile != "" {
		if ca, err = os.ReadFile(c.restConfig.CAFile); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, fmt.Sprintf("sa-%s-%s.kubeconfig", namespace, name))
	err = writeKubeconfig(path, kubeconfigSpec{
		server:    c.restConfig.Host,
		caPEM:     ca,
		token:     tr.Status.Token,
		user:      fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name),
		namespace: namespace,
	})
	return path, err
}

func (c *Cluster) scratchDir() (string, error) {
	if c.StateDir != "" && c.state != nil {
		dir := filepath.Join(c.StateDir, "kubeconfigs")
		return dir, os.MkdirAll(dir, 0o700)
	}
	if c.scratch == "" {
		dir, err := os.MkdirTemp("", "trainyard-cluster-client-")
		if err != nil {
			return "", err
		}
		c.scratch = dir
	}
	return c.scratch, nil
}

// Stop stops every process this Cluster started, checks that none is left
// and that their ports refuse connections, and removes the state directory
// unless Options.KeepState. For a cluster bound with Attach it only removes
// the files this Cluster wrote. Calling Stop again returns the first result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.restartMu.Lock()
		c.stopped = true
		c.restartMu.Unlock()
		for _, f := range c.stopExtra {
			f()
		}
		if c.state != nil {
			c.stopErr = c.state.stop()
			if c.stopErr == nil {
				c.stopErr = c.state.checkPortsClosed()
			}
			if c.stopErr == nil && !c.keepState {
				c.stopErr = os.RemoveAll(c.StateDir)
			}
		}
		if c.scratch != "" {
			_ = os.RemoveAll(c.scratch)
		}
	})
	return c.stopErr
}

// State returns what the local cluster recorded (processes, ports), or nil
// for a cluster this process did not start.
func (c *Cluster) State() *State { return c.state }
