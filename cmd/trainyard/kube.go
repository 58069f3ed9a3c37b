package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/tenant"
)

type kubeFlags struct {
	kubeconfig      string
	qps             float64
	burst           int
	namespacePrefix string
}

func (k *kubeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file; $KUBECONFIG or the in-cluster service account when empty")
	fs.Float64Var(&k.qps, "kube-qps", 200, "Kubernetes client requests per second (sustained)")
	fs.IntVar(&k.burst, "kube-burst", 400, "Kubernetes client request burst")
	fs.StringVar(&k.namespacePrefix, "namespace-prefix", tenant.DefaultNamespacePrefix, "prefix of tenant namespaces: <prefix><tenant>")
}

// ownConnection returns a client whose requests travel over a
// connection of their own. client-go shares one HTTP/2 connection among
// every client of the same server and credentials, and on it the answers
// to a worker's creates waited behind its watch streams' events: in the
// dispatch benchmark the API server took twice as long over Trainyard's
// pod creates as over a client-go loop's in the same namespace (audit log,
// `localcluster audit`). A dialer of its own (not cacheable, so not
// shared) gives the client its own transport.
func ownConnection(cfg *rest.Config) (kubernetes.Interface, error) {
	c := rest.CopyConfig(cfg)
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	c.Dial = d.DialContext
	return kubernetes.NewForConfig(c)
}

// configured reports whether any Kubernetes access is set up.
func (k *kubeFlags) configured() bool {
	return k.kubeconfig != "" || os.Getenv("KUBECONFIG") != "" || os.Getenv("KUBERNETES_SERVICE_HOST") != ""
}

func (k *kubeFlags) restConfig() (*rest.Config, error) {
	var (
		cfg *rest.Config
		err error
	)
	switch {
	case k.kubeconfig != "" || os.Getenv("KUBECONFIG") != "":
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = k.kubeconfig
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		cfg, err = rest.InClusterConfig()
	default:
		return nil, errors.New("no Kubernetes cluster configured: set --kubeconfig (or KUBECONFIG), or run in a pod")
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS = float32(k.qps)
	cfg.Burst = k.burst
	cfg.UserAgent = "trainyard"
	kube.TuneRESTConfig(cfg) // protobuf, no gzip
	return cfg, nil
}

// restConfigAt is the config of another cluster, from the kubeconfig at
// path, with the same rate limits and user agent as restConfig's.
func (k *kubeFlags) restConfigAt(path string) (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(k.qps), k.burst, "trainyard"
	kube.TuneRESTConfig(cfg)
	return cfg, nil
}

func (k *kubeFlags) client() (kubernetes.Interface, *rest.Config, error) {
	cfg, err := k.restConfig()
	if err != nil {
		return nil, nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	return c, cfg, err
}

// clientIfConfigured is for the API server, which works without a cluster
// (then secret values cannot be stored and logs come only from Postgres).
func (k *kubeFlags) clientIfConfigured(log *slog.Logger) (kubernetes.Interface, *rest.Config, error) {
	if !k.configured() {
		log.Warn("no Kubernetes cluster configured: secret writes are unavailable, logs come only from what the worker kept, and TensorBoards cannot be shown")
		return nil, nil, nil
	}
	return k.client()
}
