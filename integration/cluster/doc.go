// Package cluster runs a real Kubernetes control plane on this machine, for
// Trainyard's end-to-end tests and demo. Its nodes are simulated: a fake
// "kubelet" makes pods behave like TensorFlow replicas, as annotations on
// each pod ask.
//
// No Docker engine runs here and no image registry is reachable, so kind
// cannot start. Instead build.sh builds the real components from the Go
// module proxy, and Start runs them as plain processes on 127.0.0.1. RBAC,
// admission, scheduling, garbage collection, ServiceAccount tokens and
// EndpointSlices are therefore exactly Kubernetes'. Only the kubelet is
// simulated, by kwok.
//
//	tests, trainyard, kubectl
//	         │ kubeconfig (cluster-admin, a client certificate)
//	         ▼
//	  kube-apiserver ◄─── kube-controller-manager, kube-scheduler
//	    │     ▲    │
//	    ▼     │    │ pod logs, port-forward: dials the node's address,
//	  etcd    │    │ 127.0.0.1:<kwok port>, TLS verified with the cluster CA
//	          │    ▼
//	  kwok: the kubelet of every node
//	    · writes node and pod statuses, driven by the Stages (stages/*.yaml)
//	    · serves pod logs from files (pod-logs/)
//
// Every process runs on loopback, in its own process group, with its state
// in one directory. Start returns when every part answers and every node is
// Ready.
//
//	make cluster-up      # builds if needed, starts; last line: the kubeconfig path
//	kubectl --kubeconfig ~/.cache/trainyard/cluster/run/dev/kubeconfig get nodes
//	make cluster-down
//
// # Building
//
// build.sh builds kube-apiserver, kube-controller-manager, kube-scheduler
// and kubectl from k8s.io/kubernetes v1.37.2, etcd v3.7.3 and kwok v0.8.0.
// It writes them to ~/.cache/trainyard/cluster/bin/k8s-<v>-etcd-<v>-kwok-<v>-r<rev>/
// (TRAINYARD_CLUSTER_BIN or TRAINYARD_CACHE override it) and prints that
// directory.
//
// A binary already there is never rebuilt, so a cached run takes
// milliseconds. Start runs build.sh every time (EnsureBinaries, with the
// script embedded), so a missing binary means a build, never a skipped
// test. `make cluster-build` runs it alone. Changing how the binaries are
// built bumps the build rev, which rebuilds an existing cache once.
//
// The Kubernetes binaries carry their release, set with the -X flags of
// Kubernetes' own build. So /version and `kubectl version` say v1.37.2, and
// tools that check the server version (Kueue, Helm) accept the cluster
// (TestServerAndKubectlReportTheBuiltRelease).
//
// # Starting
//
// Start(ctx, Options) picks the cluster:
//
//   - TRAINYARD_CLUSTER_KUBECONFIG=<path>: attach to that running cluster,
//     typically `make cluster-up`'s. Stop leaves it running.
//   - TRAINYARD_CLUSTER=k3s: a k3s container through testcontainers-go, for
//     laptops with Docker (k3s.go). It has one real node and no kwok, so
//     only tests that need no simulated behaviour can use it.
//   - otherwise StartLocal, the local control plane.
//
// StartLocal creates a state directory (Options.StateDir, else a temporary
// one):
//
//	pki/             the CA, serving certificates (API server, kwok), one client certificate per component, sa.key/sa.pub
//	kubeconfig       cluster-admin (CN trainyard-admin, O system:masters), certificates inline
//	kubeconfigs/     one per component, and the ServiceAccountKubeconfig files
//	kwok.yaml        the Stages and the ClusterLogs fallback (kwok --config)
//	pod-logs/        running.log, succeeded.log, failed.log (see "Pod logs")
//	etcd/            etcd's data (--unsafe-no-fsync: the cluster is thrown away)
//	logs/            <component>.log
//	home/            the components' HOME, so ~/.kwok or ~/.kube never leak in
//	state.json       ports, PIDs with their kernel start times, flags, the ready flag
//
// It then starts each component on a free 127.0.0.1 port, in order:
//
//  1. etcd.
//  2. kube-apiserver: Node and RBAC authorization, client-certificate
//     authentication, service-account issuer and keys (so TokenRequest works),
//     service CIDR 10.96.0.0/16.
//  3. The one CRD the cluster adds, kwok's Logs (crds/), waited for until served.
//  4. kube-controller-manager: every default controller but node IPAM,
//     per-controller credentials, no leader election.
//  5. kube-scheduler: no leader election.
//  6. kwok: it manages the nodes annotated kwok.x-k8s.io/node=fake, renews
//     their Leases, serves as their kubelet, and watches Logs objects.
//
// It then creates the nodes and waits until all is ready: /readyz, every
// node Ready and untainted, the default ServiceAccount, the scheduler's and
// controller manager's /healthz, and kwok's /healthz over verified TLS.
//
// A component that exits during start fails Start at once. The error names
// every log file and shows their last lines, and the state directory is
// kept.
//
// # Processes and stopping
//
// Each component runs in its own session (Setsid), with stdout and stderr
// appended to its log. It is written to state.json as soon as it starts,
// with its PID and its start time from /proc/<pid>/stat. So a PID the
// kernel reused for something else is never signalled.
//
// Stop sends SIGTERM to each process group, last started first. It waits up
// to 10 s, then sends SIGKILL. It checks that every recorded process is gone
// and every recorded port refuses connections. It removes the state
// directory unless Options.KeepState.
//
// Without Options.Detach the components also carry Pdeathsig=SIGKILL. So a
// test binary killed by `go test -timeout` takes its cluster with it.
//
// # localcluster and make
//
// cmd/localcluster runs the same code as a command:
//
//	up       Up: StartLocal with Detach, state in ~/.cache/trainyard/cluster/run/<name>;
//	         prints the kubeconfig path last and exits, leaving the cluster running
//	down     Down: StopDir on exactly the recorded processes, then Stop's checks
//	status   lists the processes and asks the API server
//
// `up` on a healthy cluster reports it and prints the same path. `up` over
// the state of a crash stops what is left and starts afresh. A lock file
// (<name>.lock) serialises concurrent runs. The Makefile wraps these as
// cluster-build, cluster-up, cluster-down and cluster-status
// (CLUSTER_NAME=dev). TRAINYARD_CLUSTER_KUBECONFIG=<that kubeconfig> runs
// the tests against it.
//
// # Nodes
//
// DefaultNodes are eight nodes (Options.Nodes replaces them; CPUNode,
// GPUNode and SpotNode build others):
//
//	name              extra labels                                  taints                              extra capacity
//	kwok-cpu-0..3     trainyard.dev/pool=cpu                        -                                   -
//	kwok-gpu-0..1     trainyard.dev/pool=gpu                        -                                   nvidia.com/gpu: 8
//	                  trainyard.dev/accelerator=nvidia
//	kwok-spot-0..1    trainyard.dev/pool=spot                       trainyard.dev/spot=true:NoSchedule  -
//	                  trainyard.dev/spot=true
//
// Every node has cpu 32, memory 128Gi, pods 110 and ephemeral-storage 1Ti.
// Each has the usual hostname, os and arch labels, type=kwok, and the
// annotation kwok.x-k8s.io/node=fake. Its podCIDR is 10.244.<i>.0/24.
//
// Every node's address is 127.0.0.1, on purpose. The API server dials a
// node's address for logs and port-forward, and that must never leave the
// machine. kwok's server answers there, on the port every node advertises
// as its kubelet port. Pod IPs come from the podCIDR and are data only:
// nothing routes them.
//
// # The simulated kubelet
//
// A Trainyard job spec sets these annotations through pod_annotations. The
// keys are a contract with the worker and the end-to-end tests (constants
// Annotation* in stages.go).
//
//	annotation / label                       effect
//	(none)                                   Running at once, then after 1s exit code 0: Succeeded, reason Completed
//	sim.trainyard.dev/run-for: "3s"          run that long (a Go duration) before exiting; an invalid value means 1s
//	sim.trainyard.dev/exit-code: "137"       exit with that code: non-zero → Failed, reason Error; "0" → Succeeded;
//	                                         a non-numeric value counts as 1
//	sim.trainyard.dev/run-forever: "true"    stay Running until deleted (run-for and exit-code are ignored)
//	sim.trainyard.dev/fail-attempts: "K"     fail while label trainyard.dev/attempt (missing = "0") is below K, with
//	                                         exit-code's code (1 when absent or "0"); succeed from attempt K on
//	sim.trainyard.dev/reason: "OOMKilled"    the reason of a non-zero exit, instead of "Error"
//	sim.trainyard.dev/message: "..."         the terminated state's message
//	sim.trainyard.dev/history: "true"        never run: the pod's creator writes its status (the bench's finished
//	                                         pods); no log, no status from kwok
//	sim.trainyard.dev/metrics-curve: "Q"     Q a digit 0-9: a pod that succeeds logs "trainyard-metric loss=L step=N"
//	                                         for N = 1..10, L = MetricsCurveLoss(Q, N): a simulated experiment trial
//	                                         whose loss grows with Q
//	label trainyard.dev/attempt: "N"         set by Trainyard: "0" for the first run, then 1, 2, ...
//	label trainyard.dev/component:           set by Trainyard on a TensorBoard pod: it stays Running, as a
//	  tensorboard                            server would
//
// A port-forward to a pod (as the TensorBoard proxy uses it) goes where a
// kwok PortForward object named like the pod says
// (KwokPortForwardResource), for example to a server the test runs. Without
// one it fails.
//
// The statuses are what a kubelet writes:
//
//   - Running: conditions PodReadyToStartContainers, Initialized,
//     ContainersReady and Ready True, host and pod IPs, startTime, and per
//     container state.running, ready and started, restartCount 0, image and a
//     containerID (containerd://<sha256 of pod UID and container name>).
//     Init containers are reported completed.
//   - Terminated: state.terminated with exitCode, reason, message, the times
//     and the same containerID; Ready False (PodCompleted on success,
//     ContainersNotReady on failure); phase Succeeded or Failed.
//
// Times have one-second resolution, as in the API. Every container of a pod
// ends together, with the same code.
//
// A pod deleted gracefully is deleted with grace period 0, as a kubelet
// does once its containers stopped. Its finalizers are left alone. A pod
// deleted while Running stays Running until it is gone. A new node turns
// Ready and refreshes its conditions every 10-20 s; kwok renews its Lease.
//
// Not simulated: restartPolicy (containers never restart in place;
// Trainyard recreates pods instead), probes, exec, attach, resource usage,
// DNS, and NetworkPolicy (stored, not enforced).
//
// # Pods recreated under the same name
//
// Trainyard's worker restarts a replica by deleting its pod and creating
// the next one under the same name, a few milliseconds later. This works at
// once, any number of times, whatever the old pod's state. The new pod's
// status, exit code, container IDs and log are its own. Tests need not wait
// between a deletion and the recreation.
//
// That takes care, because a kubelet tells pods apart by UID and kwok
// v0.8.0 does not. Its pod controller queues work by namespace/name, runs
// several jobs at once, and deletes and patches by name only. Left alone,
// work meant for a deleted pod reached its successor: the successor was
// deleted, or got its predecessor's status. The Stages (stages/pod.yaml)
// close that:
//
//   - pod-delete matches only pods whose deletionGracePeriodSeconds is above
//     0. A deletion at grace period 0 writes the pod once more before it
//     removes it; a Stage matching that last version would delete the
//     successor by name. A pod at grace period 0 needs no kubelet anyway.
//   - Every status patch carries the uid and resourceVersion of the pod
//     version its Stage matched. The API server refuses it on a successor
//     (422) or on a pod that changed meanwhile (409), and kwok drops it. The
//     change that made it stale produced a newer event, so nothing is lost.
//   - The Logs object, found by name, is applied by the pod's own Stages
//     (before Running and before it ends), with the pod as its owner. It
//     takes over a predecessor's object the garbage collector has not
//     removed yet.
//
// What is left: a predecessor's Logs apply already under way, or the garbage
// collector, can briefly give a successor the predecessor's log (or the
// fallback) while it runs. From pod-terminate on, before the pod is seen
// finished, the log is its own again. TestPodNameReusedAtOnce checks all of
// this (200 pods under 10 names); the leftover has not shown up in it.
//
// # Pod logs
//
// `kubectl logs` and client-go's GetLogs work: the real API server connects
// to the node's kubelet, which is kwok, and kwok serves a file in CRI log
// format. Every log is a short TensorFlow run (constants LogLine* and
// LogFile* in podlogs.go):
//
//	[trainyard-sim] simulated TensorFlow replica: this log is served by kwok, no container runs
//	2026-01-02 03:04:05.000000: I tensorflow/core/platform/cpu_feature_guard.cc:210] ...     (stderr)
//	Epoch 1/1
//	step 1 loss=2.3026 accuracy=0.1016
//	...
//	step 10 loss=0.2461 accuracy=0.9618
//
// How it ends depends on the exit code the pod gets:
//
//	run-forever     nothing more                                       (running.log, 14 lines)
//	exit code 0     saved checkpoint ... / training finished           (succeeded.log, 16 lines)
//	exit code != 0  a Python traceback ending in                       (failed.log, 20 lines, stderr)
//	                RuntimeError: simulated failure
//
// Every container of a pod shows the same log. Each line's timestamp is the
// cluster's start time plus 100 ms per line, so sinceSeconds and sinceTime
// filter by those times. tailLines and limitBytes work as on a kubelet.
//
// kwok finds a pod's log through a Logs object named like the pod, else the
// ClusterLogs fallback (running.log). kwok's selectors match names only, so
// the Stages, which can read annotations, choose the file. So a pod that
// will fail shows its whole failed log from the moment it runs. A read in
// the first milliseconds of Running may still get the fallback.
//
// follow=true sends the log and then keeps the stream open until the client
// cancels. kwok v0.8.0 never ends a follow by itself, even for a finished
// pod, so a reader that follows must bound its wait. previous=true fails
// with BadRequest, as for a container that never restarted.
//
// The API server verifies kwok's serving certificate against the cluster
// CA and presents a client certificate. kwok checks neither client
// certificates nor authorization, and also answers plain HTTP. So anything
// on this machine can read pod logs from kwok's port. It listens on
// loopback only, like every component.
//
// # Other helpers
//
//   - Cluster.Pause stops a component (SIGSTOP) until its resume func.
//   - Cluster.Restart kills components and starts them again in place: same
//     binary, flags, ports, data and log. The chaos suite restarts etcd and
//     kube-apiserver this way under load.
//   - Cluster.RestartExited restarts whatever exited by itself, as a kubelet
//     restarts static pods. kube-scheduler exits on purpose when its cache
//     goes inconsistent.
//   - Cluster.ServiceAccountKubeconfig writes a kubeconfig with a
//     TokenRequest token (24 h), to run a process (Trainyard's worker) with
//     exactly its RBAC rights.
//
// Databases for tests come from internal/pgtest.
//
// # Timings on this machine (2 cores, shared)
//
//	first build, caches cold               about 36 min (kube-apiserver 14, kube-controller-manager 12)
//	a rebuild (new build rev)              about 10 min
//	build.sh, everything cached            0.02 s
//	start, 8 nodes, binaries cached        11-15 s to ready (load average 6-8)
//	stop (or localcluster down)            about 1.4 s
//	go test ./integration/cluster/         2-3.5 min wall (four clusters), TestPodNameReusedAtOnce 19-46 s
//
// # Profiling
//
// TRAINYARD_CLUSTER_PROFILING=1 (with make cluster-up, or any test that
// starts the cluster) turns on /debug/pprof in the API server, the
// controller manager and the scheduler (the admin certificate in the
// state's pki/ may read them) and an audit log of pod, Service and
// EndpointSlice writes; `go run ./integration/cluster/cmd/localcluster
// audit --since <time>` prints, per client, how many writes there were and
// how long the API server took over them.
package cluster
