// Package tenantctl is the tenant reconciler: it gives every ACTIVE tenant
// a namespace in the shape kube.RenderTenant describes, keeps it so when
// people or tools change it, and offboards tenants. It runs in every worker
// process beside the job reconciler (internal/worker), and, like it, talks
// to Postgres through the store and to Kubernetes through client-go.
//
// # Loop
//
//	Postgres NOTIFY trainyard_tenants ─┐   (a tenant row changed)
//	Postgres NOTIFY trainyard_jobs ────┤   (only for tenants being offboarded)
//	informers, label-selected on ──────┤   (Namespace, ServiceAccount, Role,
//	  managed-by=trainyard             │    RoleBinding, ResourceQuota,
//	                                   │    LimitRange, NetworkPolicy: any
//	                                   │    add, change or delete)
//	resync every minute (jittered), ───┤   (TenantListAll: the fallback for
//	  and on every listener reconnect  │    lost notifications)
//	                                   ▼
//	         rate-limited workqueue keyed by tenant id (100ms doubling to 30s),
//	         drained by Config.Workers goroutines (internal/controller's Loop)
//	                                   ▼
//	         reconcile(id): TenantGet, then by state:
//	           ACTIVE       ensure every object
//	           OFFBOARDING  cancel jobs → wait → delete namespace → wait → DELETED
//	           DELETED      delete the namespace if it exists again
//
// An informer event maps back to its tenant by the trainyard.dev/tenant
// label, and only when the object lives in that tenant's own namespace.
// Reads come from the informers' caches; a pass over a namespace in shape
// makes no API call at all (the tests check that), so the resync costs two
// Postgres queries per tenant (the tenant, its secrets' names) and nothing
// on the API server. A cluster that keeps copies of tenant Secrets is the
// exception: one list of them per pass ("Secrets in other clusters").
//
// # Ensure: create or update, not server-side apply
//
// Each object is compared with what RenderTenant gives, on the fields
// Trainyard sets: labels (ours must be present; others' stay), the
// ServiceAccount's automountServiceAccountToken, the Role's rules, the
// RoleBinding's subjects and roleRef, and the whole spec of the
// ResourceQuota, LimitRange and NetworkPolicy (semantic equality, so
// quantities compare by value and fields the API server defaults to empty
// do not count). A missing object is created; a different one is updated
// from the cached copy, so a concurrent change is a Conflict and retried.
// roleRef is immutable: a binding pointing elsewhere is deleted and
// created. An object the tenant must not have (RoleBinding without reader
// groups, ResourceQuota without limits) is deleted, with a UID
// precondition.
//
// Server-side apply would also work, but it only removes fields its own
// field manager set: a key someone adds to the quota's hard map, or a
// second ingress rule in a different shape, would stay. For security
// objects the whole spec is Trainyard's; replacing it says so.
//
// A create that answers AlreadyExists (another worker was first, or the
// object exists without our managed-by label so the informer never saw it)
// is followed by a live GET and the same compare-and-update. Stripping our
// label does not make an object someone else's inside a tenant namespace:
// the namespace is Trainyard's.
//
// # What is never touched
//
// Only the namespace <NamespacePrefix><tenant id>. A tenant row that names
// another namespace (the API server and the worker disagree on
// --namespace-prefix) is an error, counted as "misconfigured". A namespace
// of the right name is Trainyard's only when it carries
// app.kubernetes.io/managed-by=trainyard and trainyard.dev/tenant=<id>;
// otherwise it is not adopted, labelled, filled or deleted, and the tenant
// reports "not_owned" until an operator labels or removes it. Namespace
// deletes carry a UID precondition, so a namespace re-created under the
// same name in between is never the one deleted.
//
// # Offboarding
//
// DeleteTenant moves a tenant to OFFBOARDING (the store then refuses new
// jobs for it). Each pass:
//
//  1. JobListActiveByTenant; JobCancel each job that is not already
//     stopping. A QUEUED job that was never admitted ends at once; others
//     get cancel_requested and their job worker deletes their pods. While
//     any job is not final the tenant is looked at again every OffboardPoll
//     and on each trainyard_jobs notification of the tenant.
//  2. Delete the namespace (owned, by UID), then wait until a live GET says
//     it is gone: the namespace controller removes pods, Secrets and the
//     rest first — also the pods finished jobs kept for their TTL, which
//     offboarding does not wait for.
//  3. Delete the secrets' metadata rows, and set DELETED in a TenantUpdate
//     that only moves OFFBOARDING to DELETED (a second worker finding it
//     done writes nothing).
//
// A job that never stops (no job worker running) keeps the tenant
// OFFBOARDING: deleting a namespace under a live job would leave its
// worker fighting the namespace controller. A race remains between a
// worker that read the tenant ACTIVE just before it was offboarded and
// creates its namespace after another worker saw it gone; the DELETED
// state closes it: a DELETED tenant's namespace, if one appears, is
// deleted.
//
// # Clusters
//
// Each cluster's workers run this reconciler with their cluster's name
// (Config.Cluster, the worker's --cluster). A tenant whose clusters list
// (tenant.Tenant.Clusters; empty: every cluster) leaves this cluster out
// gets nothing here: no namespace is made, and one that exists (the
// cluster was taken off the list) is deleted, by UID, once no unfinished
// job of the tenant is admitted here. The API refuses to take a cluster
// off the list while such jobs exist (FAILED_PRECONDITION naming them);
// the wait here covers a job the scheduler admitted in the same instant.
// Nothing is cancelled, and the tenant's state, secrets' metadata and its
// namespaces in its other clusters are untouched. A remote agent cannot
// list a tenant's jobs: there the pods Trainyard made in the namespace
// stand for them.
//
// # Secrets in other clusters
//
// The API server writes a tenant secret's values in its own cluster only
// (the home cluster). Elsewhere the reconciler keeps copies (secrets.go),
// when Config.Secrets is set: a remote agent's agentclient, or
// StoreSecrets for a worker on Postgres given --home-kubeconfig. Each pass
// of an ACTIVE tenant lists the copies in its namespace (labelled
// trainyard.dev/secret-copy), sends the version each holds, and receives
// the tenant's secrets, with values only for those put since:
//
//	copy missing                         create
//	version older, or values changed     update (a digest annotation tells
//	  by hand                              values someone changed)
//	secret gone at home                  delete (copies only, by UID)
//	a Secret of that name, not a copy    left alone, reason not_owned
//
// The control plane answers an agent only for a tenant that is ACTIVE and
// allowed in the agent's cluster; otherwise NOT_FOUND, and nothing is
// deleted on the strength of it. The copies are read live (one list per
// pass, in such clusters only): the worker may read Secrets only in
// tenant namespaces, through the trainyard-tenant-secrets RoleBinding
// this reconciler writes there, so it has no cluster-wide informer on
// them. Values are never logged.
//
// # Several replicas
//
// Every worker process reconciles every tenant; there is no leader. Each
// step is idempotent: creates that race end in AlreadyExists and a
// compare, updates that race end in a Conflict and a retry from the
// refreshed cache, JobCancel and namespace deletes repeat harmlessly, and
// the final state change is conditional. The cost is a few duplicate API
// calls when something changes, which the cache-first compare keeps rare.
//
// # A namespace deleted by hand
//
// An ACTIVE tenant's namespace that is deleted by hand is re-created once
// the namespace controller has emptied it (while it terminates nothing can
// be created in it). In the home cluster the tenant's Secret values went
// with it and must be put again: Trainyard never had a copy. In another
// cluster the copies come back from the home cluster. The worker logs this and counts
// it as reconcile error "terminating".
//
// # Metrics
//
//	trainyard_tenants{state}                            gauge: tenants by state as last read (every worker reports all: use max)
//	trainyard_tenant_reconcile_errors_total{reason}     store | kubernetes | not_owned | misconfigured | terminating
//	trainyard_tenant_object_writes_total{kind,action}   create | update | delete; updates and deletes after the first create are drift repairs
//	trainyard_tenant_reconcile_duration_seconds         histogram of one pass
//	trainyard_tenant_offboardings_completed_total       tenants this worker moved to DELETED
//	trainyard_workqueue_*{name="tenants"}               the queue's (internal/controller)
//
// # RBAC
//
// deploy/cluster/rbac-worker.yaml lists the verbs used and why. The
// worker holds no cluster-wide right on Secrets: it binds the ClusterRole
// trainyard-tenant-secrets (get, list, create, update, delete) to itself
// in each tenant namespace, with "bind" on exactly that ClusterRole. In
// the home cluster it then gives the API server get on the tenant's
// secrets by name (trainyard-secret-readers, from the secrets' rows), so
// the API server reads only values that were put through it, not the
// webhook signing secrets beside them. One more is worth repeating: creating the pod-reader Role (get/list/watch pods, get
// pods/log) and its RoleBinding passes RBAC's escalation check only
// because the worker itself holds those four rights; it has neither
// "escalate" nor "bind", so it can never grant more than it has. The same
// goes for the trainyard-api-pod-logs RoleBinding, which lets the API
// server read pod logs in the namespace (get pods/log, a right the worker
// holds); the API server has no cluster-wide right to logs. The one
// binding it cannot write on its own rights is trainyard-api-tensorboard
// (create pods/portforward, for the API server's TensorBoard proxy): the
// worker holds "bind" on exactly that ClusterRole, not the right itself. And
// deploy/cluster/admission-policy.yaml has the API server enforce this
// package's namespace rule: the worker's writes land only in namespaces
// labelled managed-by=trainyard, it creates, relabels or deletes only
// namespaces that are a tenant's before and after, and it sets their Pod
// Security enforce level only to the configured one (so --psa-enforce
// must come from the ConfigMap the policy reads, TRAINYARD_PSA_ENFORCE).
package tenantctl
