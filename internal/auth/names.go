package auth

import "strings"

// namePattern is an AIP resource name pattern: literal collection segments
// and {variable} id segments, the first of which is the tenant.
type namePattern string

const (
	tenantPattern namePattern = "tenants/{tenant}"
	jobPattern    namePattern = "tenants/{tenant}/jobs/{job}"
	secretPattern namePattern = "tenants/{tenant}/secrets/{secret}"
)

// tenantOf returns the tenant id of name if name matches pattern. The
// tenant id must be a DNS-1123 label (it becomes part of a namespace
// name); other ids only need to be non-empty here, the handlers validate
// them fully.
func tenantOf(name string, pattern namePattern) (string, bool) {
	want := strings.Split(string(pattern), "/")
	got := strings.Split(name, "/")
	if len(got) != len(want) {
		return "", false
	}
	for i, w := range want {
		if strings.HasPrefix(w, "{") {
			if got[i] == "" {
				return "", false
			}
			continue
		}
		if got[i] != w {
			return "", false
		}
	}
	if !isDNSLabel(got[1]) {
		return "", false
	}
	return got[1], true
}

// isDNSLabel reports whether s is a DNS-1123 label: at most 63 lower-case
// letters, digits and '-', starting and ending with a letter or digit.
func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}
