package auth

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// countingTenants is a TenantSource over a map that can change, counting
// reads; during, when set, runs inside each read.
type countingTenants struct {
	mu     sync.Mutex
	m      map[string]tenant.Tenant
	reads  int
	during func()
}

func (c *countingTenants) TenantGet(ctx context.Context, id string) (tenant.Tenant, error) {
	c.mu.Lock()
	c.reads++
	during := c.during
	c.mu.Unlock()
	if during != nil {
		during()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return fakeTenants(c.m).TenantGet(ctx, id)
}

func (c *countingTenants) set(t tenant.Tenant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[t.ID] = t
}

func (c *countingTenants) readCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// TestTenantCache: CreateJob without a request id, whose write checks
// the caller again, is allowed from a remembered record; every other
// method (and CreateJob with a request id) reads the tenant each time; a refusal is never decided from memory; a record is
// forgotten on Forget, ForgetAll and after the TTL, and one read while a
// change was announced is not kept; a tenant that does not exist is not
// remembered.
func TestTenantCache(t *testing.T) {
	const create = pb.JobService_CreateJob_FullMethodName
	ed := Principal{Subject: "ed"}
	src := &countingTenants{m: map[string]tenant.Tenant{
		"alpha": {ID: "alpha", State: tenant.Active, Members: []tenant.Member{{Subject: "ed", Role: tenant.RoleEditor}}},
	}}
	cache := NewTenantCache(time.Minute)
	now := time.Now()
	cache.now = func() time.Time { return now }
	a := NewAuthorizer(src, WithTenantCache(cache))
	authorize := func(p Principal, method, tenantID string) (Access, error) {
		return a.Authorize(context.Background(), p, method, requestFor(method, tenantID))
	}
	reads := func(want int, msg string) {
		t.Helper()
		require.Equal(t, want, src.readCount(), msg)
	}

	acc, err := authorize(ed, create, "alpha")
	require.NoError(t, err)
	require.False(t, acc.Remembered, "the first decision reads")
	acc, err = authorize(ed, create, "alpha")
	require.NoError(t, err)
	require.True(t, acc.Remembered)
	require.Equal(t, tenant.RoleEditor, acc.Role)
	reads(1, "the second CreateJob is decided from memory")

	_, err = authorize(ed, pb.JobService_GetJob_FullMethodName, "alpha")
	require.NoError(t, err)
	_, err = authorize(ed, pb.JobService_CancelJob_FullMethodName, "alpha")
	require.NoError(t, err)
	reads(3, "other methods read the tenant each time")
	// With a request id the handler reads the earlier job before its
	// statement checks anything: decided on a read.
	acc, err = a.Authorize(context.Background(), ed, create, &pb.CreateJobRequest{Parent: "tenants/alpha", RequestId: "r1"})
	require.NoError(t, err)
	require.False(t, acc.Remembered)
	reads(4, "a CreateJob with a request id reads the tenant")
	src.mu.Lock()
	src.reads = 3
	src.mu.Unlock()

	// ed removed: memory still allows (the create's statement refuses);
	// vic added: memory would refuse, so a fresh read decides.
	src.set(tenant.Tenant{ID: "alpha", State: tenant.Active, Members: []tenant.Member{{Subject: "vic", Role: tenant.RoleEditor}}})
	_, err = authorize(ed, create, "alpha")
	require.NoError(t, err)
	reads(3, "allowed from memory")
	acc, err = authorize(Principal{Subject: "vic"}, create, "alpha")
	require.NoError(t, err, "someone just added is not refused from memory")
	require.False(t, acc.Remembered)
	reads(4, "the refusal from memory was read again")
	_, err = authorize(ed, create, "alpha")
	require.Equal(t, codes.NotFound, status.Code(err), "the fresh read was remembered: %v", err)
	reads(5, "and a refusal from it is read again too")

	cache.Forget("alpha")
	_, err = authorize(Principal{Subject: "vic"}, create, "alpha")
	require.NoError(t, err)
	reads(6, "forgotten: read")
	cache.ForgetAll()
	_, err = authorize(Principal{Subject: "vic"}, create, "alpha")
	require.NoError(t, err)
	reads(7, "all forgotten: read")
	now = now.Add(time.Minute)
	_, err = authorize(Principal{Subject: "vic"}, create, "alpha")
	require.NoError(t, err)
	reads(8, "expired: read")

	// A change announced while the record was read: not kept.
	cache.ForgetAll()
	src.during = func() { cache.Forget("alpha") }
	_, err = authorize(Principal{Subject: "vic"}, create, "alpha")
	require.NoError(t, err)
	src.during = nil
	_, err = authorize(Principal{Subject: "vic"}, create, "alpha")
	require.NoError(t, err)
	reads(10, "the record read during a change was not kept")

	for range 2 {
		_, err = authorize(ed, create, "ghost")
		require.Equal(t, codes.NotFound, status.Code(err))
	}
	reads(12, "a tenant that does not exist is read each time")
}
