package auth

import (
	"sync"
	"time"

	"github.com/trainyard/trainyard/internal/tenant"
)

// TenantCache remembers tenant records the Authorizer read, so that a
// method whose write checks the caller's role again itself (CreateJob
// without a request id: rule.rechecked) is authorized without a database
// round trip per call (the tenant read was 17.5 % of serve's CPU per
// submit, issue 47).
//
// What keeps it honest:
//   - The write decides. CreateJob's statement inserts the job only if the
//     tenant is ACTIVE and its members, read in that statement, give the
//     caller the role (store.JobCreateParams.Caller): a member removed, or
//     a tenant offboarded, is refused by the next create whatever the
//     record here says.
//   - A refusal is never decided from memory: when the remembered record
//     refuses, the Authorizer reads the tenant again and decides on that,
//     so someone just added is not refused.
//   - Records are forgotten when their tenant changes (Forget, on the
//     trainyard_tenants notification), all of them when notifications may
//     have been lost (ForgetAll, when the listener reconnects), and after
//     a TTL in any case. A record read while a change was being announced
//     is not kept.
//
// What a remembered record can still get wrong, for as long as a
// notification takes to arrive (a millisecond) or, if one is lost, the
// TTL: CreateJob's check that a job can ever fit the tenant's whole quota
// uses the quota as remembered (a refusal is checked again on a fresh
// read; the scheduler enforces the quota in any case).
//
// Only tenants that exist are remembered: a name that is not a tenant
// costs a read each time, as before, and cannot fill the cache.
type TenantCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	records map[string]rememberedTenant
	gen     uint64 // counts Forget and ForgetAll calls
}

type rememberedTenant struct {
	t  tenant.Tenant
	at time.Time
}

// TenantCacheTTL is how long serve uses a remembered tenant record at most.
const TenantCacheTTL = time.Second

// NewTenantCache returns an empty cache whose records live for ttl at most.
func NewTenantCache(ttl time.Duration) *TenantCache {
	return &TenantCache{ttl: ttl, now: time.Now, records: map[string]rememberedTenant{}}
}

// Forget drops tenant id's record: it changed.
func (c *TenantCache) Forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.records, id)
	c.gen++
}

// ForgetAll drops every record: changes may have gone unannounced.
func (c *TenantCache) ForgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.records)
	c.gen++
}

// get returns id's record if it is fresh. The record is shared: read only.
func (c *TenantCache) get(id string) (tenant.Tenant, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.records[id]
	if !ok || c.now().Sub(r.at) >= c.ttl {
		return tenant.Tenant{}, false
	}
	return r.t, true
}

// begin is called before a read whose record put may keep.
func (c *TenantCache) begin() (gen uint64, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen, c.now()
}

// put keeps t, read after begin returned gen and at, unless something was
// forgotten meanwhile (the read may predate that change).
func (c *TenantCache) put(t tenant.Tenant, gen uint64, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		c.records[t.ID] = rememberedTenant{t: t, at: at}
	}
}
