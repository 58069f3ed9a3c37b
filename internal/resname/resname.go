// Package resname is the one parser of Trainyard's resource names (AIP-122):
//
//	tenants/{tenant}
//	tenants/{tenant}/jobs/{job}
//	tenants/{tenant}/secrets/{secret}
//	tenants/{tenant}/webhooks/{webhook}
//	tenants/{tenant}/webhooks/{webhook}/deliveries/{delivery}
//
// The Authorizer (which takes the tenant from a request's name), the API
// handlers (which take every id) and tyctl (which builds names from what
// users type) all parse with it, so that a name one of them accepts the
// others accept too.
//
// Parsing separates two kinds of failure, because callers answer them
// differently:
//
//   - a malformed name (wrong collections, wrong number of segments, an
//     empty id, a tenant id that is not a DNS-1123 label) is the caller's
//     mistake in a request field: INVALID_ARGUMENT naming the field;
//   - a well-formed name whose job or secret id is not a DNS-1123 label
//     cannot name anything that exists: a read, cancel or delete of it is
//     NOT_FOUND, as for any other id that names nothing (ErrNoSuchID).
//
// Every id Trainyard issues is a DNS-1123 label (tenant and secret ids are,
// job ids are even DNS-1035 labels), so the second rule refuses nothing
// that exists. It is also what keeps bytes Postgres cannot store (NUL) and
// text that is not UTF-8 away from the store.
package resname

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Pattern is a resource name pattern: literal collection segments, each
// followed by one {variable} id segment. The first id is the tenant's.
type Pattern struct {
	collections []string
	variables   []string
}

// The patterns of Trainyard's resources.
var (
	Tenant = mustPattern("tenants/{tenant}")
	Job    = mustPattern("tenants/{tenant}/jobs/{job}")
	Secret = mustPattern("tenants/{tenant}/secrets/{secret}")
	// Webhook deliveries are numbered: their ids are digits, which are labels too.
	Webhook         = mustPattern("tenants/{tenant}/webhooks/{webhook}")
	WebhookDelivery = mustPattern("tenants/{tenant}/webhooks/{webhook}/deliveries/{delivery}")
	Experiment      = mustPattern("tenants/{tenant}/experiments/{experiment}")
	// Trials are numbered from 0, as webhook deliveries are.
	Trial = mustPattern("tenants/{tenant}/experiments/{experiment}/trials/{trial}")
)

func mustPattern(s string) Pattern {
	parts := strings.Split(s, "/")
	if len(parts)%2 != 0 {
		panic("resname: odd pattern " + s)
	}
	var p Pattern
	for i := 0; i < len(parts); i += 2 {
		v, ok := strings.CutPrefix(parts[i+1], "{")
		v, ok2 := strings.CutSuffix(v, "}")
		if !ok || !ok2 || v == "" {
			panic("resname: bad variable in pattern " + s)
		}
		p.collections = append(p.collections, parts[i])
		p.variables = append(p.variables, v)
	}
	return p
}

// String is the pattern as written: tenants/{tenant}/jobs/{job}.
func (p Pattern) String() string {
	parts := make([]string, 0, 2*len(p.collections))
	for i, c := range p.collections {
		parts = append(parts, c, "{"+p.variables[i]+"}")
	}
	return strings.Join(parts, "/")
}

// Collection is the last collection of the pattern: "jobs" for Job.
func (p Pattern) Collection() string { return p.collections[len(p.collections)-1] }

// Kind is the last variable of the pattern: "job" for Job.
func (p Pattern) Kind() string { return p.variables[len(p.variables)-1] }

// Format builds a name from its ids, in the pattern's order. It does not
// check them; Parse of the result does.
func (p Pattern) Format(ids ...string) string {
	if len(ids) != len(p.collections) {
		panic(fmt.Sprintf("resname: %s takes %d ids, got %d", p, len(p.collections), len(ids)))
	}
	var b strings.Builder
	for i, c := range p.collections {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(c)
		b.WriteByte('/')
		b.WriteString(ids[i])
	}
	return b.String()
}

// ErrMalformed is wrapped by Parse's error when name does not have the
// pattern's shape, or its tenant id is not a DNS-1123 label.
var ErrMalformed = errors.New("malformed resource name")

// ErrNoSuchID is wrapped by Parse's error when name has the pattern's shape
// but an id after the tenant's is not a DNS-1123 label: nothing can have
// that name. Parse still returns the ids.
var ErrNoSuchID = errors.New("no resource has this id")

// Error is Parse's error: a description fit for a field violation or a
// NOT_FOUND message, and the kind (ErrMalformed or ErrNoSuchID) for
// errors.Is.
type Error struct {
	Kind        error
	Description string
}

func (e *Error) Error() string { return e.Description }
func (e *Error) Unwrap() error { return e.Kind }

// Parse returns the ids of name, in the pattern's order. Its error is an
// *Error of kind ErrMalformed or ErrNoSuchID.
func (p Pattern) Parse(name string) ([]string, error) {
	parts := strings.Split(name, "/")
	if len(parts) != 2*len(p.collections) {
		return nil, p.malformed(name)
	}
	ids := make([]string, len(p.collections))
	for i, c := range p.collections {
		if parts[2*i] != c || parts[2*i+1] == "" {
			return nil, p.malformed(name)
		}
		ids[i] = parts[2*i+1]
	}
	if !IsID(ids[0]) {
		return nil, p.malformed(name)
	}
	for i, id := range ids[1:] {
		if !IsID(id) {
			return ids, &Error{Kind: ErrNoSuchID, Description: fmt.Sprintf("%s %s does not exist", p.variables[i+1], Quote(id))}
		}
	}
	return ids, nil
}

func (p Pattern) malformed(name string) error {
	return &Error{Kind: ErrMalformed, Description: fmt.Sprintf("must look like %s with DNS-1123 labels as ids, got %s", p, Quote(name))}
}

// TenantOf returns the tenant id of name if it is a well-formed name of
// pattern p (other ids are not looked at: the handler does that).
func (p Pattern) TenantOf(name string) (string, bool) {
	ids, err := p.Parse(name)
	if errors.Is(err, ErrMalformed) {
		return "", false
	}
	return ids[0], true
}

// IsID reports whether s can be a resource id: a DNS-1123 label (at most 63
// lower-case letters, digits and '-', starting and ending with a letter or
// digit).
//
// It is validation.IsDNS1123Label's rule without its regular expression,
// which every call's authorization paid for (4 % of serve's CPU per
// CreateJob, issue 47); TestIsIDIsDNS1123Label holds the two together.
func IsID(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123LabelMaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

// Quote shortens user input echoed in an error and quotes it with Go
// escapes, so that control bytes and invalid UTF-8 show as escapes rather
// than reaching a log line or a terminal as they are.
func Quote(s string) string {
	const max = 80
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}
