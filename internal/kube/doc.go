// Package kube renders the Kubernetes objects Trainyard creates, and reads
// back the little it needs from the ones it observes. Rendering is pure: no
// client, no API calls. The worker applies what this package renders and
// feeds what its informers see through ObservePod and JobKeyOf; IsTerminal,
// Reason and Message classify the API server's answers.
//
// The exceptions are APIClient, the API server's own narrow use of
// Kubernetes (tenant Secret values, pod logs), and PodDialer, its
// port-forward to a job's TensorBoard pod (portforward.go). It classifies its errors
// itself into package kubeerr's words (ErrPodGone, ErrNamespaceNotReady,
// ErrSecretNotOurs, ErrConcurrentChange, *InvalidError), so that the API handlers never look
// at apimachinery's error types.
//
// # Object model
//
// Per tenant, in namespace <prefix><tenant> (default prefix "ty-"; the tenant
// record may name another), RenderTenant gives:
//
//	Namespace                 Pod Security labels: enforce baseline, warn and audit restricted, version latest
//	ServiceAccount            trainyard-job, automountServiceAccountToken false, bound to nothing
//	Role, RoleBinding         trainyard-pod-readers: get/list/watch pods, get pods/log, for the
//	                          tenant's PodReaderGroups (Group subjects, named exactly as the API
//	                          server's OIDC authenticator presents them); absent without groups
//	ResourceQuota             trainyard-quota: requests.nvidia.com/gpu, requests.cpu,
//	                          requests.memory, pods — the non-zero ones; absent when none is
//	LimitRange                trainyard-defaults: default container requests (cpu 100m, memory
//	                          256Mi), so a quota'd namespace accepts pods that name no
//	                          resources; no default limits unless configured
//	NetworkPolicy             trainyard-same-namespace: all pods; ingress only from the namespace;
//	                          egress to the namespace, cluster DNS (kube-system k8s-app=kube-dns,
//	                          53 UDP/TCP) and anywhere but EgressDenyCIDRs (default: the cloud
//	                          metadata endpoint)
//	RoleBinding               trainyard-api-pod-logs: the API server's ServiceAccount
//	                          (APIServiceAccount) to ClusterRole trainyard-api-pod-logs (get
//	                          pods/log, in deploy/): the API server reads logs here and only here
//	RoleBinding               trainyard-api-tensorboard: the same account to ClusterRole
//	                          trainyard-api-tensorboard (create pods/portforward, in deploy/): the
//	                          API server's TensorBoard proxy port-forwards here and only here
//	Service                   replicas (job.ReplicaService): headless, publishNotReadyAddresses,
//	                          no selector, no ports; every replica pod of every job is under it
//	RoleBinding               trainyard-tenant-secrets: the worker's ServiceAccount to ClusterRole
//	                          trainyard-tenant-secrets (get, list, create, update, delete secrets,
//	                          in deploy/): it keeps copies of the Secrets in other clusters
//	Role, RoleBinding         trainyard-secret-readers (RenderSecretReaders): get on the tenant's
//	                          secrets by name, for the API server's account; in the API server's
//	                          cluster only, and only while the tenant has secrets
//	Secret (RenderSecret)     one per tenant secret, named by its id, Opaque; in a cluster other
//	                          than the API server's, a copy (RenderSecretCopy, secretcopy.go)
//
// A nil object in TenantObjects is one the tenant must not have; the worker
// deletes it if it exists (a quota or reader groups that were removed).
//
// Per job, in its tenant's namespace:
//
//	EndpointSlice <job>            of Service replicas, written by the worker (endpoints.go says
//	                               why one Service per namespace, and slices by the worker):
//	                               each live replica's address under its hostname, one port
//	                               tf-<port> per distinct replica port; only for a job of more
//	                               than one replica (job.Spec.Distributed); deleted by the job's
//	                               cleanup
//	Pod       <job>-<type>-<i>     hostname <job>-<type>-<i>, subdomain replicas: DNS name
//	                               <job>-<type>-<i>.replicas.<ns>.svc, as TF_CONFIG lists it
//	Pod       <job>-tensorboard    optional; checkpoint claim read-only, port 6006
//	Service   <job>-tensorboard    ClusterIP on 6006
//
// Names come from job.PodName, job.ReplicaService and job.TensorBoardName. They
// are deterministic, so a create repeated after a crash is AlreadyExists,
// which the worker adopts: there is never a second pod for a replica.
//
// # Labels
//
// Every object carries app.kubernetes.io/managed-by=trainyard and
// trainyard.dev/tenant. Job objects add trainyard.dev/job (the name, for
// people and kubectl) and trainyard.dev/job-uid (for selectors: a job name
// is reused after a delete, its uid never is), and trainyard.dev/component
// (replica | tensorboard). Replica pods add trainyard.dev/replica-type,
// trainyard.dev/replica-index and trainyard.dev/attempt, the replica's
// restart count when the pod was created: it tells a recreated pod from the
// one it replaced and makes a termination attributable to one run. User pod
// labels are added but may not use these keys; user annotations are copied.
//
// # Replica pods
//
// restartPolicy is Never: Trainyard restarts a replica by recreating its pod
// (with attempt+1), so every restart is seen, counted against backoffLimit
// and kept in Postgres, and the new pod can be placed on another node. The
// one container is named "tensorflow"; its environment is TF_CONFIG (only
// for jobs of more than one replica), TRAINYARD_JOB,
// TRAINYARD_REPLICA_TYPE, TRAINYARD_REPLICA_INDEX, then the user's
// variables in order, secret ones as secretKeyRef. Secret values never pass
// through this package except into RenderSecret's and RenderSecretCopy's
// objects, and out of HomeSecrets.
//
// Resources: requests as given; memory limited to memoryLimit or else the
// request (a process that outgrows its request is the node's first victim
// anyway, and late); CPU limited only when cpuLimit is set (throttling slows
// training and protects nothing the request does not); GPUs as
// nvidia.com/gpu with limit = request, as extended resources require.
//
// # Security defaults
//
//   - No service-account token (automountServiceAccountToken false on the
//     account and the pod): training code never needs the API server, and a
//     token in every pod is a credential in every user's image.
//   - A dedicated account rather than "default", which cluster admins and
//     charts sometimes bind rights to.
//   - allowPrivilegeEscalation false, all capabilities dropped, seccomp
//     RuntimeDefault. These are what Pod Security "restricted" asks beyond
//     runAsNonRoot, which Trainyard cannot set: most TensorFlow images run
//     as root. So the namespace enforces baseline and warns/audits
//     restricted.
//   - privileged only when the spec asks, and then the namespace's baseline
//     level refuses the pod: the API server's Forbidden is terminal
//     (IsTerminal) and the job fails with the admission message. Trainyard
//     does not second-guess the cluster's policy; a platform that wants
//     privileged jobs lowers PSAEnforce.
//   - enableServiceLinks false: no per-Service env vars, which leak what else
//     runs in the namespace and grow without bound.
//   - The NetworkPolicy admits ingress only from the same namespace. As every
//     tenant namespace has one, no tenant reaches another's pods, and a
//     TensorBoard Service is reachable only from its namespace (or through
//     the API server's port-forward, which RBAC governs). Egress goes to
//     the namespace's own pods, to cluster DNS and to any address but
//     TenantOptions.EgressDenyCIDRs: by default the cloud metadata
//     endpoint (169.254.169.254, AWS's fd00:ec2::254), whose node
//     credentials a job must never get. Jobs read datasets and write
//     models to object stores and registries, often at private addresses,
//     so private ranges are not denied by default; a platform lists its
//     pod, Service and node CIDRs there to keep jobs off in-cluster
//     services (deploy/README.md, "Network").
//   - The API server holds no cluster-wide right to pod logs: the
//     trainyard-api-pod-logs RoleBinding grants it get on pods/log in
//     tenant namespaces only. The worker can write that binding without
//     RBAC's "bind" because it holds get on pods/log itself.
//
// # Errors
//
// Render functions fail only on specs job.Validate refuses (unknown
// replica, unparsable quantity, a reserved label or env var); their errors
// wrap ErrInvalidSpec and are terminal. For API errors, IsTerminal follows
// Armada: invalid and forbidden requests fail the job, everything else is
// retried — except Forbidden answers that pass: an exceeded ResourceQuota
// (Trainyard's own admission counts requests, but the LimitRange's
// defaults and pods outside Trainyard also count), a namespace being
// deleted, a job ServiceAccount not created yet, and an RBAC denial of the
// worker's own identity (not the job's fault, and transient while an API
// server starts: see IsTerminal).
package kube
