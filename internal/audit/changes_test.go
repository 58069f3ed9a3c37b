package audit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/tenant"
)

func TestTenantChanged(t *testing.T) {
	before := tenant.Tenant{ID: "a", State: tenant.Active, Quota: tenant.Quota{GPU: 4},
		Members: []tenant.Member{{Subject: "vera", Role: tenant.RoleViewer}, {Group: "ml", Role: tenant.RoleEditor}}}

	_, _, ok := TenantChanged(before, before)
	require.False(t, ok, "nothing changed, nothing to record")

	after := before
	after.Members = []tenant.Member{{Group: "ml", Role: tenant.RoleEditor}}
	after.Quota.GPU = 8
	a, d, ok := TenantChanged(before, after)
	require.True(t, ok)
	require.Equal(t, TenantUpdate, a)
	changed := d["changed"].(map[string]any)
	require.Len(t, changed, 2)
	require.Equal(t, map[string]any{
		"before": []map[string]string{{"subject": "vera", "role": "viewer"}, {"group": "ml", "role": "editor"}},
		"after":  []map[string]string{{"group": "ml", "role": "editor"}},
	}, changed["members"])
	require.Equal(t, map[string]any{"before": tenant.Quota{GPU: 4}, "after": tenant.Quota{GPU: 8}}, changed["quota"])

	lent := before
	lent.Sharing = tenant.Sharing{Cohort: "lab", Budget: &tenant.Budget{GPUHours: 100}}
	_, d, ok = TenantChanged(before, lent)
	require.True(t, ok, "a change of sharing alone is recorded")
	require.Equal(t, map[string]any{"before": tenant.Sharing{}, "after": lent.Sharing}, d["changed"].(map[string]any)["sharing"])

	off := before
	off.State = tenant.Offboarding
	a, _, ok = TenantChanged(before, off)
	require.True(t, ok)
	require.Equal(t, TenantOffboard, a)

	// The order of members is not a change.
	reordered := before
	reordered.Members = []tenant.Member{before.Members[1], before.Members[0]}
	_, _, ok = TenantChanged(before, reordered)
	require.False(t, ok)
}
