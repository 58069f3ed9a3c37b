package tenant

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzValidate: the quota and members a platform admin sends are validated
// without panicking; a tenant that validates has a quota the scheduler can
// compare in integers, and members that each get (at least) their role.
func FuzzValidate(f *testing.F) {
	for _, seed := range []*Tenant{tenantFixture(), {}, {Quota: Quota{CPU: "10E"}}, {Quota: Quota{Memory: "256GB"}},
		{Members: []Member{{Subject: "a", Group: "b", Role: RoleAdmin}}}} {
		b, err := json.Marshal(seed)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var tn Tenant
		if json.Unmarshal(body, &tn) != nil {
			return
		}
		if len(Validate(&tn)) > 0 {
			return
		}
		_, err := tn.Quota.Limits()
		require.NoError(t, err, "a valid quota has limits: %+v", tn.Quota)
		for _, m := range tn.Members {
			if m.Group != "" {
				require.GreaterOrEqual(t, RoleOf(tn.Members, "", []string{m.Group}), m.Role)
			} else {
				require.GreaterOrEqual(t, RoleOf(tn.Members, m.Subject, nil), m.Role)
			}
		}
	})
}
