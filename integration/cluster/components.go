package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// launcher writes the components' configuration into the state directory
// and starts them, recording each in the state as it starts.
type launcher struct {
	s      *State
	detach bool
	env    []string
	pki    *pki
	// frontProxy is the CA of the request-header (aggregation) authentication
	// that the controller manager and scheduler expect to find configured.
	frontProxy *pki
}

func (l *launcher) path(parts ...string) string {
	return filepath.Join(append([]string{l.s.Dir}, parts...)...)
}

func (l *launcher) kubeconfig(component string) string {
	return l.path("kubeconfigs", component+".kubeconfig")
}

// writeConfig creates the PKI, one kubeconfig per identity, the admin
// kubeconfig, the simulated pod logs and kwok's configuration (the Stages and
// the ClusterLogs fallback).
func (l *launcher) writeConfig() error {
	for _, d := range []string{"logs", "kubeconfigs", "home", "etcd"} {
		if err := os.MkdirAll(l.path(d), 0o700); err != nil {
			return err
		}
	}
	p, err := newPKI(l.path("pki"), "trainyard-local-ca")
	if err != nil {
		return err
	}
	l.pki = p
	if l.frontProxy, err = newPKI(l.path("pki", "front-proxy"), "trainyard-local-front-proxy-ca"); err != nil {
		return err
	}
	if err := l.frontProxy.client(frontProxyIdentity); err != nil {
		return err
	}
	if err := p.serving("kube-apiserver"); err != nil {
		return err
	}
	// kwok's kubelet server: the API server dials every node at its
	// InternalIP, 127.0.0.1, and verifies this certificate with ca.crt.
	if err := p.servingFor(kwokServingName, []string{"localhost"}, []net.IP{net.ParseIP(nodeIP)}); err != nil {
		return err
	}
	if os.Getenv(EnvProfiling) == "1" {
		if err := os.WriteFile(l.path("audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
			return err
		}
	}
	if err := p.serviceAccountKeys(); err != nil {
		return err
	}
	for _, id := range []identity{adminIdentity, kcmIdentity, schedulerIdentity, kwokIdentity, kubeletClientIdentity} {
		if err := p.client(id); err != nil {
			return err
		}
	}
	if err := p.clientKubeconfig(l.s.Kubeconfig, l.s.Server, adminIdentity); err != nil {
		return err
	}
	for _, id := range []identity{kcmIdentity, schedulerIdentity, kwokIdentity} {
		if err := p.clientKubeconfig(l.kubeconfig(id.file), l.s.Server, id); err != nil {
			return err
		}
	}
	if err := writePodLogs(l.path(PodLogDir), l.s.Started); err != nil {
		return err
	}
	return writeKwokConfig(l.path("kwok.yaml"))
}

// start runs one component and records it in state.json at once, so that a
// crash of this process between two starts still leaves every PID on record.
func (l *launcher) start(name string, args []string) error {
	p, err := startProcess(name, filepath.Join(l.s.BinDir, name), args, l.env, l.s.Dir, l.path("logs", name+".log"), l.detach)
	if err != nil {
		return err
	}
	l.s.Processes = append(l.s.Processes, p)
	return l.s.save()
}

func (l *launcher) port(name string) string { return strconv.Itoa(l.s.Ports[name]) }

func (l *launcher) etcdArgs() []string {
	client := "http://127.0.0.1:" + l.port("etcd-client")
	peer := "http://127.0.0.1:" + l.port("etcd-peer")
	return []string{
		"--name=trainyard",
		"--data-dir=" + l.path("etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=trainyard=" + peer,
		"--initial-cluster-state=new",
		// A throw-away cluster: durability is not worth the fsync latency on a shared disk.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
}

func (l *launcher) apiserverArgs() []string {
	pki := l.pki.path
	args := []string{
		"--etcd-servers=http://127.0.0.1:" + l.port("etcd-client"),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + l.port("kube-apiserver"),
		"--tls-cert-file=" + pki("kube-apiserver.crt"),
		"--tls-private-key-file=" + pki("kube-apiserver.key"),
		"--client-ca-file=" + pki("ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + pki("sa.pub"),
		"--service-account-signing-key-file=" + pki("sa.key"),
		// The kubernetes Service's endpoint would be 127.0.0.1, which Endpoints
		// validation refuses; nothing in this cluster needs it.
		"--endpoint-reconciler-type=none",
		// Added to the defaults, which already include most of these; listed
		// so that the contract is visible here.
		"--enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,PodSecurity,ResourceQuota,NodeRestriction",
		"--allow-privileged=true",
		profiling(),
		// Request-header authentication, as kubeadm sets it up: without it the
		// controller manager and scheduler log an error per request about a
		// missing requestheader CA, and aggregated APIs could not be added.
		"--requestheader-client-ca-file=" + l.frontProxy.path("ca.crt"),
		"--requestheader-allowed-names=" + frontProxyIdentity.user,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + l.frontProxy.path(frontProxyIdentity.file+".crt"),
		"--proxy-client-key-file=" + l.frontProxy.path(frontProxyIdentity.file+".key"),
		// The kubelets are kwok's server (logs). The API server dials a node's
		// InternalIP (127.0.0.1; the default order would try the Hostname,
		// the node's name, which does not resolve) at the node's
		// status.daemonEndpoints.kubeletEndpoint.Port, verifies kwok's serving
		// certificate against the cluster CA, and presents its own client
		// certificate.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority=" + pki("ca.crt"),
		"--kubelet-client-certificate=" + pki(kubeletClientIdentity.file+".crt"),
		"--kubelet-client-key=" + pki(kubeletClientIdentity.file+".key"),
	}
	return append(args, l.auditArgs()...)
}

// auditPolicy records, when profiling, the metadata of every write of the
// objects a job is made of (who, when received, when answered), and
// nothing else: enough to split the API server's time per request by
// client, which its metrics cannot.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  verbs: [create, update, patch, delete]
  resources:
  - group: ""
    resources: [pods, pods/status, pods/binding, services]
  - group: discovery.k8s.io
    resources: [endpointslices]
- level: None
`

// auditArgs write logs/audit.log (JSON lines, batched off the request
// path) when EnvProfiling is 1.
func (l *launcher) auditArgs() []string {
	if os.Getenv(EnvProfiling) != "1" {
		return nil
	}
	return []string{
		"--audit-policy-file=" + l.path("audit-policy.yaml"),
		"--audit-log-path=" + l.path("logs", "audit.log"),
		"--audit-log-mode=batch",
		"--audit-log-format=json",
	}
}

// qpsArgs lift the client-side rate limits of the scheduler (50 requests
// a second by default; binding a pod and its event are two) and of the
// controller manager (20), as kwokctl's --disable-qps-limits does for
// benchmarks. With the defaults the scheduler bound at most 25 pods a
// second: the last of 6,000 pods created in 24 s finished 143 s after the
// creates (94 s without the limits, kwok's pace), and dispatch blocks of
// 50 pods a second backed up. Every bench
// that waited for pods to run measured that throttle, not the API server,
// kwok or Trainyard. The API server's priority and fairness still guard it.
var qpsArgs = [2]string{"--kube-api-qps=5000", "--kube-api-burst=10000"}

func (l *launcher) controllerManagerArgs() []string {
	kc := l.kubeconfig(kcmIdentity.file)
	pki := l.pki.path
	return []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + l.port("kube-controller-manager"),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + pki("sa.key"),
		"--root-ca-file=" + pki("ca.crt"),
		"--cluster-signing-cert-file=" + pki("ca.crt"),
		"--cluster-signing-key-file=" + pki("ca.key"),
		"--cluster-name=trainyard-local",
		// All default controllers (namespace, serviceaccount, serviceaccount-token,
		// endpoint, endpointslice, resourcequota, garbagecollector, nodelifecycle,
		// ...) but node IPAM: nodes get their podCIDR when Start creates them.
		"--controllers=*,-nodeipam",
		"--allocate-node-cidrs=false",
		qpsArgs[0], qpsArgs[1],
		profiling(),
	}
}

func (l *launcher) schedulerArgs() []string {
	kc := l.kubeconfig(schedulerIdentity.file)
	return []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + l.port("kube-scheduler"),
		"--leader-elect=false",
		qpsArgs[0], qpsArgs[1],
		profiling(),
	}
}

func (l *launcher) kwokArgs() []string {
	return []string{
		"--kubeconfig=" + l.kubeconfig(kwokIdentity.file),
		"--config=" + l.path("kwok.yaml"),
		"--manage-all-nodes=false",
		fmt.Sprintf("--manage-nodes-with-annotation-selector=%s=fake", KwokNodeAnnotation),
		"--node-ip=" + nodeIP,
		// Used only for nodes without a podCIDR; Start gives each node its own.
		"--cidr=10.0.0.0/16",
		"--node-lease-duration-seconds=40",
		// The kubelet-like server (logs): on loopback only, HTTPS with a
		// certificate from the cluster CA. --node-port is what the node Stages
		// write into each node's daemonEndpoints, so it must be the same port.
		"--server-address=127.0.0.1:" + l.port("kwok"),
		"--node-port=" + l.port("kwok"),
		"--tls-cert-file=" + l.pki.path(kwokServingName+".crt"),
		"--tls-private-key-file=" + l.pki.path(kwokServingName+".key"),
		// Per-pod Logs objects come from the API (the pod-running Stage
		// applies them); the ClusterLogs fallback comes from --config.
		// PortForward objects (tests make them) say where a port-forward
		// to a pod goes.
		"--enable-crds=Logs,PortForward",
	}
}

// profiling is the --profiling flag of the control plane's components:
// false unless EnvProfiling is 1.
func profiling() string {
	return fmt.Sprintf("--profiling=%t", os.Getenv(EnvProfiling) == "1")
}
