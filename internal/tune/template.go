package tune

import (
	"fmt"
	"strings"
)

// Placeholders are written ${trial.NAME}. Only that prefix is ours: ${HOME}
// and $PATH in a shell command pass through untouched. $${trial.NAME} is
// the escape, and stands for the literal text ${trial.NAME}.
const (
	placeholderOpen   = "${trial."
	placeholderEscape = "$" + placeholderOpen
)

// Expand replaces every ${trial.NAME} in s with a[NAME]. An unknown name, or
// a placeholder that is not closed or does not spell an identifier, is an
// error that quotes it.
func Expand(s string, a Assignment) (string, error) {
	return expand(s, func(name string) (string, bool) {
		v, ok := a[name]
		return v, ok
	})
}

// Placeholders returns the names s refers to, in order of appearance, with
// repeats; an error for a malformed placeholder. A template is checked at
// submit time by looking each name up in the search space.
func Placeholders(s string) ([]string, error) {
	var names []string
	_, err := expand(s, func(name string) (string, bool) {
		names = append(names, name)
		return "", true
	})
	return names, err
}

func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, placeholderOpen) {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, placeholderOpen)
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			// $${trial. is the escape: drop one $ and copy the rest as text.
			b.WriteString(s[:i-1])
			b.WriteString(placeholderOpen)
			s = s[i+len(placeholderOpen):]
			continue
		}
		b.WriteString(s[:i])
		rest := s[i+len(placeholderOpen):]
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return "", fmt.Errorf("placeholder %q is not closed with }", truncate(s[i:], 40))
		}
		name := rest[:end]
		if ValidName(name) != nil {
			return "", fmt.Errorf("placeholder %q: %q is not a parameter name", s[i:i+len(placeholderOpen)+end+1], name)
		}
		v, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("placeholder ${trial.%s}: the search space has no parameter %q", name, name)
		}
		b.WriteString(v)
		s = rest[end+1:]
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
