// Package auth decides who a caller is and what they may do. Every gRPC
// call, and every REST call (grpc-gateway forwards the HTTP Authorization
// header as "authorization" metadata), passes through one Interceptor:
//
//	authorization: Bearer <token>
//	        │
//	        ▼
//	Authenticator ──► Principal{Subject, Email, Groups, PlatformAdmin}   (claim mapping)
//	        │
//	        ▼
//	Authorizer(method, request) ──► Access{TenantID, Tenant, Role}       (tenant role)
//	        │
//	        ▼
//	handler: PrincipalFrom(ctx), AccessFrom(ctx)
//
// This follows the split temporal uses (a claim mapper, then an authorizer,
// applied once in an interceptor): handlers cannot forget a check because
// they are never reached without one.
//
// Authentication happens before the request is decoded, so that a
// stranger's body costs nothing (issue 41, finding 1): on the public gRPC
// server Interceptor.Tap (grpc.InTapHandle) checks the token from the
// call's headers before its message is read, and on REST
// AuthenticateHTTP checks the Authorization header before the body is. The
// interceptor then finds the principal in the context and only authorizes.
//
// # Authentication
//
// OIDC verifies a JWT against one issuer with coreos/go-oidc: discovery
// from Issuer/.well-known/openid-configuration (its "issuer" must equal the
// configured one), signature against the issuer's JWKS, "iss", "aud"
// (must contain the configured audience), "exp" and "nbf". Only asymmetric
// algorithms are accepted, so "alg: none" and HS256 signed with the public
// key are refused by construction. Any failure is ErrUnauthenticated: the
// caller gets UNAUTHENTICATED with a fixed message, the reason (expired,
// wrong audience, …, never the token) goes to the log.
//
// Startup does not depend on the identity provider: if discovery fails,
// NewOIDC still returns, retries in the background with jittered
// exponential backoff, answers ErrUnavailable (gRPC UNAVAILABLE) meanwhile,
// and Ready reports the reason for /readyz.
//
// The JWKS is cached by our own keySet rather than go-oidc's RemoteKeySet,
// for two reasons: RemoteKeySet refetches the JWKS for every token whose
// signature does not verify, so forged tokens become requests to the
// identity provider (ours refetches at most once per KeyRefreshInterval,
// which still picks up key rotation); and it reports a fetch failure like
// a bad signature, where ours makes it UNAVAILABLE.
//
// A token that verified is remembered (tokencache.go, --oidc-token-cache):
// keyed by its SHA-256, bounded, used only until the token's exp and while
// the key set is the one it verified against (any JWKS fetch forgets every
// entry). Authentication is all it remembers: revoking a membership stays
// immediate (below).
//
// Claim mapping: Subject is "sub" (required); Groups come from the
// configured claim (default "groups"), a list of strings or a single
// string, a dotted path for nested claims; any other shape refuses the
// token rather than silently dropping access. PlatformAdmin means the
// configured admin group is among the groups. Email is informational and
// dropped when "email_verified" is false.
//
// # Authorization
//
// A table (rules in authorizer.go) gives every method of JobService,
// TenantService, AuditService, UsageService, WebhookService, ClusterService and ExperimentService the permission it needs; a method not in the table is
// PERMISSION_DENIED, and a test fails when a proto method has no row.
//
//	job reads (Get, List, Events, Logs, Watch*), GetTenant,
//	ListSecrets, ParseJobFile (creates nothing)    viewer
//	CreateJob, BatchCreateJobs, ImportTFJob,      editor
//	CancelJob, SuspendJob, ResumeJob, DeleteJob
//	GetExperiment, ListExperiments, ListTrials,   viewer
//	GetTrialMetrics
//	CreateExperiment, CancelExperiment,           editor
//	DeleteExperiment
//	PutSecret, DeleteSecret                        tenant admin
//	every WebhookService method                    tenant admin
//	ListAuditRecords of tenants/{tenant}           tenant admin
//	ListAuditRecords without parent (all tenants)  platform admin
//	ListTenants                                    any caller (the handler filters with Principal.RoleIn)
//	CreateTenant, UpdateTenant, DeleteTenant       platform admin
//	PutCohort, GetCohort, ListCohorts, DeleteCohort platform admin (cohorts span tenants)
//	every ClusterService method                    platform admin (clusters are the platform's)
//
// The tenant comes from the request's resource name (parent, name,
// secret.name or tenant.name: "tenants/{tenant}/…"); a malformed one is
// INVALID_ARGUMENT naming the field. The tenant is looked up through
// TenantSource; platform admins are admin in every tenant, everyone else
// has the highest role the tenant's members give their subject or groups.
//
// One exception to reading the tenant on every call, for the submit path
// notebooks feel (issue 47): CreateJob without a request id may be allowed
// from a tenant record kept in memory (tenantcache.go: forgotten when the
// tenant's notification arrives, when the listener reconnects, and after
// a second), because its statement checks again what the decision rests
// on: the tenant is ACTIVE (its row locked FOR SHARE) and its members, read
// in that statement, give the caller the role (store.JobCreateParams.Caller);
// otherwise the job is not created and the caller gets the status a fresh
// decision gives (RoleRefusal). A refusal is never decided from memory. So
// a member removed is refused by the very next CreateJob, as by every
// other call (e2e TestRevokedMemberIsRefusedAtOnce).
//
// A caller with no role in a tenant gets NOT_FOUND, exactly as for a tenant
// that does not exist, never PERMISSION_DENIED: otherwise anyone could
// probe which tenant names exist (and, per method, which jobs). A member
// may know the tenant exists, so a member whose role is too low gets
// PERMISSION_DENIED naming the role needed, which tells them whom to ask.
// Writes in a tenant that is not ACTIVE (OFFBOARDING, DELETED) are
// FAILED_PRECONDITION; reads still work for members. DeleteTenant is
// exempt from that so an interrupted offboarding can be retried.
//
// Streams: the caller is authenticated when the stream opens; the request
// is authorized when the handler receives it, which server-streaming
// handlers do first, and the stream refuses to send anything before that.
// An open stream keeps no access it has lost (stream.go): it is authorized
// again whenever its tenant's record changes (members, state: the
// trainyard_tenants notification) and every minute, and ends with the
// status a new call would get (NOT_FOUND for a removed member); it ends
// with UNAUTHENTICATED when the caller's token expires, and with
// UNAVAILABLE after StreamPolicy.MaxLifetime, to be reopened after the
// last event id received.
//
// # Dev mode
//
// DevTokens (--dev-auth FILE) accepts static tokens from a YAML (or JSON)
// file for local use without an identity provider:
//
//	tokens:
//	  - token: alice-local-token      # at least 8 characters, no spaces
//	    subject: alice                # required
//	    email: alice@example.com      # optional
//	    groups: [ml-team]             # optional
//	  - token: root-local-token
//	    subject: root
//	    platformAdmin: true           # or list the --admin-group in groups
//
// Tokens are compared in constant time. Loading the file logs DevWarning
// at ERROR. FirstOf(dev, oidc) accepts both kinds at once. Dev tokens go
// through the same Authorizer: they only replace authentication.
package auth
