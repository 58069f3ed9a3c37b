package auth

import (
	"context"
	"slices"
	"time"

	"github.com/trainyard/trainyard/internal/tenant"
)

// Principal is the authenticated caller of a request.
type Principal struct {
	// Subject is the OIDC "sub" claim (or a dev token's subject): stable
	// and unique per issuer. Tenant memberships name it.
	Subject string
	// Email is informational only (logs, job creator display); it never
	// grants anything.
	Email string
	// Groups come from the configured groups claim; tenant memberships may
	// name them.
	Groups []string
	// PlatformAdmin is set when Groups holds the configured admin group.
	// Platform admins manage tenants and act as admin in every tenant.
	PlatformAdmin bool
	// Issuer is who vouched for the caller: the OIDC issuer URL, or
	// DevIssuer for --dev-auth tokens. The audit log records it.
	Issuer string
	// Cluster is set for a remote cluster's agent (AgentAuthenticator)
	// and only then: the one cluster the token speaks for. Such a
	// principal may call AgentService and nothing else; a principal
	// without it may not call AgentService.
	Cluster string
	// Expiry is when the credential stops being valid (the token's "exp");
	// zero when it does not expire. An open stream ends then.
	Expiry time.Time
}

// DevIssuer is the Issuer of principals authenticated by dev tokens.
const DevIssuer = "trainyard-dev-auth"

// InGroup reports whether the principal is a member of group g.
func (p Principal) InGroup(g string) bool { return g != "" && slices.Contains(p.Groups, g) }

// RoleIn returns the role the principal has in t: admin for platform
// admins, otherwise the highest role t's members list gives it. Handlers
// use it to filter lists (ListTenants); RoleNone means "not visible".
func (p Principal) RoleIn(t tenant.Tenant) tenant.Role {
	if p.PlatformAdmin {
		return tenant.RoleAdmin
	}
	return tenant.RoleOf(t.Members, p.Subject, p.Groups)
}

type principalKey struct{}

// WithPrincipal returns a copy of ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal the interceptor stored in ctx.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Access is what the Authorizer decided for a request: the tenant it
// names (zero for methods without one: ListTenants, CreateTenant) and the
// caller's role there.
type Access struct {
	// TenantID is the tenant parsed from the request's resource name.
	// Handlers scope every store call by it rather than parsing again.
	TenantID string
	// Tenant is the record the decision was made on.
	Tenant tenant.Tenant
	// Role is the caller's effective role in Tenant (admin for platform
	// admins).
	Role tenant.Role
	// Remembered: Tenant came from the Authorizer's TenantCache, so it may
	// be as old as a notification takes to arrive, and is shared (read
	// only). Only methods whose write checks the caller again are
	// authorized so.
	Remembered bool
}

type accessKey struct{}

// WithAccess returns a copy of ctx carrying a.
func WithAccess(ctx context.Context, a Access) context.Context {
	return context.WithValue(ctx, accessKey{}, a)
}

// AccessFrom returns the authorization decision the interceptor stored in
// ctx.
func AccessFrom(ctx context.Context) (Access, bool) {
	a, ok := ctx.Value(accessKey{}).(Access)
	return a, ok
}
