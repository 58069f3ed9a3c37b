package tfjob

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Severity says whether an issue changes what runs.
type Severity int

const (
	// Unsupported: Trainyard cannot honour the field as written; the job
	// would run differently from the TFJob. An error unless the caller
	// allows warnings, then a warning.
	Unsupported Severity = iota
	// Note: the field has no counterpart in Trainyard by design, and the
	// training runs the same without it (the namespace is the tenant's,
	// status is Trainyard's, scheduling is Trainyard's). Always a warning,
	// never an error; reported so that nothing is dropped unsaid.
	Note
)

// Issue is one field of the TFJob that is not carried over as written.
type Issue struct {
	// Field is the path in the manifest, as kubectl explain writes it:
	// spec.tfReplicaSpecs.Worker.template.spec.containers[0].lifecycle.
	Field    string
	Message  string
	Severity Severity
}

// issues collects a conversion's issues.
type issues []Issue

func (is *issues) unsupported(field, format string, args ...any) {
	*is = append(*is, Issue{Field: field, Message: fmt.Sprintf(format, args...), Severity: Unsupported})
}

func (is *issues) note(field, format string, args ...any) {
	*is = append(*is, Issue{Field: field, Message: fmt.Sprintf(format, args...), Severity: Note})
}

// path builds field paths.
type path string

func (p path) f(name string) path {
	if p == "" {
		return path(name)
	}
	return p + "." + path(name)
}

func (p path) i(i int) path { return path(fmt.Sprintf("%s[%d]", p, i)) }

// leftovers reports, as Unsupported, every field still set in v: the
// caller has cleared the fields it carried over (or reported), so what
// remains is what Trainyard has no place for. This is what makes "never
// silently dropped" hold for fields nobody listed, including ones
// Kubernetes adds later. A field holding an object is reported one level
// down (securityContext.runAsUser), anything else at its own name
// (initContainers), so that the report is precise without listing every
// leaf of a whole sidecar.
func (is *issues) leftovers(at path, v any, why string) {
	b, err := json.Marshal(v)
	if err != nil {
		is.unsupported(string(at), "cannot be read back: %v", err)
		return
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return // not an object: nothing to list
	}
	for _, k := range sortedKeys(m) {
		val := m[k]
		if empty(val) {
			continue
		}
		if sub, ok := val.(map[string]any); ok {
			for _, k2 := range sortedKeys(sub) {
				if !empty(sub[k2]) {
					is.unsupported(string(at.f(k).f(k2)), "%s", why)
				}
			}
			continue
		}
		is.unsupported(string(at.f(k)), "%s", why)
	}
}

// empty is what omitempty would have left out, and an object of such
// things: encoding/json keeps zero structs ("resources": {}).
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		for _, e := range x {
			if !empty(e) {
				return false
			}
		}
		return true
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func quoteAll(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(out, ", ")
}
