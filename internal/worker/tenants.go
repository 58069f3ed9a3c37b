package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// tenantCache keeps tenant records for a short while: every reconcile
// needs the tenant's namespace, and a Postgres round trip per pass for a
// record that rarely changes is waste. A ChannelTenants notification drops
// the entry at once; the TTL bounds staleness when one is lost.
type tenantCache struct {
	store Store
	ttl   time.Duration

	mu sync.Mutex
	m  map[string]cachedTenant
}

type cachedTenant struct {
	t     tenant.Tenant
	found bool
	at    time.Time
}

func newTenantCache(s Store, ttl time.Duration) *tenantCache {
	return &tenantCache{store: s, ttl: ttl, m: map[string]cachedTenant{}}
}

// lookup returns the tenant and whether it exists. A tenant that does not
// exist comes back as a record with only its id. (A job's tenant always
// exists: jobs.tenant_id references tenants. The sweep meets objects of
// other installations' tenants.)
func (c *tenantCache) lookup(ctx context.Context, id string) (tenant.Tenant, bool, error) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.ttl {
		return e.t, e.found, nil
	}
	t, err := c.store.TenantGet(ctx, id)
	found := true
	switch {
	case errors.Is(err, store.ErrNotFound):
		t, found = tenant.Tenant{ID: id}, false
	case err != nil:
		return tenant.Tenant{}, false, err
	}
	c.mu.Lock()
	c.m[id] = cachedTenant{t: t, found: found, at: time.Now()}
	c.mu.Unlock()
	return t, found, nil
}

func (c *tenantCache) invalidate(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// namespaceOf is the namespace of a tenant's jobs: the one its record
// names, the only source (the API writes it when it creates the tenant,
// from its --namespace-prefix). A record without one was not written by
// the API: an error naming the field, retried, rather than a guess.
func namespaceOf(t tenant.Tenant) (string, error) {
	if t.Namespace == "" {
		return "", fmt.Errorf("tenant %q: its record has no namespace (tenants.namespace is empty)", t.ID)
	}
	return t.Namespace, nil
}
