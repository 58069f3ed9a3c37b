// Package api implements Trainyard's gRPC services: JobService,
// TenantService, AuditService, UsageService, WebhookService and
// ClusterService (clusters.go: the Kubernetes clusters jobs run in,
// platform admins only), and AgentService (agent.go: remote clusters'
// agents' storage, gRPC only, scoped to the calling agent's cluster). The
// REST gateway (internal/server) calls
// the same handlers over in-memory gRPC, so REST and gRPC cannot drift apart.
//
// # A call
//
//	interceptors (internal/server): recovery → metrics → logging →
//	auth (authenticate, then the one Authorizer; streams stay guarded) →
//	streams per caller → errors (internal/server), which runs
//	    the text boundary: no NUL byte in any string (CheckRequest, boundary.go)
//	    the actor: who, from where, which request, for the audit log
//	    handler: parse names (resname) → validate (job.Violations) → store
//	    errors → statuses (Code, errors.go)
//
// Handlers are thin. They never decide access (the auth interceptor did,
// and left its decision in the context: auth.AccessFrom); they scope every
// store call by the tenant of the resource name; they validate with the
// domain packages (job.Validate, tenant.Validate), collect every problem
// of a request in one job.Violations, and answer INVALID_ARGUMENT with a
// google.rpc.BadRequest naming each field. Store sentinels become codes
// in one place (Code): NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION,
// ABORTED (a conflict or serialization failure: retry), UNAVAILABLE (the
// database cannot be reached: retry); anything else is INTERNAL with an id
// that is logged beside the real error, so no SQL or stack text leaves.
//
// # Names
//
// Resource names (tenants/{tenant}, …/jobs/{job}, …/secrets/{secret}) are
// parsed by internal/resname, the parser the Authorizer and tyctl use. A
// malformed name is INVALID_ARGUMENT naming the field; a well-formed one
// whose id cannot exist is NOT_FOUND, like any id that names nothing.
//
// # Kubernetes
//
// The API server touches Kubernetes only to write tenant Secret values
// (which never pass through Postgres) and to read pod logs, through Kube
// (kube.APIClient), which classifies its own errors; nothing here imports
// apimachinery's errors. Everything else reaches the cluster through
// Postgres and the worker.
//
// # Streams
//
// WatchJob and WatchJobs follow a tenant's events, woken by the
// trainyard_events notification (store.Wakeups) and polling as a fallback;
// they resume after an event id, unless event retention has deleted events
// of the tenant after it (store.EventHorizon): such a watch ends with
// OUT_OF_RANGE before it sends what it read — at its first read, or at any
// later one whose events the store found past a gap (a read stalled longer
// than the retention age) — and the client lists again (resumable).
// GetJobLogs streams from the pod while it
// exists and from the tail the worker kept once it is gone. Access to an
// open stream is re-checked by the auth interceptor, not here.
//
// # Files
//
// One file per resource and concern: jobs.go, watch.go, logs.go,
// tenants.go, secrets.go, audit.go hold the handlers (jobfile.go:
// ParseJobFile, which reads job files for every client with
// internal/jobfile and creates nothing); convert_job.go and
// convert_tenant.go the proto conversions and update masks; filter.go and
// pages.go list filters and page tokens; names.go, boundary.go, errors.go
// and deps.go what every handler shares.
//
// # Watching from a list (the contract the README points to)
//
// A list carries `watchAfterEventId`: a watch started after it gets every
// change committed since the list was read, so nothing created between the
// two is lost (a watch without `afterEventId` starts at the moment it is
// opened). It may repeat a change the list already shows; keep the newer
// `updateTime`. Streams end after `--max-stream-lifetime`: reopen them with
// the last event id received. A watch with a filter that rarely matches
// should ask for bookmarks (`&bookmarks=true`): now and then a message with
// only `bookmarkEventId`, the position the server has read to past the
// events the filter left out; reopening after it re-reads less, and stays
// within event retention, than reopening after the last match. A job's watch
// (`/v1/tenants/vision/jobs/resnet:watch?bookmarks=true`) gets them too,
// while the job is quiet and the tenant's other jobs move the position. A position after which `--event-retention`
// has deleted events of the tenant is refused, never served with a gap:
// OUT_OF_RANGE (REST 400 with `"code":11`, naming `afterEventId`; Python
// raises `trainyard.OutOfRange`), when the watch is resumed and also when
// an open stream's read finds such a gap; list again and watch from the new
// list's `watchAfterEventId`, as the console and `tyctl jobs list --watch`
// do (`tyctl jobs watch NAME` and Python's `wait` go on from the job's
// current state). Retention counts per tenant: a tenant with no new events for longer
// than the retention age keeps its position. A deleted job's events go when
// it is purged, except its `Deleted` event, which stays until retention so
// that a watch resumed from before still learns that the job went.
package api
