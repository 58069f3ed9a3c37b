package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

const (
	serviceCIDR          = "10.96.0.0/16"
	kubernetesServiceIP  = "10.96.0.1"
	serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
	// nodeIP is every simulated node's InternalIP. Loopback on purpose: the
	// API server dials a node's address for logs/exec/port-forward, and that
	// must never leave this machine.
	nodeIP = "127.0.0.1"
)

// StartLocal starts the local control plane and kwok in a new state
// directory and waits until it is ready: /readyz ok, every node Ready, the
// default ServiceAccount present in "default", scheduler and controller
// manager healthy. Start and `localcluster up` both come here.
func StartLocal(ctx context.Context, opts Options) (c *Cluster, err error) {
	opts = opts.withDefaults()
	began := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(opts.Progress, "cluster: "+format+"\n", args...)
	}

	binDir := opts.BinDir
	if binDir == "" {
		if binDir, err = EnsureBinaries(ctx, opts.Progress); err != nil {
			return nil, err
		}
	}
	dir := opts.StateDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "trainyard-cluster-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if _, err := ReadState(dir); err == nil {
		return nil, fmt.Errorf("%s already holds a cluster: stop it first (StopDir)", dir)
	}

	ports, err := FreePorts(6)
	if err != nil {
		return nil, err
	}
	s := &State{
		Dir:        dir,
		BinDir:     binDir,
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		Server:     "https://127.0.0.1:" + strconv.Itoa(ports[2]),
		Ports: map[string]int{
			"etcd-client":             ports[0],
			"etcd-peer":               ports[1],
			"kube-apiserver":          ports[2],
			"kube-controller-manager": ports[3],
			"kube-scheduler":          ports[4],
			// kwok's kubelet-like server (logs), every node's kubelet endpoint.
			"kwok": ports[5],
		},
		Detached: opts.Detach,
		Owner:    os.Getpid(),
		Started:  began,
	}
	c = &Cluster{Kubeconfig: s.Kubeconfig, BinDir: binDir, StateDir: dir, Kind: "local", state: s, keepState: opts.KeepState}
	defer func() {
		if err == nil {
			return
		}
		// Keep the directory: the logs are the only clue. Still stop every process.
		if stopErr := s.stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		err = fmt.Errorf("%w\n%s", err, s.logReport())
	}()

	l := &launcher{s: s, detach: opts.Detach, env: componentEnv(dir)}
	if err := l.writeConfig(); err != nil {
		return nil, err
	}
	if err := s.save(); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, opts.ReadyTimeout)
	defer cancel()

	if err := l.start("etcd", l.etcdArgs()); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, "etcd", s, func() bool { return httpOK("http://127.0.0.1:" + strconv.Itoa(s.Ports["etcd-client"]) + "/health") }); err != nil {
		return nil, err
	}
	if err := l.start("kube-apiserver", l.apiserverArgs()); err != nil {
		return nil, err
	}
	if err := c.connect(); err != nil {
		return nil, err
	}
	if err := waitReadyz(ctx, c.client, opts.ReadyTimeout, s); err != nil {
		return nil, err
	}
	logf("kube-apiserver ready after %s", time.Since(began).Round(time.Millisecond))

	// Before the controller manager, so that its garbage collector watches
	// Logs objects from the start; before kwok, which watches them.
	dyn, err := dynamic.NewForConfig(c.restConfig)
	if err != nil {
		return nil, err
	}
	if err := installKwokCRDs(ctx, dyn, c.client.Discovery(), s); err != nil {
		return nil, err
	}
	logf("kwok Logs CRD served after %s", time.Since(began).Round(time.Millisecond))

	for _, comp := range []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", l.controllerManagerArgs()},
		{"kube-scheduler", l.schedulerArgs()},
		{"kwok", l.kwokArgs()},
	} {
		if err := l.start(comp.name, comp.args); err != nil {
			return nil, err
		}
	}
	if err := createNodes(ctx, c.client, opts.Nodes); err != nil {
		return nil, err
	}
	if err := waitClusterReady(ctx, c.client, s, l.pki.caPEM, len(opts.Nodes)); err != nil {
		return nil, err
	}
	s.Ready = true
	if err := s.save(); err != nil {
		return nil, err
	}
	logf("ready after %s: kubeconfig %s", time.Since(began).Round(time.Millisecond), s.Kubeconfig)
	return c, nil
}

