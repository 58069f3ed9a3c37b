package tenant

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestValidateTenantID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{id: "team-a", ok: true},
		{id: "a", ok: true},
		{id: "42", ok: true}, // a DNS-1123 label may start with a digit
		{id: strings.Repeat("a", 40), ok: true},
		{id: ""},
		{id: strings.Repeat("a", 41)},
		{id: "Team-A"},
		{id: "team_a"},
		{id: "team.a"},
		{id: "-team"},
		{id: "team-"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			if err := ValidateTenantID(tc.id); tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestValidateSecretID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{id: "hf-token", ok: true},
		{id: strings.Repeat("s", 63), ok: true},
		{id: ""},
		{id: strings.Repeat("s", 64)},
		{id: "HF_TOKEN"},
		{id: "hf.token"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			if err := ValidateSecretID(tc.id); tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func tenantFixture() *Tenant {
	return &Tenant{
		ID:          "team-a",
		DisplayName: "Team A",
		Labels:      map[string]string{"org": "research"},
		Quota:       Quota{GPU: 16, CPU: "64", Memory: "256Gi", Pods: 100},
		Members: []Member{
			{Subject: "alice", Role: RoleAdmin},
			{Group: "team-a-ml", Role: RoleEditor},
			{Group: "readers", Role: RoleViewer},
		},
		PodReaderGroups: []string{"team-a-oncall"},
	}
}

func TestValidate(t *testing.T) {
	require.Empty(t, Validate(tenantFixture()))
	require.Empty(t, Validate(&Tenant{}), "everything is optional")

	for name, tc := range map[string]struct {
		mutate func(*Tenant)
		want   []string
	}{
		"display name over 200":  {func(t *Tenant) { t.DisplayName = strings.Repeat("ü", 201) }, []string{"displayName"}},
		"display name of 200":    {func(t *Tenant) { t.DisplayName = strings.Repeat("ü", 200) }, nil},
		"too many labels":        {func(t *Tenant) { t.Labels = manyTenantLabels(MaxLabels + 1) }, []string{"labels"}},
		"label key invalid":      {func(t *Tenant) { t.Labels["a b"] = "x" }, []string{"labels"}},
		"label value invalid":    {func(t *Tenant) { t.Labels["org"] = "re search" }, []string{"labels"}},
		"quota gpu negative":     {func(t *Tenant) { t.Quota.GPU = -1 }, []string{"quota.gpu"}},
		"quota pods negative":    {func(t *Tenant) { t.Quota.Pods = -1 }, []string{"quota.pods"}},
		"quota cpu not quantity": {func(t *Tenant) { t.Quota.CPU = "lots" }, []string{"quota.cpu"}},
		"quota cpu negative":     {func(t *Tenant) { t.Quota.CPU = "-1" }, []string{"quota.cpu"}},
		"quota cpu too large":    {func(t *Tenant) { t.Quota.CPU = "10E" }, []string{"quota.cpu"}},
		"quota memory invalid":   {func(t *Tenant) { t.Quota.Memory = "256GB" }, []string{"quota.memory"}},
		"quota memory too large": {func(t *Tenant) { t.Quota.Memory = "10E" }, []string{"quota.memory"}},
		"quota zero is no limit": {func(t *Tenant) { t.Quota = Quota{CPU: "0", Memory: "0"} }, nil},
		"too many members": {func(t *Tenant) {
			t.Members = nil
			for i := range MaxMembers + 1 {
				t.Members = append(t.Members, Member{Subject: fmt.Sprintf("user-%d", i), Role: RoleViewer})
			}
		}, []string{"members"}},
		"member without principal":              {func(t *Tenant) { t.Members[1].Group = "" }, []string{"members[1]"}},
		"member with both":                      {func(t *Tenant) { t.Members[1].Subject = "bob" }, []string{"members[1]"}},
		"member without role":                   {func(t *Tenant) { t.Members[2].Role = RoleNone }, []string{"members[2].role"}},
		"member role unknown":                   {func(t *Tenant) { t.Members[2].Role = RoleAdmin + 1 }, []string{"members[2].role"}},
		"member group too long":                 {func(t *Tenant) { t.Members[2].Group = strings.Repeat("g", MaxPrincipalLength+1) }, []string{"members[2].group"}},
		"member subject padded":                 {func(t *Tenant) { t.Members[0].Subject = " alice" }, []string{"members[0].subject"}},
		"member given twice":                    {func(t *Tenant) { t.Members[2].Group = "team-a-ml" }, []string{"members[2]"}},
		"same name, subject and group":          {func(t *Tenant) { t.Members[2].Group = "alice" }, nil},
		"pod reader group empty":                {func(t *Tenant) { t.PodReaderGroups = append(t.PodReaderGroups, "") }, []string{"podReaderGroups[1]"}},
		"pod reader group twice":                {func(t *Tenant) { t.PodReaderGroups = append(t.PodReaderGroups, "team-a-oncall") }, []string{"podReaderGroups[1]"}},
		"pod reader group too long":             {func(t *Tenant) { t.PodReaderGroups[0] = strings.Repeat("g", MaxPrincipalLength+1) }, []string{"podReaderGroups[0]"}},
		"pod reader group system:authenticated": {func(t *Tenant) { t.PodReaderGroups[0] = "system:authenticated" }, []string{"podReaderGroups[0]"}},
		"pod reader group system:masters":       {func(t *Tenant) { t.PodReaderGroups = append(t.PodReaderGroups, "system:masters") }, []string{"podReaderGroups[1]"}},
		"pod reader group containing system:":   {func(t *Tenant) { t.PodReaderGroups[0] = "team:system:ops" }, nil},
		"too many pod reader groups": {func(t *Tenant) {
			t.PodReaderGroups = nil
			for i := range MaxPodReaderGroups + 1 {
				t.PodReaderGroups = append(t.PodReaderGroups, fmt.Sprintf("g%d", i))
			}
		}, []string{"podReaderGroups"}},
		"clusters allowed":     {func(t *Tenant) { t.Clusters = []string{"default", "eu-west"} }, nil},
		"cluster name invalid": {func(t *Tenant) { t.Clusters = []string{"default", "EU West"} }, []string{"clusters[1]"}},
		"cluster name empty":   {func(t *Tenant) { t.Clusters = []string{""} }, []string{"clusters[0]"}},
		"cluster given twice":  {func(t *Tenant) { t.Clusters = []string{"b", "a", "b"} }, []string{"clusters[2]"}},
		"all problems reported": {func(t *Tenant) {
			t.Quota.GPU = -1
			t.Members[0].Role = RoleNone
			t.PodReaderGroups[0] = ""
		}, []string{"quota.gpu", "members[0].role", "podReaderGroups[0]"}},
	} {
		t.Run(name, func(t *testing.T) {
			tn := tenantFixture()
			tc.mutate(tn)
			got := Validate(tn)
			var fields []string
			for _, v := range got {
				fields = append(fields, v.Field)
				require.NotEmpty(t, v.Description)
			}
			require.Empty(t, cmp.Diff(tc.want, fields), "violations: %+v", got)
		})
	}
}

func TestValidateClusters(t *testing.T) {
	registered := func(name string) bool { return name == "default" || name == "b" }
	addedAll := func(string) bool { return true }
	require.Empty(t, ValidateClusters([]string{"default", "b"}, addedAll, registered))
	got := ValidateClusters([]string{"default", "mars", "b"}, addedAll, registered)
	require.Len(t, got, 1)
	require.Equal(t, "clusters[1]", got[0].Field)
	require.Contains(t, got[0].Description, `cluster "mars" is not registered`)
	// A name the tenant already had stays valid after its cluster went.
	kept := func(name string) bool { return name != "gone" }
	require.Empty(t, ValidateClusters([]string{"gone", "b"}, kept, registered))
	require.Equal(t, "clusters[1]", ValidateClusters([]string{"b", "b"}, addedAll, registered)[0].Field)
	require.True(t, (&Tenant{}).AllowedIn("any"), "no list: every cluster")
	require.True(t, (&Tenant{Clusters: []string{"b"}}).AllowedIn("b"))
	require.False(t, (&Tenant{Clusters: []string{"b"}}).AllowedIn("default"))
}

func manyTenantLabels(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}

func TestValidateSecretData(t *testing.T) {
	many := map[string]string{}
	for i := range MaxSecretKeys + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for name, tc := range map[string]struct {
		data map[string]string
		want []FieldViolation
	}{
		"valid":          {data: map[string]string{"token": "s3cr3t", "config.json": "{}", "KEY_2": "", "a-b": "x"}},
		"no keys":        {data: nil, want: []FieldViolation{{Field: "data", Description: "at least one key is required"}}},
		"too many keys":  {data: many, want: []FieldViolation{{Field: "data", Description: "has 65 keys; at most 64 are allowed"}}},
		"too large":      {data: map[string]string{"a": strings.Repeat("x", MaxSecretBytes)}, want: []FieldViolation{{Field: "data", Description: "keys and values are 524289 bytes in total; at most 524288 are allowed"}}},
		"key of 253":     {data: map[string]string{strings.Repeat("k", 253): "v"}},
		"key over 253":   {data: map[string]string{strings.Repeat("k", 254): "v"}, want: []FieldViolation{{Field: "data"}}},
		"key with slash": {data: map[string]string{"a/b": "v"}, want: []FieldViolation{{Field: "data"}}},
		"key with space": {data: map[string]string{"a b": "v"}, want: []FieldViolation{{Field: "data"}}},
		"key dot":        {data: map[string]string{".": "v"}, want: []FieldViolation{{Field: "data"}}},
		"key dot dot":    {data: map[string]string{"..": "v"}, want: []FieldViolation{{Field: "data"}}},
		"key empty":      {data: map[string]string{"": "v"}, want: []FieldViolation{{Field: "data"}}},
	} {
		t.Run(name, func(t *testing.T) {
			got := ValidateSecretData(tc.data)
			for _, v := range got {
				require.NotContains(t, v.Description, "s3cr3t", "values are never echoed")
			}
			// Descriptions from apimachinery are long; compare them only
			// where the test spells them out.
			require.Empty(t, cmp.Diff(tc.want, got, cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() == ".Description"
			}, cmp.Comparer(func(a, b string) bool { return a == "" || b == "" || a == b }))))
		})
	}
}
