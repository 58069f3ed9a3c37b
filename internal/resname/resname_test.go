package resname

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"
)

// parseCases are shared with FuzzParse as its seed corpus.
var parseCases = []struct {
	pattern Pattern
	name    string
	ids     []string
	kind    error // nil, ErrMalformed or ErrNoSuchID
}{
	{Tenant, "tenants/acme", []string{"acme"}, nil},
	{Job, "tenants/acme/jobs/mnist-1", []string{"acme", "mnist-1"}, nil},
	{Secret, "tenants/acme/secrets/s3", []string{"acme", "s3"}, nil},
	{Tenant, "", nil, ErrMalformed},
	{Tenant, "tenants/", nil, ErrMalformed},
	{Tenant, "tenants/Acme", nil, ErrMalformed},
	{Tenant, "tenants/-acme", nil, ErrMalformed},
	{Tenant, "tenants/" + strings.Repeat("a", 64), nil, ErrMalformed},
	{Tenant, "tenants/a\x00b", nil, ErrMalformed},
	{Tenant, "tenants/a\xffb", nil, ErrMalformed},
	{Tenant, "projects/acme", nil, ErrMalformed},
	{Tenant, "/tenants/acme", nil, ErrMalformed},
	{Tenant, "tenants/acme/jobs/j", nil, ErrMalformed},
	{Job, "tenants/acme", nil, ErrMalformed},
	{Job, "tenants/acme/jobs/", nil, ErrMalformed},
	{Job, "tenants/acme/secrets/j", nil, ErrMalformed},
	{Job, "tenants/acme/jobs/j/extra", nil, ErrMalformed},
	{Job, "tenants/acme/jobs/a\x00b", []string{"acme", "a\x00b"}, ErrNoSuchID},
	{Job, "tenants/acme/jobs/a\xffb", []string{"acme", "a\xffb"}, ErrNoSuchID},
	{Job, "tenants/acme/jobs/Bad_Name", []string{"acme", "Bad_Name"}, ErrNoSuchID},
	{Secret, "tenants/acme/secrets/" + strings.Repeat("s", 64), []string{"acme", strings.Repeat("s", 64)}, ErrNoSuchID},
}

func TestParse(t *testing.T) {
	for _, c := range parseCases {
		t.Run(c.pattern.String()+" "+c.name, func(t *testing.T) {
			ids, err := c.pattern.Parse(c.name)
			require.Equal(t, c.ids, ids)
			if c.kind == nil {
				require.NoError(t, err)
				require.Equal(t, c.name, c.pattern.Format(ids...))
				return
			}
			require.ErrorIs(t, err, c.kind)
			var e *Error
			require.True(t, errors.As(err, &e))
			require.NotContains(t, e.Description, "\x00", "input is echoed escaped")
		})
	}
}

func TestPatternStrings(t *testing.T) {
	require.Equal(t, "tenants/{tenant}/jobs/{job}", Job.String())
	require.Equal(t, "jobs", Job.Collection())
	require.Equal(t, "secret", Secret.Kind())
	require.Equal(t, "tenants/a/secrets/b", Secret.Format("a", "b"))
	tid, ok := Job.TenantOf("tenants/a/jobs/Not_An_ID")
	require.True(t, ok, "the tenant is known even when the job id names nothing")
	require.Equal(t, "a", tid)
	_, ok = Job.TenantOf("tenants/A/jobs/j")
	require.False(t, ok)
}

func TestQuote(t *testing.T) {
	require.Equal(t, `"a\x00b"`, Quote("a\x00b"))
	require.Equal(t, `"a\xffb"`, Quote("a\xffb"))
	long := Quote(strings.Repeat("x", 200))
	require.True(t, strings.HasSuffix(long, "…"))
	require.Less(t, len(long), 100)
}

// FuzzParse: Parse never panics, accepts only names Format rebuilds
// exactly, and its ids are then all DNS-1123 labels.
func FuzzParse(f *testing.F) {
	for _, c := range parseCases {
		f.Add(c.name)
	}
	patterns := []Pattern{Tenant, Job, Secret}
	f.Fuzz(func(t *testing.T, name string) {
		for _, p := range patterns {
			ids, err := p.Parse(name)
			switch {
			case err == nil:
				require.Equal(t, name, p.Format(ids...))
				for _, id := range ids {
					require.True(t, IsID(id), id)
				}
			case errors.Is(err, ErrNoSuchID):
				require.Equal(t, name, p.Format(ids...))
				require.True(t, IsID(ids[0]))
			default:
				require.ErrorIs(t, err, ErrMalformed)
				require.Nil(t, ids)
			}
		}
	})
}

// IsID is validation.IsDNS1123Label's rule, written out.
func TestIsIDIsDNS1123Label(t *testing.T) {
	cases := []string{"", "a", "-", "a-", "-a", "a-b", "a--b", "A", "aB", "0", "0-0", "a.b", "a_b", "é", "a\x00",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 62) + "-", "ab-12-cd"}
	for c := byte(0); c < 128; c++ {
		cases = append(cases, string([]byte{c}), "a"+string([]byte{c})+"a")
	}
	for _, s := range cases {
		require.Equal(t, len(validation.IsDNS1123Label(s)) == 0, IsID(s), "%q", s)
	}
}
