// Package audit is the audit log's domain: what a record says and who the
// actor of a request is. It does no I/O.
//
// Every change a caller makes through the API is recorded in Postgres in
// the transaction that makes it, so that a change is never without its
// record nor a record without its change:
//
//	server interceptor:  Request{Address, ID}   where from, which request
//	api interceptor:     Actor = Principal + Request, into the context
//	store mutation:      the change, and auditInsert(ctx, tx, action, ...)
//	                     in one transaction; no Actor (a worker), no record
//
// A record names the tenant, the action, the resource and what changed
// (Details): fields before and after for a tenant update, key names for a
// secret (never values), the uid and request id for a job. Records are
// read through AuditService, never changed: the API has no method for it,
// and a trigger refuses UPDATE in the database. Retention deletes whole
// records older than the server's --audit-retention.
package audit

import (
	"context"
	"time"
)

// Action is what a record says was done.
type Action string

// The actions recorded.
const (
	TenantCreate   Action = "tenant.create"
	TenantUpdate   Action = "tenant.update"
	TenantOffboard Action = "tenant.offboard"
	SecretPut      Action = "secret.put"
	SecretDelete   Action = "secret.delete"
	JobCreate      Action = "job.create"
	JobCancel      Action = "job.cancel"
	JobDelete      Action = "job.delete"
	JobSuspend     Action = "job.suspend"
	JobResume      Action = "job.resume"
	// CohortPut and CohortDelete change a cohort's own pool: platform-wide
	// records, under no tenant.
	CohortPut    Action = "cohort.put"
	CohortDelete Action = "cohort.delete"
	// Webhooks: a record names the URL and event types, never the signing
	// secret (only that it was replaced).
	WebhookCreate    Action = "webhook.create"
	WebhookUpdate    Action = "webhook.update"
	WebhookDelete    Action = "webhook.delete"
	WebhookRedeliver Action = "webhook.redeliver"
	WebhookPing      Action = "webhook.ping"
	// Clusters (issue 45): platform-wide records, under no tenant. A
	// cluster's health (reachable or not) is no one's action and is not
	// recorded.
	ClusterCreate   Action = "cluster.create"
	ClusterUpdate   Action = "cluster.update"
	ClusterDrain    Action = "cluster.drain"
	ClusterCordon   Action = "cluster.cordon"
	ClusterUncordon Action = "cluster.uncordon"
	ClusterDelete   Action = "cluster.delete"
	// Experiments (issue 46): a record of a create names the uid, the
	// algorithm and the trial bounds. The trials' jobs are the
	// controller's, which records nothing (no caller).
	ExperimentCreate Action = "experiment.create"
	ExperimentCancel Action = "experiment.cancel"
	ExperimentDelete Action = "experiment.delete"
)

// Actions lists every action, for validating filters.
var Actions = []Action{TenantCreate, TenantUpdate, TenantOffboard, SecretPut, SecretDelete, JobCreate, JobCancel, JobDelete, JobSuspend, JobResume,
	CohortPut, CohortDelete, WebhookCreate, WebhookUpdate, WebhookDelete, WebhookRedeliver, WebhookPing,
	ClusterCreate, ClusterUpdate, ClusterDrain, ClusterCordon, ClusterUncordon, ClusterDelete,
	ExperimentCreate, ExperimentCancel, ExperimentDelete}

// Request is where a call came from: the client's address (for REST, the
// gateway's client, not the gateway) and the request's id.
type Request struct {
	Address string
	ID      string
}

// Actor is who made a change, in which request.
type Actor struct {
	Subject string
	Groups  []string
	// Issuer vouched for Subject: the OIDC issuer, or the dev tokens.
	Issuer string
	Request
}

// Record is one change.
type Record struct {
	ID       int64
	Time     time.Time
	Tenant   string // tenant id
	Actor    Actor
	Action   Action
	Resource string // resource name
	// Details say what changed; JSON-encodable, no secret values.
	Details map[string]any
}

type requestKey struct{}
type actorKey struct{}

// WithRequest returns ctx carrying r.
func WithRequest(ctx context.Context, r Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestFrom returns the Request in ctx.
func RequestFrom(ctx context.Context) (Request, bool) {
	r, ok := ctx.Value(requestKey{}).(Request)
	return r, ok
}

// WithActor returns ctx carrying a: changes made with it are recorded.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the Actor in ctx; none means the change is the
// system's own (a worker's) and is not recorded.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}
