// Package cluster runs a real Kubernetes control plane on this machine for
// Trainyard's end-to-end tests and demo, with simulated nodes whose "kubelet"
// makes pods behave like TensorFlow replicas.
//
// # Why this shape
//
// No Docker engine runs on these machines and no image registry is reachable,
// so kind cannot start. The control plane is built from the Go module proxy
// instead (build.sh) and run as plain processes: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler are the real ones, so RBAC,
// admission (PodSecurity, ResourceQuota, LimitRanger, ServiceAccount,
// NamespaceLifecycle, NodeRestriction), scheduling (resources, taints,
// selectors, affinity), garbage collection, ServiceAccount tokens and
// EndpointSlices are exactly Kubernetes'. Only the kubelet is simulated, by
// kwok: its controller, driven by the Stages in stages/*.yaml, writes node and
// pod statuses; its kubelet-like HTTPS server serves pod logs.
//
// # Building
//
// build.sh builds kube-apiserver, kube-controller-manager, kube-scheduler and
// kubectl from k8s.io/kubernetes v1.37.2, etcd from go.etcd.io/etcd/server/v3
// v3.7.3 and kwok from sigs.k8s.io/kwok v0.8.0 into
// ~/.cache/trainyard/cluster/bin/k8s-<v>-etcd-<v>-kwok-<v>-r<build rev>/ (override with
// TRAINYARD_CLUSTER_BIN or TRAINYARD_CACHE) and prints that directory. A
// binary already there is never rebuilt, so once built the script returns in
// milliseconds; Start runs it every time (EnsureBinaries, with build.sh
// embedded so any package's test binary can), which makes a missing binary a
// build, never a skip. `make cluster-build` runs it alone.
//
// The Kubernetes binaries carry the release they were built from, set with
// the -X flags of Kubernetes' own build (gitVersion v1.37.2, major 1, minor
// 37, gitTreeState archive, buildDate the release's time on the module
// proxy), so /version and `kubectl version` say v1.37.2 and tools that parse
// the server version (Kueue, Helm's kubeVersion) accept the cluster
// (TestServerAndKubectlReportTheBuiltRelease). Changing how the binaries are
// built bumps the build rev, which rebuilds an existing cache once.
//
// # Starting
//
// Start(ctx, Options) picks the cluster:
//
//   - TRAINYARD_CLUSTER_KUBECONFIG=<path>: Attach to that running cluster
//     (typically the one `make cluster-up` printed). Stop leaves it running.
//   - TRAINYARD_CLUSTER=k3s: a k3s container through testcontainers-go, for
//     laptops with Docker (k3s.go). It has one real node and no kwok: the
//     sim.trainyard.dev annotations do nothing there, the GPU and spot nodes
//     do not exist, pods really run their images. Only tests that do not
//     depend on simulated behaviour can use it.
//   - otherwise StartLocal, the local control plane below.
//
// StartLocal creates a state directory (Options.StateDir, else a temp dir)
// holding:
//
//	pki/             CA, API server serving cert, kwok's serving cert (kwok-kubelet, for 127.0.0.1),
//	                 one client cert per component (and the API server's kubelet client cert), sa.key/sa.pub
//	kubeconfig       cluster-admin (CN trainyard-admin, O system:masters), certificates inline
//	kubeconfigs/     one per component, plus the ServiceAccountKubeconfig files
//	kwok.yaml        the Stages and the ClusterLogs fallback, handed to kwok with --config
//	pod-logs/        running.log, succeeded.log, failed.log: the simulated pod logs (see "Pod logs")
//	etcd/            etcd data (--unsafe-no-fsync: the cluster is thrown away)
//	logs/<component>.log
//	home/            HOME of the components, so ~/.kwok or ~/.kube never leak in
//	state.json       ports, PIDs with their kernel start times, ready flag
//
// and starts, each on a free 127.0.0.1 port and with the state directory as
// working directory: etcd; kube-apiserver (--authorization-mode=Node,RBAC,
// client-certificate auth, --endpoint-reconciler-type=none, service-account
// issuer and keys so the TokenRequest API works, service CIDR 10.96.0.0/16,
// kubelet connections as under "Pod logs"); it installs the one CRD the
// cluster adds to the built-in API, kwok's Logs (crds/), and waits until it is
// served; then kube-controller-manager (all default controllers but node
// IPAM, per-controller service-account credentials, the SA private key and
// root CA, no leader election), kube-scheduler (no leader election) and kwok
// (managing only nodes annotated kwok.x-k8s.io/node=fake, maintaining their
// Leases, its kubelet server on the sixth port, watching Logs objects). It
// then creates the nodes and waits until /readyz says ok, every node is Ready
// and untainted by the node lifecycle controller, the default ServiceAccount
// exists in "default", the scheduler's and controller manager's /healthz
// answer, and kwok's server answers /healthz over TLS verified with the
// cluster CA. state.json records the six ports ("kwok" is the kubelet
// server's), and Stop checks every one of them is closed.
// A component that exits during start fails Start at once; the error names
// every log file and shows their last lines, and the state directory is kept.
//
// # Processes and stopping
//
// Every component runs in its own session (Setsid: its own process group,
// PGID == PID), stdout and stderr appended to its log. Each is written to
// state.json as soon as it starts, with its PID and the start time from
// /proc/<pid>/stat, so that a PID the kernel has reused for something else is
// never signalled. Stop sends SIGTERM to each process group, last started
// first, waits up to 10 s, then SIGKILL; it then checks every recorded process
// is gone and every recorded port refuses connections, and removes the state
// directory unless Options.KeepState. Without Options.Detach the components
// also carry Pdeathsig=SIGKILL: a test binary killed by `go test -timeout`
// takes its cluster with it.
//
// # localcluster and make
//
// cmd/localcluster wires the same code to a command: `up` is Up, which calls
// StartLocal with Detach and the state in ~/.cache/trainyard/cluster/run/<name>
// (RunDir, default name dev), prints the kubeconfig path as the last line of
// stdout and exits, leaving the cluster running. `up` on a healthy cluster
// reports it and prints the same path; `up` over state left by a crash (a
// recorded process gone, or a start that never became ready) stops what is
// left of it and starts afresh. `down` is Down: StopDir on exactly the
// recorded processes, then the same checks as Stop. `status` lists the
// processes and asks the API server. A lock file (<name>.lock) serialises
// concurrent runs. The Makefile wraps them as cluster-build, cluster-up,
// cluster-down and cluster-status (CLUSTER_NAME=dev).
//
//	make cluster-up                        # ... last line: ~/.cache/trainyard/cluster/run/dev/kubeconfig
//	kubectl --kubeconfig ~/.cache/trainyard/cluster/run/dev/kubeconfig get nodes
//	TRAINYARD_CLUSTER_KUBECONFIG=~/.cache/trainyard/cluster/run/dev/kubeconfig go test ./integration/...
//	make cluster-down
//
// # Nodes
//
// DefaultNodes (Options.Nodes replaces it; CPUNode, GPUNode and SpotNode build
// others). Every node has cpu 32, memory 128Gi, pods 110, ephemeral-storage
// 1Ti, labels kubernetes.io/hostname=<name>, kubernetes.io/os=linux,
// kubernetes.io/arch=amd64, type=kwok, the annotation kwok.x-k8s.io/node=fake,
// podCIDR 10.244.<i>.0/24 (i = position in the list) and InternalIP 127.0.0.1.
//
//	name              extra labels                                  taints                              extra capacity
//	kwok-cpu-0..3     trainyard.dev/pool=cpu                        -                                   -
//	kwok-gpu-0..1     trainyard.dev/pool=gpu                        -                                   nvidia.com/gpu: 8
//	                  trainyard.dev/accelerator=nvidia
//	kwok-spot-0..1    trainyard.dev/pool=spot                       trainyard.dev/spot=true:NoSchedule  -
//	                  trainyard.dev/spot=true
//
// The node address is loopback on purpose: the API server dials a node's
// address for logs, exec and port-forward, and that must never leave the
// machine. There kwok's server answers, on the port every node advertises as
// status.daemonEndpoints.kubeletEndpoint.Port (the node Stages write kwok's
// --node-port, which is its --server-address port). Pod IPs come from the
// podCIDR and are data only: nothing routes them, nothing should dial them.
//
// # The simulated kubelet: annotation contract
//
// Pods on these nodes behave as follows; a Trainyard job spec sets the
// annotations through pod_annotations. The keys are a contract shared with
// the worker and the end-to-end tests (constants Annotation* in stages.go).
//
//	annotation / label                       effect
//	(none)                                   Running at once, then after 1s exit code 0: Succeeded, reason Completed
//	sim.trainyard.dev/run-for: "3s"          run that long (any Go duration) before exiting; invalid values mean 1s
//	sim.trainyard.dev/exit-code: "137"       exit with that code: non-zero → Failed, reason Error; "0" → Succeeded;
//	                                         a non-numeric value counts as 1
//	sim.trainyard.dev/run-forever: "true"    stay Running until deleted (run-for and exit-code are ignored)
//	sim.trainyard.dev/fail-attempts: "K"     fail while label trainyard.dev/attempt (missing = "0") is < K, with
//	                                         exit-code's code, or 1 when that is absent or "0"; succeed (0) from
//	                                         attempt K on. Any K (the comparison is numeric, in the template)
//	sim.trainyard.dev/reason: "OOMKilled"    reason of a non-zero exit instead of "Error"
//	sim.trainyard.dev/message: "..."         the terminated state's message (a termination message)
//	sim.trainyard.dev/history: "true"        never run: the pod is history whose creator writes its status itself
//	                                         (the bench's seeded finished pods); no log, no status patch from kwok
//	label trainyard.dev/attempt: "N"         set by Trainyard: "0" for the first run, then 1, 2, ...
//	label trainyard.dev/component:           set by Trainyard on a job's TensorBoard pod: it stays Running, as a
//	  tensorboard                            server a kubelet keeps up would
//
// A port-forward to a pod (the API server's pods/portforward, as the
// TensorBoard proxy uses it) goes where a kwok PortForward object named
// like the pod says (KwokPortForwardResource), e.g. to a server the test
// runs on 127.0.0.1; without one it fails.
//
// The statuses are what a kubelet writes. Running: conditions
// PodReadyToStartContainers, Initialized, ContainersReady and Ready True
// (readiness gates too; the scheduler's PodScheduled is kept), hostIP(s),
// podIP(s), startTime, and per container state.running.startedAt, ready and
// started true, restartCount 0, image, imageID and a containerID
// containerd://<sha256 of pod UID and container name>. Init containers are
// reported completed (sidecars running). Terminated: state.terminated with
// exitCode, reason, message, startedAt (the running startedAt), finishedAt
// and the same containerID; ready and started false; restartCount 0;
// ContainersReady and Ready False (reason PodCompleted on success,
// ContainersNotReady with "containers with unready status: [...]" on
// failure); phase Succeeded or Failed. Times have one-second resolution, as
// in the API. Every container of a pod ends together with the same code.
//
// Deletion: a pod being deleted gracefully (a deletionTimestamp and a
// deletionGracePeriodSeconds above 0) is deleted with grace period 0, as a
// kubelet does once its containers stopped; its finalizers are left alone,
// so a pod that carries one stays until its owner removes it. Terminal and
// unscheduled pods, and any pod already at grace period 0, are removed by the
// API server directly. A pod deleted while Running stays Running until it is
// gone (its exit, if due meanwhile, is dropped). Nodes: a new node
// turns Ready (keeping the capacity it was created with) and refreshes its
// conditions every 10-20 s; kwok renews its Lease (40 s).
//
// Not simulated: restartPolicy (containers never restart in place, so
// restartCount stays 0; Trainyard recreates pods instead), probes, exec,
// attach and port-forward (none is configured in kwok: exec fails with "no
// exec found for container"), resource usage, DNS, and NetworkPolicy (stored,
// not enforced). Logs are, below.
//
// # Pods recreated under the same name
//
// Trainyard's worker restarts a replica by deleting its pod (with a UID
// precondition) and creating the next one under the same name as soon as its
// informer shows the old one gone, a few milliseconds later. This works at
// once, any number of times, whatever the old pod's state (Pending, Running,
// Succeeded, Failed): the new pod is neither deleted nor left Pending, and its
// status, exit code, container IDs and log are its own. Tests need not wait
// between a deletion and the recreation.
//
// That takes care, because a kubelet tells pods apart by UID and kwok v0.8.0
// does not. Its pod controller (pkg/kwok/controllers/pod_controller.go)
// queues each Stage's work under the key namespace/name (preprocess,
// addStageJob, delayQueueMapping), cancels it on the watch's Deleted event
// from another goroutine than the one that queues it (watchResources), so a
// job queued for a version of the pod that came just before its deletion can
// outlive it, runs several jobs at once (podPlayStageParallelism 4), and
// writes by name only: deleteResource deletes with metav1.NewDeleteOptions(0)
// and no UID precondition, patchResource patches by name. Left alone, work
// meant for a deleted pod reached its successor: the successor was deleted
// (often before it was even scheduled), or got its predecessor's status
// (Failed while Pending, the predecessor's exit code and container IDs). The
// Stages (stages/pod.yaml) close that:
//
//   - pod-delete matches only pods whose deletionGracePeriodSeconds is above
//     0. A deletion with grace period 0 (kwok's own, or any client's of a
//     terminal or unbound pod, which the API server makes 0) first writes the
//     pod once more, at grace period 0, then removes it in the same request.
//     A Stage matching that last version queued a second delete by name,
//     which ran after the pod was gone and deleted its successor. A pod at
//     grace period 0 needs no kubelet: the API server removes it as soon as
//     it has no finalizers.
//   - Every status patch carries the metadata.uid and
//     metadata.resourceVersion of the pod version its Stage matched, so the
//     API server refuses it on a successor (the UID is immutable: 422) or on
//     a pod that changed in between (a deletion that started, say: 409), and
//     kwok drops it (shouldRetry in controllers/utils.go retries only
//     connection, timeout and overload errors). Nothing is lost: the change
//     that made the patch stale produced a newer event, which kwok matches
//     against the Stages again.
//   - The Logs object (see "Pod logs"), which kwok's server finds by the
//     pod's namespace and name and so cannot be keyed by UID, is applied by
//     the pod's own pod-running before Running and by its pod-terminate
//     before it ends, each time with the pod's outcome and the pod as owner,
//     taking the object over from a predecessor whose object the garbage
//     collector has not removed yet.
//
// What is left: a predecessor's apply of its Logs object that was already
// under way when it was deleted can in principle land after the successor's
// own apply, and the garbage collector, removing the object its predecessor
// owned, can delete it just after the successor took it over. Either way the
// successor's log reads as the predecessor's outcome, or as the ClusterLogs
// fallback (the progress part), for the rest of its Running phase, and is its
// own again from pod-terminate on, before the pod is seen finished. And
// kwok's delete has no UID precondition: were anything but kwok to write a
// pod after its graceful deletion began (nothing in this cluster, nor
// Trainyard's worker, does), that version would queue a second delete, which
// could race with a recreation again. TestPodNameReusedAtOnce checks all of
// the above (see "Timings"); neither leftover has shown up in it.
//
// # Pod logs
//
// `kubectl logs` and client-go's Pods(ns).GetLogs(name, opts).Stream(ctx)
// work: the real API server (pods/log) connects to the node's kubelet, which
// is kwok's server, and kwok serves a file in CRI log format. Every simulated
// container's log is a short TensorFlow run; the outcome its annotations ask
// for decides how it ends (constants LogLine* and LogFile* in podlogs.go):
//
//	[trainyard-sim] simulated TensorFlow replica: this log is served by kwok, no container runs
//	2026-01-02 03:04:05.000000: I tensorflow/core/platform/cpu_feature_guard.cc:210] ...     (stderr)
//	2026-01-02 03:04:05.000000: I tensorflow/core/distributed_runtime/rpc/grpc_server_lib.cc:457] ...  (stderr)
//	Epoch 1/1
//	step 1 loss=2.3026 accuracy=0.1016
//	...
//	step 10 loss=0.2461 accuracy=0.9618
//
// then, by outcome (the exit code pod-terminate gives the pod: exit-code,
// fail-attempts against the attempt label, run-forever):
//
//	run-forever     nothing more (running.log, 14 lines)
//	exit code 0     saved checkpoint to /tmp/trainyard/ckpt-10
//	                training finished                                  (succeeded.log, 16 lines)
//	exit code != 0  Traceback (most recent call last):                 (stderr, as is the rest)
//	                  File "/app/train.py", line 87, in <module>
//	                    model.fit(dataset, epochs=EPOCHS, steps_per_epoch=STEPS)
//	                  File ".../keras/src/utils/traceback_utils.py", line 122, in error_handler
//	                    raise e.with_traceback(filtered_tb) from None
//	                RuntimeError: simulated failure                    (failed.log, 20 lines)
//
// Every container of a pod (init containers too) shows the same log; stdout
// and stderr lines arrive interleaved in file order. The files are written
// into <state>/pod-logs when the cluster starts; each line's CRI timestamp is
// the cluster's start time plus 100 ms per line, so timestamps=true shows
// those times and sinceSeconds/sinceTime filter by them (not by the pod's
// own start). tailLines and limitBytes work as on a kubelet.
//
// How a pod gets its log: kwok's kubelet server (--enable-crds=Logs) looks up
// a kwok.x-k8s.io/v1alpha1 Logs object named and namespaced like the pod, else
// the ClusterLogs rule in kwok.yaml (every pod: running.log). The pod-running
// Stage applies that Logs object (owner: the pod, so the garbage collector
// removes it with the pod; logsFile pod-logs/<outcome>.log, relative to kwok's
// working directory) before it marks the pod Running, and pod-terminate
// applies it again before it marks the pod finished. kwok's selectors for
// Logs/ClusterLogs match names and namespaces only, which is why the Stages,
// which can read annotations, choose the file. Consequence: a pod that will
// fail shows the complete failed log, traceback included, from the moment it
// runs, not only once it has exited; a log read within milliseconds of the
// pod turning Running may still come from the fallback (the progress part,
// which every log starts with).
//
// follow=true (kubectl logs -f) sends the log and then keeps the stream open,
// sending nothing more, until the client cancels (its context, or Ctrl-C).
// kwok v0.8.0 never ends a follow by itself, not even for a pod that has
// finished or been deleted, where a kubelet would close it: a reader that
// follows must bound its wait. The Logs follow field is ignored by kwok
// v0.8.0; only the request's follow counts. previous=true fails with
// BadRequest (there is no previous log; kwok's message is an odd "failed to
// read log file \".\""), as a kubelet fails it for a container that never
// restarted.
//
// Kubelet connection and its TLS: kube-apiserver runs with
// --kubelet-preferred-address-types=InternalIP (the default order tries the
// Hostname first, the node's name, which does not resolve), so it dials
// 127.0.0.1 at the node's kubelet port; --kubelet-certificate-authority
// pki/ca.crt, so it verifies kwok's serving certificate (pki/kwok-kubelet.crt,
// issued by the cluster CA for IP 127.0.0.1 and localhost, handed to kwok with
// --tls-cert-file/--tls-private-key-file); and
// --kubelet-client-certificate/--kubelet-client-key (CN
// kube-apiserver-kubelet-client, no groups). kwok v0.8.0 neither asks for nor
// checks client certificates and has no authorization of its own, and it also
// answers plain HTTP on the same port: anything on this machine that can
// reach 127.0.0.1:<kwok port> can read pod logs without credentials. It
// listens on loopback only (--server-address 127.0.0.1:<port>), like every
// component here.
//
// # Other helpers
//
// Cluster.Pause stops a component with SIGSTOP until its resume func sends
// SIGCONT. Cluster.Restart crashes components (SIGKILL) and starts them
// again in place: the same binary, flags, ports, data directory and log
// (state.json records each process's flags), waiting for each one's health
// check in turn; the chaos suite (integration/chaos) restarts etcd and
// kube-apiserver this way under load. Cluster.RestartExited starts again
// whatever component exited by itself, as a kubelet restarts static pods:
// kube-scheduler exits on purpose when it finds its cache inconsistent
// (which etcd and the API server crashing under it can cause), and counts
// on a supervisor this cluster otherwise lacks.
//
// Cluster.ServiceAccountKubeconfig writes a kubeconfig with a TokenRequest
// token (24 h) for a ServiceAccount, to run a process (Trainyard's worker)
// with exactly the rights RBAC gives it. Databases for tests come from
// internal/pgtest (a fresh database per test or per package, a fresh
// schema per test, DATABASE_URL's server or a testcontainers Postgres).
//
// # Timings on this machine (2 cores, 24 GiB, shared)
//
// First build, module and Go build caches cold, other engineers' builds
// running alongside (load average 6-12): 35m52s wall (user 26m37s, sys 9m05s),
// of which etcd about 2 min, kwok 6 min, kube-apiserver 14 min,
// kube-controller-manager 12 min, kube-scheduler 34 s and kubectl 79 s (the
// later kube binaries reuse the packages the first one compiled). With a warm
// Go build cache one kube binary relinks in about 6 s. build.sh once
// everything is cached: 0.02 s. The one rebuild into a new -r<build rev>
// directory (module cache warm, Go build cache cold for Kubernetes, another
// engineer's work alongside): 9m50s wall, of which kube-apiserver 5m39s,
// kube-controller-manager 70 s, kube-scheduler 8 s, kubectl 17 s.
//
// Cached start of the default cluster (8 nodes): 10.8-12.7 s to ready, the
// API server answering /readyz after 4-5.4 s (load average about 6); 15.0-15.5
// s, /readyz after 7.4-8.1 s, at load average 8. Installing and waiting for
// the Logs CRD takes 0.1-0.25 s of that. Stop (or `localcluster down`): about
// 1.4 s. `go test ./integration/cluster/` with binaries cached: 68-81 s before
// pod logs existed; with them (TestPodLogs about 7.5 s, of which 3 s prove a
// follow stays open, and a `kubectl logs` check in TestLocalclusterUpDown)
// 98-115 s of test time, 1m50-2m17 wall with compilation, at load average
// 6-8 (four clusters are started: TestMain's, TestStopLeavesNothing's, and
// two by TestLocalclusterUpDown). With TRAINYARD_CLUSTER_KUBECONFIG pointing
// at a running `make cluster-up` cluster: 54 s before pod logs at a lower
// load, 99 s with them at load average 9. TestPodNameReusedAtOnce (50 cycles,
// 200 pods under 10 names, 190 of them recreations) takes 19 s at load
// average 6 and 28-46 s at 11-15 (other engineers' clusters and builds
// alongside); with it the package took 101 s of test time (1m50 wall) at load
// average 6, 190 s (3m25 wall) at load average 13. Against the Stages as
// they were before they guarded against reused names, 49 or 50 of its 50
// cycles failed (three runs, 4-7 s each: failures end cycles early).
package cluster