// componentEnv is the environment of every component: this process's, with
// HOME moved into the state dir so that no user config (~/.kwok/kwok.yaml,
// ~/.kube/config) leaks in.
func componentEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "KUBECONFIG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+filepath.Join(dir, "home"))
}

// waitFor polls ok every 100ms until it holds, ctx ends, or a recorded
// process has died (its log tail is then in the error).
func waitFor(ctx context.Context, what string, s *State, ok func() bool) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if ok() {
			return nil
		}
		if s != nil {
			for _, p := range s.Processes {
				if !p.Alive() {
					return fmt.Errorf("waiting for %s: %s exited", what, p.Name)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

func waitReadyz(ctx context.Context, client kubernetes.Interface, timeout time.Duration, s *State) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return waitFor(ctx, "kube-apiserver /readyz", s, func() bool {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && strings.TrimSpace(string(body)) == "ok"
	})
}

// waitClusterReady waits for what tests rely on: all nodes Ready (kwok), the
// default ServiceAccount (controller manager), healthy scheduler and
// controller manager, and kwok's kubelet server answering over TLS with the
// certificate the API server verifies (caPEM).
func waitClusterReady(ctx context.Context, client kubernetes.Interface, s *State, caPEM []byte, nodes int) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	kwokClient := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: nodeIP, MinVersion: tls.VersionTLS12}},
	}
	checks := []struct {
		what string
		ok   func() bool
	}{
		{fmt.Sprintf("%d Ready nodes", nodes), func() bool {
			list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false
			}
			ready := 0
			for i := range list.Items {
				if nodeReady(&list.Items[i]) && !hasNotReadyTaint(&list.Items[i]) {
					ready++
				}
			}
			return ready >= nodes
		}},
		{"default ServiceAccount in namespace default", func() bool {
			_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			return err == nil
		}},
		{"kube-scheduler /healthz", func() bool { return httpOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", s.Ports["kube-scheduler"])) }},
		{"kube-controller-manager /healthz", func() bool {
			return httpOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", s.Ports["kube-controller-manager"]))
		}},
		{"kwok kubelet server /healthz (TLS verified)", func() bool {
			resp, err := kwokClient.Get(fmt.Sprintf("https://%s:%d/healthz", nodeIP, s.Ports["kwok"]))
			if err != nil {
				return false
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}},
	}
	for _, c := range checks {
		if err := waitFor(ctx, c.what, s, c.ok); err != nil {
			return err
		}
	}
	return nil
}

// hasNotReadyTaint reports the taint the node lifecycle controller keeps on a
// node until it has seen it Ready; the scheduler skips such nodes.
func hasNotReadyTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady {
			return true
		}
	}
	return false
}

var healthClient = &http.Client{
	Timeout: 2 * time.Second,
	// The scheduler and controller manager serve /healthz with self-signed
	// certificates; the probe only asks whether they answer.
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe
}

func httpOK(url string) bool {
	resp, err := healthClient.Get(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// logReport names every component log and shows the tail of each, for the
// error of a failed Start.
func (s *State) logReport() string {
	var b strings.Builder
	fmt.Fprintf(&b, "state dir %s kept; component logs:\n", s.Dir)
	for _, p := range s.Processes {
		fmt.Fprintf(&b, "  %s: %s\n", p.Name, p.Log)
	}
	for _, p := range s.Processes {
		fmt.Fprintf(&b, "--- last lines of %s ---\n%s\n", p.Name, p.LogTail(15))
	}
	return b.String()
}
